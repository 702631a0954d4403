/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

void latency_add(Latency *l, uint64_t usec) {
        assert(l);

        l->usec[l->next] = usec;
        l->next = (l->next + 1) % LATENCY_SAMPLES;
        if (l->n < LATENCY_SAMPLES)
                l->n++;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The smallest sample that at least pct percent of the samples do not exceed. */
static uint64_t nearest_rank(const uint64_t *sorted, size_t n, unsigned pct) {
        size_t rank = (n * pct + 99) / 100;

        return sorted[rank > 0 ? rank - 1 : 0];
}

int latency_summarize(const Latency *l, LatencySummary *ret) {
        uint64_t sorted[LATENCY_SAMPLES];

        assert(l);
        assert(ret);

        if (l->n == 0)
                return -ENODATA;
        memcpy(sorted, l->usec, l->n * sizeof(uint64_t));
        qsort(sorted, l->n, sizeof(uint64_t), cmp_u64);
        *ret = (LatencySummary) {
                .samples = l->n,
                .p50 = nearest_rank(sorted, l->n, 50),
                .p90 = nearest_rank(sorted, l->n, 90),
                .p99 = nearest_rank(sorted, l->n, 99),
                .max = sorted[l->n - 1],
        };
        return 0;
}
