/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <sys/capability.h>

#include "capability.h"
#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(cap_t, cap_free);

int capability_keep_only(int keep_) {
        _cleanup_(cap_freep) cap_t caps = NULL;
        cap_value_t keep = keep_;

        /* Dropping from the bounding set needs CAP_SETPCAP, so it comes first. Under the service unit
         * the bounding set is already that one alone and nothing is left to drop here. */
        for (cap_value_t c = 0; c < (cap_value_t) cap_max_bits(); c++) {
                if (c == keep || cap_get_bound(c) <= 0)
                        continue;
                if (cap_drop_bound(c) < 0)
                        return negative_errno();
        }

        if (cap_reset_ambient() < 0 && errno != EINVAL)
                return negative_errno();

        caps = cap_init();
        if (!caps)
                return -ENOMEM;
        if (cap_set_flag(caps, CAP_PERMITTED, 1, &keep, CAP_SET) < 0 ||
            cap_set_flag(caps, CAP_EFFECTIVE, 1, &keep, CAP_SET) < 0)
                return negative_errno();
        if (cap_set_proc(caps) < 0)
                return negative_errno();

        return 0;
}
