/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

#include "ctl-error.h"
#include "ctl.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "plot.h"

/* plot: this boot's module decisions from the journal, as an SVG on standard output. Only records
 * that modgated wrote count: journald sets _COMM and _UID itself, so another process cannot add a row
 * by logging MODGATE_* fields of its own. */

static int field(sd_journal *j, const char *name, char **ret) {
        const void *data;
        size_t len, prefix = strlen(name) + 1;
        char *s;
        int r;

        r = sd_journal_get_data(j, name, &data, &len);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        if (len < prefix)
                return -EBADMSG;
        s = strndup((const char *) data + prefix, len - prefix);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 1;
}

/* The stages' fields, each whole and their sum no later than the record; false when any is missing or
 * bad (a record of an older modgated), and the bar is then one piece. */
static int read_stages(sd_journal *j, uint64_t mono, uint64_t stage_usec[static _PLOT_STAGE_MAX]) {
        static const char *const names[_PLOT_STAGE_MAX] = {
                [PLOT_STAGE_WAIT] = "MODGATE_WAIT_USEC",
                [PLOT_STAGE_CHECK] = "MODGATE_CHECK_USEC",
                [PLOT_STAGE_INIT] = "MODGATE_INIT_USEC",
        };
        uint64_t sum = 0;
        int r;

        for (PlotStage st = 0; st < _PLOT_STAGE_MAX; st++) {
                _cleanup_free_ char *v = NULL;

                r = field(j, names[st], &v);
                if (r <= 0)
                        return r;
                if (parse_uint64(v, stage_usec + st) < 0 || stage_usec[st] > mono - sum)
                        return 0;
                sum += stage_usec[st];
        }
        return 1;
}

static int read_entry(sd_journal *j, PlotEntry *ret) {
        _cleanup_free_ char *module = NULL, *source = NULL, *outcome = NULL, *duration = NULL;
        uint64_t mono, usec = 0, stage_usec[_PLOT_STAGE_MAX] = {};
        sd_id128_t boot;
        PlotOutcome o;
        int r, stages;

        if (field(j, "MODGATE_MODULE", &module) <= 0 || field(j, "MODGATE_OUTCOME", &outcome) <= 0)
                return 0;
        o = plot_outcome_from_string(outcome);
        if (o < 0)
                return 0;
        r = sd_journal_get_monotonic_usec(j, &mono, &boot);
        if (r < 0)
                return r;
        r = field(j, "MODGATE_SOURCE", &source);
        if (r < 0)
                return r;
        r = field(j, "MODGATE_DURATION_USEC", &duration);
        if (r < 0)
                return r;
        if (duration && (parse_uint64(duration, &usec) < 0 || usec > mono))
                usec = 0;
        stages = read_stages(j, mono, stage_usec);
        if (stages < 0)
                return stages;
        /* With its stages, the request was made when they began: the duration's checks made ahead
         * happened while it waited. */
        if (stages > 0)
                usec = stage_usec[PLOT_STAGE_WAIT] + stage_usec[PLOT_STAGE_CHECK] +
                        stage_usec[PLOT_STAGE_INIT];
        *ret = (PlotEntry) {
                .module = TAKE_PTR(module),
                .source = o == PLOT_OUTSIDE ? NULL : TAKE_PTR(source),
                .begin_usec = mono - usec,
                .end_usec = mono,
                .outcome = o,
                .have_stages = stages > 0,
        };
        memcpy(ret->stage_usec, stage_usec, sizeof(stage_usec));
        return 1;
}

static int read_boot(PlotEntry **ret, size_t *ret_n) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        PlotEntry *entries = NULL;
        size_t n = 0, allocated = 0;
        char match[sizeof("_BOOT_ID=") + SD_ID128_STRING_MAX];
        sd_id128_t boot;
        int r;

        r = sd_id128_get_boot(&boot);
        if (r < 0)
                return r;
        r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
        if (r < 0)
                return r;
        snprintf(match, sizeof(match), "_BOOT_ID=" SD_ID128_FORMAT_STR, SD_ID128_FORMAT_VAL(boot));
        if ((r = sd_journal_add_match(j, match, 0)) < 0 ||
            (r = sd_journal_add_match(j, "_COMM=modgated", 0)) < 0 ||
            (r = sd_journal_add_match(j, "_UID=0", 0)) < 0)
                return r;

        SD_JOURNAL_FOREACH(j) {
                PlotEntry e;

                r = read_entry(j, &e);
                if (r < 0)
                        goto fail;
                if (r == 0)
                        continue;
                if (n == allocated) {
                        PlotEntry *p;

                        /* Past what the picture shows, keep counting without keeping. */
                        if (n >= PLOT_ROWS_MAX * 4) {
                                free(e.module);
                                free(e.source);
                                continue;
                        }
                        allocated = MAX(allocated * 2, (size_t) 64);
                        p = reallocarray(entries, allocated, sizeof(PlotEntry));
                        if (!p) {
                                free(e.module);
                                free(e.source);
                                r = -ENOMEM;
                                goto fail;
                        }
                        entries = p;
                }
                entries[n++] = e;
        }
        *ret = entries;
        *ret_n = n;
        return 0;

fail:
        plot_entries_free(entries, n);
        return r;
}

int verb_plot(char **args, size_t n) {
        PlotLayout layout = {};
        PlotEntry *entries = NULL;
        size_t n_entries = 0;
        int r;

        r = read_boot(&entries, &n_entries);
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE,
                                log_error_errno(r, "Failed to read this boot's journal: %m"));
        r = plot_layout(entries, n_entries, &layout);
        if (r >= 0)
                r = plot_write_svg(&layout, "modgate: module requests of this boot", stdout);
        plot_layout_done(&layout);
        plot_entries_free(entries, n_entries);
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_error_errno(r, "Failed to write the plot: %m"));
        return 0;
}
