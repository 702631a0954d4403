/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Checks that a depmod index (modules.*.bin, kmod's trie format) is whole: its header, and every
 * node reachable from the root within the file, each child written after its parent (as depmod
 * writes them, which also rules out loops), every string ended. libkmod checks only the header and
 * reads a corrupt or truncated trie as "no match": a modalias would find no driver, silently.
 * Returns 0, or -EBADMSG with what is wrong in detail. */
int index_check_buffer(const uint8_t *p, size_t size, char *detail, size_t detail_size);

/* index_check_buffer() on each index libkmod reads in dir (one that is not there is libkmod's to
 * judge). Logs what is wrong, naming the file; returns 0, -EBADMSG, or the error of reading. */
int index_check_dir(const char *dir);
