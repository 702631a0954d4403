/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "request.h"
#include "udev-context.h"

/* A value the daemon would refuse as context (too long, a control character) would have the whole
 * request refused: it is left out instead, as one udev did not set. */
static const char *value(const char *v) {
        return v && *v && request_context_string_is_valid(v) ? v : NULL;
}

int udev_context_build(const char *devpath, const char *subsystem, const char *seqnum, const char *action,
                       sd_json_variant **ret) {
        uint64_t n = 0;
        char *end = NULL;
        bool have_seqnum = false;

        devpath = value(devpath);
        subsystem = value(subsystem);
        action = value(action);
        seqnum = value(seqnum);
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
