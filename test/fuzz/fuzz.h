/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"

/* The libFuzzer entry point; fuzz-main.c calls the same one for the seed corpus. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant the parser promises: a violation is a bug the fuzzer reports, like a crash. */
#define fuzz_assert(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                \
                }                                                                               \
        } while (0)
