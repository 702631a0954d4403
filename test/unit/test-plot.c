/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "plot.h"
#include "tests.h"

/* A fixed history, out of order as the journal may interleave it: udev's coldplug, a kernel request,
 * the boot list, an administrator's denied load, a load outside modgate. Some records have their
 * stages (wait, checks, init), the others (an older modgated's, a load outside) do not. */
static PlotEntry *history(size_t *ret_n) {
        static const struct {
                const char *module, *source;
                uint64_t begin, end;
                PlotOutcome outcome;
                bool have_stages;
                uint64_t stages[_PLOT_STAGE_MAX];
        } h[] = {
                { "e1000", "udev", 2500000, 2560000, PLOT_LOADED, true, { 30000, 10000, 20000 } },
                { "virtio_rng", "udev", 1200000, 1200000, PLOT_LOADED },
                { "squashfs", "kernel", 4000000, 4010000, PLOT_FAILED, true, { 0, 2000, 8000 } },
                { "tun", "boot", 1200000, 1350000, PLOT_LOADED },
                { "evil<&\">", "admin", 5000000, 5001000, PLOT_DENIED, true, { 0, 1000, 0 } },
                { "dummy", NULL, 6100000, 6100000, PLOT_OUTSIDE },
        };
        PlotEntry *e = calloc(ELEMENTSOF(h), sizeof(PlotEntry));

        check(e);
        for (size_t i = 0; i < ELEMENTSOF(h); i++) {
                e[i] = (PlotEntry) {
                        .module = strdup(h[i].module),
                        .source = h[i].source ? strdup(h[i].source) : NULL,
                        .begin_usec = h[i].begin,
                        .end_usec = h[i].end,
                        .outcome = h[i].outcome,
                        .have_stages = h[i].have_stages,
                };
                memcpy(e[i].stage_usec, h[i].stages, sizeof(h[i].stages));
                check(e[i].module);
        }
        *ret_n = ELEMENTSOF(h);
        return e;
}

TEST(outcomes) {
        check(plot_outcome_from_string("loaded") == PLOT_LOADED);
        check(plot_outcome_from_string("loaded_outside") == PLOT_OUTSIDE);
        check(plot_outcome_from_string("denied") == PLOT_DENIED);
        check(plot_outcome_from_string("failed") == PLOT_FAILED);
        check(plot_outcome_from_string("not_found") == _PLOT_OUTCOME_INVALID);
        check(plot_outcome_from_string(NULL) == _PLOT_OUTCOME_INVALID);
}

TEST(layout) {
        PlotLayout l = {};
        size_t n;
        PlotEntry *e = history(&n);

        check(plot_layout(e, n, &l) == 0);
        check(l.n_bars == 6 && l.n_left_out == 0);
        /* One row each, in the order of the requests; a tie goes by name. */
        check_streq(l.bars[0].entry->module, "tun");
        check_streq(l.bars[1].entry->module, "virtio_rng");
        check_streq(l.bars[2].entry->module, "e1000");
        check_streq(l.bars[3].entry->module, "squashfs");
        check_streq(l.bars[4].entry->module, "evil<&\">");
        check_streq(l.bars[5].entry->module, "dummy");
        for (size_t i = 0; i < l.n_bars; i++)
                check(l.bars[i].row == i);
        /* 100 px a second, after a 20 px margin: tun from 1.2 s for 150 ms. */
        check(l.bars[0].x == 20 + 120 && l.bars[0].width == 15);
        check(l.bars[2].x == 20 + 250 && l.bars[2].width == 6);
        /* A decision at once is still a bar one pixel wide. */
        check(l.bars[1].width == 1 && l.bars[5].width == 1);
        /* e1000's stages one after another from its request: 30 ms waiting, 10 ms of checks, 20 ms of
         * init, together its whole bar. */
        check(l.bars[2].stage_x[PLOT_STAGE_WAIT] == 20 + 250 && l.bars[2].stage_width[PLOT_STAGE_WAIT] == 3);
        check(l.bars[2].stage_x[PLOT_STAGE_CHECK] == 20 + 253);
        check(l.bars[2].stage_width[PLOT_STAGE_CHECK] == 1);
        check(l.bars[2].stage_x[PLOT_STAGE_INIT] == 20 + 254 && l.bars[2].stage_width[PLOT_STAGE_INIT] == 2);
        /* squashfs: no wait, checks under a pixel, its init the last 8 ms (from 400.2 px to 401). */
        check(l.bars[3].stage_width[PLOT_STAGE_WAIT] == 0 && l.bars[3].stage_width[PLOT_STAGE_CHECK] == 0);
        check(l.bars[3].stage_x[PLOT_STAGE_INIT] == 20 + 400 && l.bars[3].stage_width[PLOT_STAGE_INIT] == 1);
        /* Without stages, no pieces: one bar. */
        for (PlotStage st = 0; st < _PLOT_STAGE_MAX; st++)
                check(l.bars[0].stage_width[st] == 0 && l.bars[5].stage_width[st] == 0);
        /* The axis ends on the whole second after the last decision. */
        check(l.end_usec == 7000000);
        check(l.height == 100 + 6 * 20 + 30);
        check(l.width >= 20 + 700);
        plot_layout_done(&l);
        plot_entries_free(e, n);
}

TEST(layout_bad) {
        PlotLayout l = {};
        PlotEntry e = { .module = (char *) "x", .outcome = _PLOT_OUTCOME_INVALID };

        check(plot_layout(&e, 1, &l) == -EINVAL);
        check(plot_layout(NULL, 0, &l) == 0 && l.n_bars == 0 && l.end_usec == 1000000);
        plot_layout_done(&l);
}

TEST(layout_stages_capped) {
        PlotLayout l = {};
        PlotEntry e = {
                .module = (char *) "x",
                .begin_usec = 1000000,
                .end_usec = 1500000,
                .outcome = PLOT_LOADED,
                .have_stages = true,
                .stage_usec = { 400000, 300000, UINT64_MAX },
        };

        /* Stages longer than the bar (a record that says more than it took) end at its decision. */
        check(plot_layout(&e, 1, &l) == 0);
        check(l.bars[0].width == 50);
        check(l.bars[0].stage_x[PLOT_STAGE_WAIT] == 20 + 100);
        check(l.bars[0].stage_width[PLOT_STAGE_WAIT] == 40);
        check(l.bars[0].stage_x[PLOT_STAGE_CHECK] == 20 + 140);
        check(l.bars[0].stage_width[PLOT_STAGE_CHECK] == 10);
        check(l.bars[0].stage_x[PLOT_STAGE_INIT] == 20 + 150 && l.bars[0].stage_width[PLOT_STAGE_INIT] == 0);
        plot_layout_done(&l);
}

TEST(svg) {
        _cleanup_free_ char *buf = NULL;
        PlotLayout l = {};
        size_t n, size = 0;
        PlotEntry *e = history(&n);
        FILE *f = open_memstream(&buf, &size);

        check(f);
        check(plot_layout(e, n, &l) == 0);
        check(plot_write_svg(&l, "a <boot>", f) == 0);
        fclose(f);
        check(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
        check(strstr(buf, "a &lt;boot&gt;: 6 modules"));
        check(strstr(buf, ">evil&lt;&amp;&quot;&gt; (admin, 1.0 ms: waited 0.0, checks 1.0, init 0.0)"
                     "</text>"));
        check(strstr(buf, ">dummy (outside, 0.0 ms)</text>"));
        check(strstr(buf, ">tun (boot, 150.0 ms)</text></g>"));
        check(strstr(buf, ">e1000 (udev, 60.0 ms: waited 30.0, checks 10.0, init 20.0)</text>"
                     "<rect class=\"wait\" x=\"270\" y=\"143\" width=\"3\" height=\"14\"/>"
                     "<rect class=\"check\" x=\"273\" y=\"143\" width=\"1\" height=\"14\"/>"
                     "<rect class=\"init\" x=\"274\" y=\"143\" width=\"2\" height=\"14\"/></g>"));
        check(strstr(buf, "waiting for its dependencies (lighter)</text>"));
        check(strstr(buf, "is one bar."));
        check(strstr(buf, ">6s</text>") && !strstr(buf, ">8s</text>"));
        check(strstr(buf, "data-outcome=\"failed\""));
        check(strstr(buf, "loaded outside modgate</text>"));
        if (getenv("TEST_PLOT_SVG")) {
                FILE *out = fopen(getenv("TEST_PLOT_SVG"), "we");

                check(out);
                fputs(buf, out);
                check(fclose(out) == 0);
        }
        plot_layout_done(&l);
        plot_entries_free(e, n);
}

int main(void) {
        RUN(outcomes);
        RUN(layout);
        RUN(layout_bad);
        RUN(layout_stages_capped);
        RUN(svg);
        return tests_done();
}
