/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose);

/* Reads f to its end. The contents may hold NUL bytes; *ret gets one more, after the last byte, so
 * that text can be used as a string. Returns 0, -EFBIG when there are more than max bytes (nothing
 * beyond max + 1 is read), -ENOMEM, or the read error. */
int read_full_stream(FILE *f, size_t max, char **ret, size_t *ret_size);
