/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose);

/* Reads f to its end. The contents may hold NUL bytes; *ret gets one more, after the last byte, so
 * that text can be used as a string. Returns 0, -EFBIG when there are more than max bytes (nothing
 * beyond max + 1 is read), -ENOMEM, or the read error. */
int read_full_stream(FILE *f, size_t max, char **ret, size_t *ret_size);

/* read_full_stream() of the file at path (any kind that read(2) reads: /proc/cmdline has no size).
 * Returns what it does, or the error of opening path. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_size);

/* Reads what the regular file (a memfd, say) open at fd holds, from its start, without moving its
 * offset; NUL-terminated as read_full_stream() does. Returns 0, -EBADFD when it is not a regular file,
 * -EFBIG when it has more than max bytes, -ENOMEM, or the read error. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);

/* Reads a small file (procfs, sysfs) at path, relative to dirfd (AT_FDCWD for the current
 * directory), into buf, NUL-terminated; what does not fit in size - 1 bytes is cut. 0 or -errno. */
int read_small_file_at(int dirfd, const char *path, char *buf, size_t size);

/* Reads the first line of a small file (sysfs, procfs) at path, relative to dirfd (AT_FDCWD for the
 * current directory), into buf without its newline; what does not fit in size - 1 bytes is cut.
 * Returns 0 or -errno. */
int read_line_at(int dirfd, const char *path, char *buf, size_t size);
