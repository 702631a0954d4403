/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* NULL-terminated arrays of strings. */

void strv_free(char **l);
char **strv_copy_n(char *const *l, size_t n);
size_t strv_length(char *const *l);
/* Appends a copy of s. Returns 0 or -ENOMEM (l is unchanged then). */
int strv_extend(char ***l, const char *s);
