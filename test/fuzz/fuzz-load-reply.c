/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the clients (modgate-udev, modgate-modprobe, modgate-modules-load) decode: modgated's answer
 * to Load, into a verdict and a line for their log, and their --timeout= value. The input is the
 * varlink error name on its first line (empty: none; it is also the timeout), then the reply's
 * parameters as JSON. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "fuzz.h"
#include "load-client.h"

static const char *field_string(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_string(f) ? sd_json_variant_string(f) : NULL;
}

/* The modules a successful answer says were loaded. */
static size_t count_loaded(sd_json_variant *parameters) {
        sd_json_variant *a = parameters ? sd_json_variant_by_key(parameters, "modules") : NULL;
        size_t n = 0;

        if (!a || !sd_json_variant_is_array(a))
                return 0;
        for (size_t i = 0; i < sd_json_variant_elements(a); i++) {
                sd_json_variant *e = sd_json_variant_by_index(a, i);
                const char *o = field_string(e, "outcome");

                if ((sd_json_variant_is_string(e) || field_string(e, "name")) && o && strcmp(o, "loaded") == 0)
                        n++;
        }
        return n;
}

static void check_reply(const char *error_id, sd_json_variant *parameters) {
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
        sd_json_variant *parameters = NULL;
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
        (void) sd_json_parse(json, 0, &parameters, NULL, NULL);
        check_reply(text[0] ? text : NULL, parameters);
        sd_json_variant_unref(parameters);
        return 0;
}
