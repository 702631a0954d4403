/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "plot.h"

/* Scale and geometry, as systemd-analyze plot draws a boot: time runs to the right, one row each. */
#define PX_PER_SEC 100U
#define ROW_HEIGHT 20U
#define MARGIN_LEFT 20U
#define MARGIN_TOP 100U         /* title, legend */
#define MARGIN_BOTTOM 30U
#define LABEL_ROOM 300U         /* right of the last bar, for its label */
#define USEC_PER_SEC_U 1000000ULL

static const char *const outcome_table[_PLOT_OUTCOME_MAX] = {
        [PLOT_LOADED] = "loaded",
        [PLOT_DENIED] = "denied",
        [PLOT_FAILED] = "failed",
        [PLOT_OUTSIDE] = "loaded_outside",
};

/* Colours of the bars, and what the legend calls them. */
static const char *const outcome_color[_PLOT_OUTCOME_MAX] = {
        [PLOT_LOADED] = "#4c9f38",
        [PLOT_DENIED] = "#d0312d",
        [PLOT_FAILED] = "#f28c28",
        [PLOT_OUTSIDE] = "#8a8a8a",
};

static const char *const outcome_legend[_PLOT_OUTCOME_MAX] = {
        [PLOT_LOADED] = "loaded (asked for until live)",
        [PLOT_DENIED] = "denied",
        [PLOT_FAILED] = "failed",
        [PLOT_OUTSIDE] = "loaded outside modgate",
};

PlotOutcome plot_outcome_from_string(const char *s) {
        for (PlotOutcome o = 0; o < _PLOT_OUTCOME_MAX; o++)
                if (streq_ptr(s, outcome_table[o]))
                        return o;
        return _PLOT_OUTCOME_INVALID;
}

const char *plot_outcome_to_string(PlotOutcome o) {
        return o >= 0 && o < _PLOT_OUTCOME_MAX ? outcome_table[o] : NULL;
}

static int entry_compare(const void *a, const void *b) {
        const PlotEntry *x = a, *y = b;

        if (x->begin_usec != y->begin_usec)
                return x->begin_usec < y->begin_usec ? -1 : 1;
        return strcmp(x->module, y->module);
}

static unsigned usec_to_px(uint64_t usec) {
        return (unsigned) (usec * PX_PER_SEC / USEC_PER_SEC_U);
}

int plot_layout(PlotEntry *entries, size_t n, PlotLayout *ret) {
        _cleanup_free_ PlotBar *bars = NULL;
        size_t n_bars = MIN(n, (size_t) PLOT_ROWS_MAX);
        uint64_t end = 0;
        unsigned widest = 0;

        for (size_t i = 0; i < n; i++)
                if (!entries[i].module || entries[i].outcome < 0 || entries[i].outcome >= _PLOT_OUTCOME_MAX)
                        return -EINVAL;
        if (n > 0)
                qsort(entries, n, sizeof(PlotEntry), entry_compare);
        bars = calloc(MAX(n_bars, (size_t) 1), sizeof(PlotBar));
        if (!bars)
                return -ENOMEM;
        for (size_t i = 0; i < n_bars; i++) {
                PlotEntry *e = entries + i;

                /* A decision is never recorded before its request. */
                if (e->end_usec < e->begin_usec)
                        e->end_usec = e->begin_usec;
                bars[i] = (PlotBar) {
                        .entry = e,
                        .row = (unsigned) i,
                        .x = MARGIN_LEFT + usec_to_px(e->begin_usec),
                        .width = MAX(usec_to_px(e->end_usec) - usec_to_px(e->begin_usec), 1U),
                };
                if (e->have_stages) {
                        uint64_t at = e->begin_usec;

                        /* One after another from the request; none reaches past the decision. From
                         * the boundaries, so that the pieces' rounding adds up to the whole. */
                        for (PlotStage st = 0; st < _PLOT_STAGE_MAX; st++) {
                                uint64_t next = at + MIN(e->stage_usec[st], e->end_usec - at);

                                bars[i].stage_x[st] = MARGIN_LEFT + usec_to_px(at);
                                bars[i].stage_width[st] = usec_to_px(next) - usec_to_px(at);
                                at = next;
                        }
                }
                end = MAX(end, e->end_usec);
                widest = MAX(widest, bars[i].x + bars[i].width);
        }
        /* The axis ends on the next whole second. */
        end = (end / USEC_PER_SEC_U + 1) * USEC_PER_SEC_U;

        *ret = (PlotLayout) {
                .bars = TAKE_PTR(bars),
                .n_bars = n_bars,
                .n_left_out = n - n_bars,
                .end_usec = end,
                .width = MAX(MARGIN_LEFT + usec_to_px(end), widest) + LABEL_ROOM,
                .height = MARGIN_TOP + (unsigned) n_bars * ROW_HEIGHT + MARGIN_BOTTOM,
        };
        return 0;
}

void plot_layout_done(PlotLayout *l) {
        l->bars = mfree(l->bars);
        l->n_bars = 0;
}

void plot_entries_free(PlotEntry *entries, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(entries[i].module);
                free(entries[i].source);
        }
        free(entries);
}

static void write_escaped(FILE *f, const char *s) {
        for (; s && *s; s++)
                switch (*s) {
                case '<': fputs("&lt;", f); break;
                case '>': fputs("&gt;", f); break;
                case '&': fputs("&amp;", f); break;
                case '"': fputs("&quot;", f); break;
                default:
                        /* Control characters are not XML. */
                        fputc((unsigned char) *s < ' ' ? '?' : *s, f);
                }
}

/* A stage shades the outcome's colour: waiting lighter, the checks darker, the init as it is. */
static const char *const stage_class[_PLOT_STAGE_MAX] = {
        [PLOT_STAGE_WAIT] = "wait",
        [PLOT_STAGE_CHECK] = "check",
        [PLOT_STAGE_INIT] = "init",
};

static const char *const stage_legend[_PLOT_STAGE_MAX] = {
        [PLOT_STAGE_WAIT] = "waiting for its dependencies (lighter)",
        [PLOT_STAGE_CHECK] = "its checks (darker)",
        [PLOT_STAGE_INIT] = "its init until live",
};

static void write_legend(FILE *f) {
        unsigned x = MARGIN_LEFT;

        for (PlotOutcome o = 0; o < _PLOT_OUTCOME_MAX; o++) {
                fprintf(f, "<g class=\"legend\"><rect x=\"%u\" y=\"34\" width=\"14\" height=\"14\" "
                        "fill=\"%s\"/><text x=\"%u\" y=\"46\">%s</text></g>\n",
                        x, outcome_color[o], x + 20, outcome_legend[o]);
                x += 230;
        }
        x = MARGIN_LEFT;
        for (PlotStage st = 0; st < _PLOT_STAGE_MAX; st++) {
                fprintf(f, "<g class=\"legend-stage\"><rect x=\"%u\" y=\"54\" width=\"14\" height=\"14\" "
                        "fill=\"%s\"/><rect class=\"%s\" x=\"%u\" y=\"54\" width=\"14\" height=\"14\"/>"
                        "<text x=\"%u\" y=\"66\">%s</text></g>\n",
                        x, outcome_color[PLOT_LOADED], stage_class[st], x, x + 20, stage_legend[st]);
                x += 300;
        }
        fprintf(f, "<text class=\"note\" x=\"%u\" y=\"82\">Each bar runs from the request (who asked in "
                "brackets: udev, kernel, boot list, admin, or outside) to the decision, in its stages; a "
                "record without them (an older modgated's) is one bar.</text>\n", MARGIN_LEFT);
}

static void write_duration(FILE *f, uint64_t usec) {
        fprintf(f, "%.1f", (double) usec / 1000.0);
}

static void write_axis(const PlotLayout *l, FILE *f) {
        unsigned bottom = MARGIN_TOP + (unsigned) l->n_bars * ROW_HEIGHT;

        for (uint64_t s = 0; s * USEC_PER_SEC_U <= l->end_usec; s++) {
                unsigned x = MARGIN_LEFT + usec_to_px(s * USEC_PER_SEC_U);

                fprintf(f, "<line class=\"tick\" x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\"/>"
                        "<text class=\"axis\" x=\"%u\" y=\"%u\">%" PRIu64 "s</text>\n",
                        x, MARGIN_TOP - 4, x, bottom, x, bottom + 16, s);
        }
}

int plot_write_svg(const PlotLayout *l, const char *title, FILE *f) {
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" height=\"%u\">\n"
                "<style>text { font-family: sans-serif; font-size: 12px; } .title { font-size: 16px; } "
                ".tick { stroke: #dddddd; } .axis { fill: #555555; font-size: 10px; } "
                ".note { fill: #555555; } .wait { fill: #ffffff; fill-opacity: 0.55; } "
                ".check { fill: #000000; fill-opacity: 0.35; } .init { fill-opacity: 0; }</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                "<text class=\"title\" x=\"%u\" y=\"22\">", l->width, l->height, MARGIN_LEFT);
        write_escaped(f, title);
        fprintf(f, ": %zu module%s", l->n_bars, l->n_bars == 1 ? "" : "s");
        if (l->n_left_out > 0)
                fprintf(f, " (%zu more left out)", l->n_left_out);
        fputs("</text>\n", f);
        write_legend(f);
        write_axis(l, f);

        for (size_t i = 0; i < l->n_bars; i++) {
                const PlotBar *b = l->bars + i;
                unsigned y = MARGIN_TOP + b->row * ROW_HEIGHT;

                fprintf(f, "<g class=\"module\" data-outcome=\"%s\"><rect x=\"%u\" y=\"%u\" width=\"%u\" "
                        "height=\"%u\" fill=\"%s\"/><text x=\"%u\" y=\"%u\">",
                        plot_outcome_to_string(b->entry->outcome), b->x, y + 3, b->width, ROW_HEIGHT - 6,
                        outcome_color[b->entry->outcome], b->x + b->width + 4, y + ROW_HEIGHT - 6);
                write_escaped(f, b->entry->module);
                fputs(" (", f);
                write_escaped(f, b->entry->source ?: "outside");
                fputs(", ", f);
                write_duration(f, b->entry->end_usec - b->entry->begin_usec);
                fputs(" ms", f);
                if (b->entry->have_stages) {
                        fputs(": waited ", f);
                        write_duration(f, b->entry->stage_usec[PLOT_STAGE_WAIT]);
                        fputs(", checks ", f);
                        write_duration(f, b->entry->stage_usec[PLOT_STAGE_CHECK]);
                        fputs(", init ", f);
                        write_duration(f, b->entry->stage_usec[PLOT_STAGE_INIT]);
                }
                fputs(")</text>", f);
                /* Over the bar, which keeps the outcome's colour: each stage's shade. */
                for (PlotStage st = 0; b->entry->have_stages && st < _PLOT_STAGE_MAX; st++)
                        if (b->stage_width[st] > 0)
                                fprintf(f, "<rect class=\"%s\" x=\"%u\" y=\"%u\" width=\"%u\" "
                                        "height=\"%u\"/>", stage_class[st], b->stage_x[st], y + 3,
                                        b->stage_width[st], ROW_HEIGHT - 6);
                fputs("</g>\n", f);
        }
        fputs("</svg>\n", f);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
