/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
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

/* The stages of a request, one after another from when it was asked for, as its record says. */
typedef enum PlotStage {
        PLOT_STAGE_WAIT,        /* for the modules it needs and a free worker */
        PLOT_STAGE_CHECK,       /* open, origin, hash, name */
        PLOT_STAGE_INIT,        /* finit_module() until it returned */
        _PLOT_STAGE_MAX,
} PlotStage;

typedef struct PlotEntry {
        char *module;
        char *source;           /* udev, kernel, boot, admin; NULL: no request (a load outside) */
        uint64_t begin_usec;    /* CLOCK_MONOTONIC: when it was asked for */
        uint64_t end_usec;      /* when the decision was recorded */
        PlotOutcome outcome;
        bool have_stages;       /* the record has the stages' fields; without, the bar is one piece */
        uint64_t stage_usec[_PLOT_STAGE_MAX];
} PlotEntry;

typedef struct PlotBar {
        const PlotEntry *entry;
        unsigned row;           /* in the order of the requests, from 0 */
        unsigned x, width;      /* pixels, width at least 1 */
        /* With the entry's stages: each one's piece of the bar, in pixels; a width may be 0. */
        unsigned stage_x[_PLOT_STAGE_MAX], stage_width[_PLOT_STAGE_MAX];
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
