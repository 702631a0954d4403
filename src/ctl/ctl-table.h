/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

/* A table of text cells in aligned columns, as systemd's tools print them: a header line (underlined
 * with colours) unless legends are off, one space between columns, the last column not padded. */

typedef struct Table Table;

Table *table_new(size_t n_columns, const char *const *headers);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

/* Appends the next cell, row by row; NULL shows as "-". color is an ANSI sequence or NULL, used only
 * with colours on. Returns 0 or -ENOMEM. */
int table_add(Table *t, const char *text, const char *color);
int table_addf(Table *t, const char *color, const char *format, ...) _printf_(3, 4);

size_t table_rows(const Table *t);
void table_print(const Table *t, FILE *f, bool header);
