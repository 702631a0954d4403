/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What modgate-udev reads from udev: the environment of a RUN program (MODALIAS, DEVPATH, SUBSYSTEM,
 * SEQNUM, ACTION) and the module names of the rule. The input is those values in that order, then
 * the names, separated by NUL bytes (which no environment value holds); a value the input does not
 * reach is unset. Whatever udev passes, each request modgate-udev makes is refused only for its own
 * modalias or name, never for its context, and never fails the others. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "load-plain.h"
#include "module-name.h"
#include "udev-context.h"

enum { MODALIAS, DEVPATH, SUBSYSTEM, SEQNUM, ACTION, _FIELD_MAX };

static void check_context(const RequestContext *c, const char *const *env) {
        fuzz_assert(c->source == SOURCE_UDEV && !c->file);
        /* A value is passed on as udev set it, or left out. */
        fuzz_assert(!c->devpath || c->devpath == env[DEVPATH]);
        fuzz_assert(!c->subsystem || c->subsystem == env[SUBSYSTEM]);
        fuzz_assert(!c->action || c->action == env[ACTION]);
        fuzz_assert(request_context_check(c) == NULL);
        if (c->seqnum >= 0) {
                char buf[32];

                fuzz_assert(env[SEQNUM]);
                snprintf(buf, sizeof(buf), "%" PRIi64, c->seqnum);
                fuzz_assert(strcmp(buf, env[SEQNUM] + strspn(env[SEQNUM], "0")) == 0 ||
                            (c->seqnum == 0 && strspn(env[SEQNUM], "0") == strlen(env[SEQNUM])));
        }
}

/* The call's context, read back, says what the context said. */
static void check_sent_context(const JsonValue *sent, const RequestContext *c) {
        const JsonValue *seqnum = json_by_key(sent, "seqnum");

        fuzz_assert(streq_ptr(json_string(json_by_key(sent, "source")), "udev"));
        fuzz_assert(streq_ptr(json_string(json_by_key(sent, "devpath")), c->devpath));
        fuzz_assert(streq_ptr(json_string(json_by_key(sent, "subsystem")), c->subsystem));
        fuzz_assert(streq_ptr(json_string(json_by_key(sent, "action")), c->action));
        fuzz_assert(!seqnum == (c->seqnum < 0));
        if (seqnum)
                fuzz_assert(seqnum->type == JSON_NUMBER && strtoll(seqnum->text, NULL, 10) == c->seqnum);
}

/* The call as plain_requests_run() makes it, and refuses it before sending when the daemon would. */
static void check_request(PlainRequest *req, const RequestContext *c, const char *refused_as) {
        _cleanup_(json_freep) JsonValue *call = NULL;
        _cleanup_free_ char *text = NULL;
        const JsonValue *params;
        LoadRefusal refusal = {};
        size_t len;
        int r;

        req->context = c;
        r = plain_request_message(req, USEC_INFINITY, &text, &len, &refusal);
        fuzz_assert(r == 0 || r == 1 || r == -ENOMEM);
        if (r == 1)
                fuzz_assert(streq_ptr(refusal.error, refused_as));
        if (r != 0)
                return;
        fuzz_assert(len == strlen(text));
        fuzz_assert(json_parse(text, len, &call, NULL) == 0);
        fuzz_assert(streq_ptr(json_string(json_by_key(call, "method")), "io.modgate.Manager.Load"));
        params = json_by_key(call, "parameters");
        fuzz_assert(streq_ptr(json_string(json_by_key(params, "name")), req->name));
        fuzz_assert(streq_ptr(json_string(json_by_key(params, "modalias")), req->modalias));
        check_sent_context(json_by_key(params, "context"), c);
        fuzz_assert(!req->name || module_name_is_valid(req->name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RequestContext context;
        _cleanup_free_ char *text = malloc(size + 1);
        const char *env[_FIELD_MAX] = {}, *names;
        const char *p, *end;

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

        udev_context_build(env[DEVPATH], env[SUBSYSTEM], env[SEQNUM], env[ACTION], &context);
        check_context(&context, env);

        if (env[MODALIAS])
                check_request(&(PlainRequest) { .modalias = env[MODALIAS] }, &context,
                              "io.modgate.Manager.InvalidModalias");
        for (const char *n = names; n < end; n += strlen(n) + 1)
                check_request(&(PlainRequest) { .name = n }, &context, "io.modgate.Manager.InvalidName");
        return 0;
}
