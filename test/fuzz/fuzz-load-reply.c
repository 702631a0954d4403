/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the clients (modgate-udev, modgate-modprobe, modgate-modules-load) decode: modgated's answer
 * to Load, into a verdict and a line for their log, and their --timeout= value. The input is the
 * varlink error name on its first line (empty: none; it is also the timeout), then the reply's
 * parameters as JSON. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "load-reply.h"


/* The modules a successful answer says were loaded. */
static size_t count_loaded(const JsonValue *parameters) {
        const JsonValue *a = json_by_key(parameters, "modules");
        size_t n = 0;

        for (size_t i = 0; i < json_elements(a); i++) {
                const JsonValue *e = json_by_index(a, i);
                const char *o = json_string(json_by_key(e, "outcome"));

                if ((json_string(e) || json_string(json_by_key(e, "name"))) && o && strcmp(o, "loaded") == 0)
                        n++;
        }
        return n;
}

static void check_reply(const char *error_id, const JsonValue *parameters) {
        _cleanup_free_ char *detail = NULL;
        LoadVerdict v = load_verdict_from_reply(error_id, parameters);
        size_t n_loaded = SIZE_MAX;
        int r;

        fuzz_assert(v >= 0 && v < _LOAD_VERDICT_MAX && load_verdict_to_string(v));
        fuzz_assert((v == LOAD_VERDICT_LOADED) == !error_id);
        r = load_reply_describe(error_id, parameters, &detail, &n_loaded);
        fuzz_assert(r == 0 || r == -ENOMEM);
        if (r < 0)
                return;
        fuzz_assert(detail && *detail);
        fuzz_assert(n_loaded == (error_id ? 0 : count_loaded(parameters)));
}

/* A timeout taken is within its range, and reads the same written back in microseconds. */
static void check_timeout(const char *s) {
        uint64_t usec, again;
        char buf[64];

        if (parse_timeout(s, &usec) < 0)
                return;
        fuzz_assert(usec > 0 && usec <= 3600 * USEC_PER_SEC);
        snprintf(buf, sizeof(buf), "%" PRIu64 ".%06" PRIu64 "s", usec / USEC_PER_SEC, usec % USEC_PER_SEC);
        fuzz_assert(parse_timeout(buf, &again) == 0 && again == usec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size);
        JsonValue *parameters = NULL;
        const char *json = "";
        char *nl;

        if (!text)
                return 0;
        nl = strchr(text, '\n');
        if (nl) {
                *nl = '\0';
                json = nl + 1;
        }
        check_timeout(text);
        (void) json_parse(json, strlen(json), &parameters, NULL);
        check_reply(text[0] ? text : NULL, parameters);
        json_free(parameters);
        return 0;
}
