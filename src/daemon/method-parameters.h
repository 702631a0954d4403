/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

/* The parameters of io.modgate.Manager's methods other than Load and Explain (load_parameters_parse()
 * has theirs), dispatched from JSON and checked as the daemon does before it looks at the caller. Pure:
 * no I/O, nothing looked up, so that the fuzzer drives the very code the methods run. */

/* Why the parameters were refused: the varlink error to send and what to quote. */
typedef struct MethodRefusal {
        const char *field;      /* org.varlink.service.InvalidParameter: the bad field */
        const char *error;      /* else io.modgate.Manager's error, without the interface */
        const char *name;       /* InvalidName: the name as it was given */
        char reason[64];        /* InvalidRequest: words for the client */
} MethodRefusal;

/* Each returns 0 when the call may go on, 1 when it is refused (*ret_refusal says how), or -errno
 * (-ENOMEM; or when the parameters are no object, which sd-varlink's own checks never let through).
 * Outputs are written in both of the first two cases and belong to the caller; a refusal may quote
 * them, so free them after replying. */

/* List, Status, Reload: no parameters at all. */
int method_parameters_none(sd_json_variant *v, MethodRefusal *ret_refusal);

/* Unload, Describe: "name", a valid module name, returned made canonical ('-' to '_'). */
int method_parameters_module_name(sd_json_variant *v, char **ret_name, MethodRefusal *ret_refusal);

/* Monitor: "modules", optional, valid names, returned made canonical. */
int method_parameters_monitor(sd_json_variant *v, char ***ret_modules, MethodRefusal *ret_refusal);

/* Seal: "load", optional, at most SEAL_LOAD_MAX valid names, returned as given. */
int method_parameters_seal(sd_json_variant *v, char ***ret_names, MethodRefusal *ret_refusal);

/* The reply for a refusal; returns what sd_varlink_error*() does. */
int method_reply_refusal(sd_varlink *link, const MethodRefusal *f);
