/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdint.h>
#include <string.h>

#include "json-plain.h"
#include "parse-util.h"
#include "udev-context.h"

/* A value the daemon would refuse as context (too long, a control character), or that JSON cannot carry
 * (not UTF-8: a device name may be any bytes), would fail the whole request: it is left out instead,
 * as one udev did not set. */
static const char *value(const char *v) {
        if (!v || !*v || !request_context_string_is_valid(v) || !utf8_is_valid(v, strlen(v)))
                return NULL;
        return v;
}

static int64_t seqnum_value(const char *s) {
        uint64_t n;

        if (!s || parse_uint64(s, &n) < 0 || n > INT64_MAX)
                return -1;
        return (int64_t) n;
}

void udev_context_build(const char *devpath, const char *subsystem, const char *seqnum, const char *action,
                        RequestContext *ret) {
        *ret = (RequestContext) {
                .source = SOURCE_UDEV,
                .devpath = value(devpath),
                .subsystem = value(subsystem),
                .action = value(action),
                .seqnum = seqnum_value(value(seqnum)),
        };
}
