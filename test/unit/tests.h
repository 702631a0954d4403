/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails the test with the expression and location; a failed check never lets the test pass. */
#define check(expr)                                                                     \
        do {                                                                            \
                if (!(expr)) {                                                          \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                        \
                }                                                                       \
        } while (0)

#define check_streq(a, b)                                                               \
        do {                                                                            \
                const char *_a_ = (a), *_b_ = (b);                                      \
                if (!_a_ || !_b_ || strcmp(_a_, _b_) != 0) {                            \
                        fprintf(stderr, "%s:%d: \"%s\" != \"%s\" (%s, %s)\n", __FILE__, __LINE__, \
                                _a_ ?: "(null)", _b_ ?: "(null)", #a, #b);              \
                        abort();                                                        \
                }                                                                       \
        } while (0)

/* TAP output: a check that fails aborts the program, which meson reports as a failure. */
static unsigned tests_run = 0;

#define TEST(name) static void test_##name(void)
#define RUN(name)                                               \
        do {                                                    \
                test_##name();                                  \
                printf("ok %u - %s\n", ++tests_run, #name);     \
                fflush(stdout);                                 \
        } while (0)

static inline int tests_done(void) {
        printf("1..%u\n", tests_run);
        return 0;
}
