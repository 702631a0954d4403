/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <systemd/sd-json.h>

#include "request.h"

/* The parameters of io.modgate.Manager.Load, dispatched from JSON and checked. The strings point
 * into the JSON variant, which must outlive them. */
typedef struct LoadParameters {
        const char *name;
        const char *modalias;
        const char *path;
        const char *parameters;
        sd_json_variant *context_json;
        uint64_t timeout_usec;
        RequestContext context;
} LoadParameters;

/* Returns 0 when the request may go on, 1 when it is refused (ret_refusal says how; ret is filled
 * in when the JSON types were right, so that the refusal can quote the request), -ENOMEM.
 * A field of the wrong JSON type is an InvalidParameter, named; anything else is one of
 * io.modgate.Manager's Invalid* errors. Pure: no I/O, nothing looked up. */
int load_parameters_parse(sd_json_variant *v, LoadParameters *ret, LoadRefusal *ret_refusal);
