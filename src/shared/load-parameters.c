/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>

#include "load-parameters.h"

#define INVALID_PARAMETER "org.varlink.service.InvalidParameter"

typedef struct ContextParameters {
        const char *source;
        const char *devpath;
        const char *subsystem;
        const char *action;
        const char *file;
        int64_t seqnum;
} ContextParameters;

static int refuse(LoadRefusal *ret, const char *error, const char *field, const char *reason) {
        *ret = (LoadRefusal) { .error = error, .field = field, .reason = reason };
        return 1;
}

static int dispatch_context(sd_json_variant *v, RequestContext *ret, LoadRefusal *refusal) {
        static const sd_json_dispatch_field table[] = {
                { "source", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(ContextParameters, source), 0 },
                { "devpath", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(ContextParameters, devpath), 0 },
                { "subsystem", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(ContextParameters, subsystem), 0 },
                { "seqnum", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_int64,
                  offsetof(ContextParameters, seqnum), 0 },
                { "action", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(ContextParameters, action), 0 },
                { "file", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(ContextParameters, file), 0 },
                {}
        };
        ContextParameters p = { .seqnum = -1 };
        const char *bad = NULL;
        int r;

        if (v) {
                r = sd_json_dispatch_full(v, table, NULL, 0, &p, &bad);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return refuse(refusal, INVALID_PARAMETER, "context",
                                      "context has a field of the wrong type");
        }

        *ret = (RequestContext) {
                .source = p.source ? request_source_from_string(p.source) : SOURCE_ADMIN,
                .devpath = p.devpath,
                .subsystem = p.subsystem,
                .action = p.action,
                .file = p.file,
                .seqnum = p.seqnum,
        };
        return 0;
}

int load_parameters_parse(sd_json_variant *v, LoadParameters *ret, LoadRefusal *ret_refusal) {
        assert(ret);

        static const sd_json_dispatch_field table[] = {
                { "name", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, name), 0 },
                { "modalias", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, modalias), 0 },
                { "path", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, path), 0 },
                { "parameters", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, parameters), 0 },
                { "context", SD_JSON_VARIANT_OBJECT, sd_json_dispatch_variant_noref,
                  offsetof(LoadParameters, context_json), 0 },
                { "timeoutUSec", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint64,
                  offsetof(LoadParameters, timeout_usec), 0 },
                {}
        };
        LoadParameters p = {};
        const char *bad = NULL;
        int r;

        if (!v || !sd_json_variant_is_object(v))
                return refuse(ret_refusal, INVALID_PARAMETER, "parameters", "parameters are not an object");

        r = sd_json_dispatch_full(v, table, NULL, 0, &p, &bad);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return refuse(ret_refusal, INVALID_PARAMETER, bad,
                              "a field has the wrong type or is unknown");

        r = dispatch_context(p.context_json, &p.context, ret_refusal);
        if (r != 0)
                return r;

        /* Filled in also when refused, so that the refusal can quote what was sent. */
        *ret = p;
        return request_check(p.name, p.modalias, p.path, p.parameters, &p.context, ret_refusal);
}
