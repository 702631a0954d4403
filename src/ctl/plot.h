/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <stdio.h>

/* modgatectl plot: this boot's module requests as an SVG, in the spirit of systemd-analyze plot. The
 * layout and the drawing are pure: entries in, rows and bars out, then the document; ctl-plot.c
 * reads the entries from the journal. */

/* A boot asks for a few hundred modules; more rows than this are left out, and the picture says so. */
#define PLOT_ROWS_MAX 4096U

typedef enum PlotOutcome {
        PLOT_LOADED,
        PLOT_DENIED,
        PLOT_FAILED,
        PLOT_OUTSIDE,           /* loaded by another loader; modgate saw it happen */
        _PLOT_OUTCOME_MAX,
        _PLOT_OUTCOME_INVALID = -1,
} PlotOutcome;

typedef struct PlotEntry {
        char *module;
        char *source;           /* udev, kernel, boot, admin; NULL: no request (a load outside) */
        uint64_t begin_usec;    /* CLOCK_MONOTONIC: when it was asked for */
        uint64_t end_usec;      /* when the decision was recorded */
        PlotOutcome outcome;
} PlotEntry;

typedef struct PlotBar {
        const PlotEntry *entry;
        unsigned row;           /* in the order of the requests, from 0 */
        unsigned x, width;      /* pixels, width at least 1 */
} PlotBar;

typedef struct PlotLayout {
        PlotBar *bars;
        size_t n_bars;
        size_t n_left_out;      /* beyond PLOT_ROWS_MAX */
        uint64_t end_usec;      /* the time axis runs from 0 to this, in whole seconds */
        unsigned width, height; /* of the whole picture */
} PlotLayout;

PlotOutcome plot_outcome_from_string(const char *s);
const char *plot_outcome_to_string(PlotOutcome o);

/* Sorts entries by request time (then name) and gives each a row and a bar. */
int plot_layout(PlotEntry *entries, size_t n, PlotLayout *ret);
void plot_layout_done(PlotLayout *l);
int plot_write_svg(const PlotLayout *l, const char *title, FILE *f);
void plot_entries_free(PlotEntry *entries, size_t n);
