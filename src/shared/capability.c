/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <sys/capability.h>

#include "capability.h"
#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(cap_t, cap_free);

static bool kept(cap_value_t c, const int *keep, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (c == keep[i])
                        return true;
        return false;
}

static int have(cap_t caps, cap_value_t c, cap_flag_t set) {
        cap_flag_value_t v = CAP_CLEAR;

        if (cap_get_flag(caps, c, set, &v) < 0)
                return negative_errno();
        return v == CAP_SET;
}

int capability_keep(const int *keep, size_t n) {
        _cleanup_(cap_freep) cap_t caps = NULL, now = NULL;
        int setpcap;

        now = cap_get_proc();
        if (!now)
                return negative_errno();
        /* Dropping from the bounding set needs CAP_SETPCAP, so it comes first. Under the service unit
         * the bounding set is already what is kept and nothing is left to drop here. */
        setpcap = have(now, CAP_SETPCAP, CAP_EFFECTIVE);
        if (setpcap < 0)
                return setpcap;
        for (cap_value_t c = 0; setpcap && c < (cap_value_t) cap_max_bits(); c++) {
                if (kept(c, keep, n) || cap_get_bound(c) <= 0)
                        continue;
                if (cap_drop_bound(c) < 0)
                        return negative_errno();
        }

        if (cap_reset_ambient() < 0 && errno != EINVAL)
                return negative_errno();

        caps = cap_init();
        if (!caps)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                cap_value_t v = keep[i];

                /* The first is the one the process exists for: without it, cap_set_proc() fails. The
                 * others are kept where held (a kernel older than CAP_BPF, a unit without it). */
                if (i > 0 && (!CAP_IS_SUPPORTED(v) || have(now, v, CAP_PERMITTED) <= 0))
                        continue;
                if (cap_set_flag(caps, CAP_PERMITTED, 1, &v, CAP_SET) < 0 ||
                    cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_SET) < 0)
                        return negative_errno();
        }
        if (cap_set_proc(caps) < 0)
                return negative_errno();

        return 0;
}

int capability_keep_only(int keep) {
        return capability_keep(&keep, 1);
}
