/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* NULL-terminated arrays of strings. A NULL strv is the empty list. */

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);

/* Appends s and takes ownership of it, also on failure. Returns 0 or -ENOMEM. */
int strv_consume(char ***l, char *s);

/* Appends a copy of s. Returns 0 or -ENOMEM. */
int strv_extend(char ***l, const char *s);

/* A copy of the first n strings of l. Returns NULL on allocation failure. */
char **strv_copy_n(char *const *l, size_t n);
