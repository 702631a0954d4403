/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What modgate-udev reads from udev: the environment of a RUN program (MODALIAS, DEVPATH, SUBSYSTEM,
 * SEQNUM, ACTION) and the module names of the rule. The input is those values in that order, then
 * the names, separated by NUL bytes (which no environment value holds); a value the input does not
 * reach is unset. Whatever udev passes, each request modgate-udev makes is refused only for its own
 * modalias or name, never for its context, and never fails the others. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "fuzz.h"
#include "load-client.h"
#include "module-name.h"
#include "udev-context.h"

enum { MODALIAS, DEVPATH, SUBSYSTEM, SEQNUM, ACTION, _FIELD_MAX };

static const char *field_string(sd_json_variant *v, const char *key) {
        sd_json_variant *f = sd_json_variant_by_key(v, key);

        return f && sd_json_variant_is_string(f) ? sd_json_variant_string(f) : NULL;
}

/* A value is passed on as udev set it, or left out. */
static void check_value(sd_json_variant *context, const char *key, const char *env) {
        const char *v = field_string(context, key);

        fuzz_assert(!sd_json_variant_by_key(context, key) || v);
        fuzz_assert(!v || (env && strcmp(v, env) == 0));
}

static void check_context(sd_json_variant *context, const char *const *env) {
        sd_json_variant *seqnum = sd_json_variant_by_key(context, "seqnum");

        fuzz_assert(sd_json_variant_is_object(context));
        fuzz_assert(streq_ptr(field_string(context, "source"), "udev"));
        check_value(context, "devpath", env[DEVPATH]);
        check_value(context, "subsystem", env[SUBSYSTEM]);
        check_value(context, "action", env[ACTION]);
        if (seqnum) {
                char buf[32];

                fuzz_assert(sd_json_variant_is_unsigned(seqnum) && env[SEQNUM]);
                snprintf(buf, sizeof(buf), "%" PRIu64, sd_json_variant_unsigned(seqnum));
                fuzz_assert(strcmp(buf, env[SEQNUM] + strspn(env[SEQNUM], "0")) == 0 ||
                            (sd_json_variant_unsigned(seqnum) == 0 && strspn(env[SEQNUM], "0") == strlen(env[SEQNUM])));
        }
}

/* The request as load_requests_run() makes it, and refuses it before sending when the daemon would. */
static void check_request(LoadRequest *req, sd_json_variant *context, const char *refused_as) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *params = NULL;
        LoadRefusal refusal = {};
        int r;

        req->context = context;
        r = load_request_parameters(req, USEC_INFINITY, &params, &refusal);
        fuzz_assert(r == 0 || r == 1 || r == -ENOMEM);
        if (r == 1)
                fuzz_assert(streq_ptr(refusal.error, refused_as));
        if (r == 0) {
                fuzz_assert(sd_json_variant_equal(sd_json_variant_by_key(params, "context"), context));
                fuzz_assert(!req->name || module_name_is_valid(req->name));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *context = NULL;
        _cleanup_free_ char *text = malloc(size + 1);
        const char *env[_FIELD_MAX] = {}, *names;
        const char *p, *end;
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        p = text;
        end = text + size;
        for (size_t i = 0; i < _FIELD_MAX && p <= end; i++) {
                env[i] = p;
                p += strlen(p) + 1;
        }
        names = p;

        r = udev_context_build(env[DEVPATH], env[SUBSYSTEM], env[SEQNUM], env[ACTION], &context);
        if (r < 0) {
                fuzz_assert(r == -ENOMEM);
                return 0;
        }
        check_context(context, env);

        if (env[MODALIAS])
                check_request(&(LoadRequest) { .modalias = env[MODALIAS] }, context,
                              "io.modgate.Manager.InvalidModalias");
        for (const char *n = names; n < end; n += strlen(n) + 1)
                check_request(&(LoadRequest) { .name = n }, context, "io.modgate.Manager.InvalidName");
        return 0;
}
