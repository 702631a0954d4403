/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

/* Connects to modgated at --address=. When it cannot, says why and what to check, records the exit
 * status and returns -errno. */
int ctl_connect(sd_varlink **ret);

/* One call. A failure of the connection itself is returned as the local error
 * io.systemd.Disconnected, so that the caller reports every failure one way; any other failure of
 * the call is logged here. ret_reply and ret_error_id are the connection's until the next call. */
int ctl_call(sd_varlink *vl, const char *method, sd_json_variant *parameters, sd_json_variant **ret_reply,
             const char **ret_error_id);

/* Connects and makes one call without parameters, for the verbs that ask once; logs an error
 * reply with ctl_log_error() for verb. Returns 0 with ret_reply, or -errno. */
int ctl_call_simple(const char *verb, const char *method, sd_varlink **ret_link,
                    sd_json_variant **ret_reply);
