/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "macro.h"
#include "request.h"
#include "udev-context.h"

/* A value the daemon would refuse as context (too long, a control character), or that JSON cannot carry
 * (not UTF-8: a device name may be any bytes), would fail the whole request: it is left out instead,
 * as one udev did not set. */
static int value(const char **v) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *j = NULL;
        int r;

        if (!*v || !**v || !request_context_string_is_valid(*v)) {
                *v = NULL;
                return 0;
        }
        r = sd_json_variant_new_string(&j, *v);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                *v = NULL;
        return 0;
}

int udev_context_build(const char *devpath, const char *subsystem, const char *seqnum, const char *action,
                       sd_json_variant **ret) {
        const char **values[] = { &devpath, &subsystem, &seqnum, &action };
        uint64_t n = 0;
        char *end = NULL;
        bool have_seqnum = false;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                r = value(values[i]);
                if (r < 0)
                        return r;
        }
        if (seqnum) {
                errno = 0;
                n = strtoull(seqnum, &end, 10);
                have_seqnum = errno == 0 && end && *end == '\0' && seqnum[0] >= '0' && seqnum[0] <= '9' &&
                        n <= INT64_MAX;
        }

        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_STRING("source", "udev"),
                        SD_JSON_BUILD_PAIR_CONDITION(!!devpath, "devpath", SD_JSON_BUILD_STRING(devpath)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!subsystem, "subsystem", SD_JSON_BUILD_STRING(subsystem)),
                        SD_JSON_BUILD_PAIR_CONDITION(have_seqnum, "seqnum", SD_JSON_BUILD_UNSIGNED(n)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!action, "action", SD_JSON_BUILD_STRING(action)));
}
