/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-output.h"
#include "ctl-table.h"

typedef struct Cell {
        char *text;
        const char *color;
} Cell;

struct Table {
        size_t n_columns;
        const char *const *headers;
        Cell *cells;
        size_t n_cells, allocated;
};

Table *table_new(size_t n_columns, const char *const *headers) {
        Table *t = calloc(1, sizeof(Table));

        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->headers = headers;
        return t;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i].text);
        free(t->cells);
        free(t);
        return NULL;
}

static int table_append(Table *t, char *text, const char *color) {
        if (!text)
                return -ENOMEM;
        if (t->n_cells == t->allocated) {
                size_t n = MAX(t->allocated * 2, (size_t) 16);
                Cell *c = reallocarray(t->cells, n, sizeof(Cell));

                if (!c) {
                        free(text);
                        return -ENOMEM;
                }
                t->cells = c;
                t->allocated = n;
        }
        t->cells[t->n_cells++] = (Cell) { .text = text, .color = color };
        return 0;
}

int table_add(Table *t, const char *text, const char *color) {
        return table_append(t, strdup(text ?: "-"), color);
}

int table_addf(Table *t, const char *color, const char *format, ...) {
        char *text = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&text, format, ap);
        va_end(ap);
        return table_append(t, r < 0 ? NULL : text, color);
}

size_t table_rows(const Table *t) {
        return t->n_cells / t->n_columns;
}

/* Columns on the terminal: UTF-8 continuation bytes take none. */
static size_t text_width(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xC0) != 0x80)
                        n++;
        return n;
}

static void print_cell(FILE *f, const char *text, const char *color, size_t width, bool last) {
        size_t w = text_width(text);

        fprintf(f, "%s%s", ansi(color), text);
        if (!last)
                fprintf(f, "%*s", (int) (width - w + 1), "");
        fputs(color && colors_enabled() ? ANSI_NORMAL : "", f);
}

void table_print(const Table *t, FILE *f, bool header) {
        _cleanup_free_ size_t *width = calloc(t->n_columns, sizeof(size_t));
        size_t rows = table_rows(t);

        if (!width)
                return;
        for (size_t c = 0; c < t->n_columns; c++) {
                width[c] = header ? text_width(t->headers[c]) : 0;
                for (size_t r = 0; r < rows; r++)
                        width[c] = MAX(width[c], text_width(t->cells[r * t->n_columns + c].text));
        }

        if (header) {
                for (size_t c = 0; c < t->n_columns; c++)
                        print_cell(f, t->headers[c], ANSI_UNDERLINE, width[c], c + 1 == t->n_columns);
                fputc('\n', f);
        }
        for (size_t r = 0; r < rows; r++) {
                for (size_t c = 0; c < t->n_columns; c++) {
                        const Cell *cell = t->cells + r * t->n_columns + c;

                        print_cell(f, cell->text, cell->color, width[c], c + 1 == t->n_columns);
                }
                fputc('\n', f);
        }
}
