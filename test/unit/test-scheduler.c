/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The scheduler's rules, from plain data: the lanes, checks ahead, the growth rule and joins. */

#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "scheduler.h"
#include "tests.h"

TEST(lanes) {
        WorkerLanes l = { .workers = 4, .cpus = 2 };

        check(lanes_may_start(&l, false, false));
        check(lanes_may_start(&l, false, true));
        l.running = 3;
        check(lanes_may_start(&l, false, false));
        /* LoadAlone=: only when nothing else runs. */
        check(!lanes_may_start(&l, false, true));
        l.running = 4;
        check(!lanes_may_start(&l, false, false));
        /* The workers added while stuck count. */
        l.extra = 1;
        check(lanes_may_start(&l, false, false));
        l.extra = 0;

        /* The kernel's lane never waits behind loads, up to EXTRA_WORKERS_MAX beyond Workers=. */
        check(lanes_may_start(&l, true, false));
        l.running = 4 + EXTRA_WORKERS_MAX - 1;
        check(lanes_may_start(&l, true, false));
        l.running = 4 + EXTRA_WORKERS_MAX;
        check(!lanes_may_start(&l, true, false));

        /* Nothing beside a LoadAlone= module, but what the kernel asks for: its init may wait for it. */
        l = (WorkerLanes) { .workers = 4, .running = 1, .alone_running = true };
        check(!lanes_may_start(&l, false, false));
        check(!lanes_may_start(&l, false, true));
        check(lanes_may_start(&l, true, false));
}

TEST(prepare) {
        WorkerLanes l = { .workers = 4, .cpus = 2 };

        check(lanes_may_prepare(&l));
        l.preparing = 2;
        check(!lanes_may_prepare(&l));          /* not more than CPUs */
        l = (WorkerLanes) { .workers = 4, .cpus = 8, .running = 3, .preparing = 1 };
        check(!lanes_may_prepare(&l));          /* within Workers= */
        l = (WorkerLanes) { .workers = 4, .cpus = 8, .prepared = PREPARED_MAX - 1 };
        check(lanes_may_prepare(&l));
        l.preparing = 1;
        check(!lanes_may_prepare(&l));          /* not more kept than PREPARED_MAX */
}

TEST(growth) {
        WorkerLanes l = { .workers = 2, .running = 2 };

        check(!lanes_stuck(&l, false));         /* nothing waits */
        check(lanes_stuck(&l, true));
        l.running = 1;
        check(!lanes_stuck(&l, true));          /* a worker is free */
        l = (WorkerLanes) { .workers = 2, .running = 3, .extra = 1 };
        check(lanes_stuck(&l, true));           /* grows again while stuck */
        l.extra = EXTRA_WORKERS_MAX;
        l.running = 2 + EXTRA_WORKERS_MAX;
        check(!lanes_stuck(&l, true));          /* up to the cap */
}

TEST(joins) {
        ModuleSpec spec = { .name = (char *) "dummy", .path = (char *) "/usr/lib/modules/k/dummy.ko" };
        _cleanup_free_ char *p = NULL;

        check(join_parameters(NULL, NULL, &p) == 0 && !p);
        check(join_parameters("a=1", NULL, &p) == 0);
        check_streq(p, "a=1");
        free(p);
        check(join_parameters(NULL, "b=2", &p) == 0);
        check_streq(p, "b=2");
        free(p);
        check(join_parameters("a=1", "b=2", &p) == 0);
        check_streq(p, "a=1 b=2");

        check(job_joinable(spec.path, NULL, &spec, NULL) == 1);
        /* Another file, or other parameters: a load it did not get. */
        check(job_joinable("/tmp/dummy.ko", NULL, &spec, NULL) == 0);
        check(job_joinable(spec.path, NULL, &spec, "numdummies=2") == 0);
        check(job_joinable(spec.path, "numdummies=2", &spec, "numdummies=2") == 1);
        /* The module's own options come first, as the job was given them. */
        spec.options = (char *) "numdummies=1";
        check(job_joinable(spec.path, "numdummies=1", &spec, NULL) == 1);
        check(job_joinable(spec.path, "numdummies=1 quiet", &spec, "quiet") == 1);
        check(job_joinable(spec.path, "numdummies=1", &spec, "quiet") == 0);

        /* A kernel request that joins takes the kernel's lane, once. */
        check(join_takes_kernel_lane(false, SOURCE_KERNEL));
        check(!join_takes_kernel_lane(true, SOURCE_KERNEL));
        check(!join_takes_kernel_lane(false, SOURCE_UDEV));
        check(!join_takes_kernel_lane(false, SOURCE_ADMIN));
}

int main(void) {
        RUN(lanes);
        RUN(prepare);
        RUN(growth);
        RUN(joins);
        return tests_done();
}
