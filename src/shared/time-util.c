/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <time.h>

#include "parse-util.h"
#include "time-util.h"

static uint64_t clock_usec(clockid_t clock) {
        struct timespec ts;

        /* Cannot fail for these clocks with a valid pointer. */
        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000U;
}

uint64_t now_usec(void) {
        return clock_usec(CLOCK_MONOTONIC);
}

uint64_t realtime_usec(void) {
        return clock_usec(CLOCK_REALTIME);
}
