/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "stats.h"
#include "tests.h"

TEST(empty) {
        Latency l = {};
        LatencySummary s;

        check(latency_summarize(&l, &s) == -ENODATA);
}

TEST(nearest_rank) {
        Latency l = {};
        LatencySummary s;

        /* 1..100 in reverse: the p-th percentile of 1..100 is p itself. */
        for (uint64_t i = 100; i >= 1; i--)
                latency_add(&l, i);
        check(latency_summarize(&l, &s) == 0);
        check(s.samples == 100);
        check(s.p50 == 50 && s.p90 == 90 && s.p99 == 99 && s.max == 100);
}

TEST(one_sample) {
        Latency l = {};
        LatencySummary s;

        latency_add(&l, 7);
        check(latency_summarize(&l, &s) == 0);
        check(s.samples == 1 && s.p50 == 7 && s.p99 == 7 && s.max == 7);
}

TEST(only_the_latest_are_kept) {
        Latency l = {};
        LatencySummary s;

        /* A slow start, then LATENCY_SAMPLES fast calls: the slow ones are forgotten. */
        for (unsigned i = 0; i < 10; i++)
                latency_add(&l, 1000000);
        for (unsigned i = 0; i < LATENCY_SAMPLES; i++)
                latency_add(&l, 10 + i % 10);
        check(latency_summarize(&l, &s) == 0);
        check(s.samples == LATENCY_SAMPLES);
        check(s.max == 19 && s.p50 >= 10 && s.p50 <= 19);
}

int main(void) {
        RUN(empty);
        RUN(nearest_rank);
        RUN(one_sample);
        RUN(only_the_latest_are_kept);
        return tests_done();
}
