/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "ctl-error.h"
#include "ctl-link.h"
#include "ctl.h"
#include "log.h"

int ctl_connect(sd_varlink **ret) {
        int r;

        r = sd_varlink_connect_address(ret, arg_address);
        if (r >= 0)
                return 0;

        (void) log_error_errno(r, "Failed to connect to %s: %m", arg_address);
        if (r == -EACCES || r == -EPERM) {
                log_error("The socket is root's; a drop-in for modgated.socket may open it to the group "
                          "that ReadGroup= in modgate.conf(5) names (SocketGroup=, SocketMode=0660). "
                          "Run as root, or as a member of that group.");
                return ctl_fail(CTL_EXIT_REFUSED, r);
        }
        log_error("Is modgated.socket listening? 'systemctl status modgated.socket' says; "
                  "'systemctl start modgated.socket' starts it.");
        return ctl_fail(CTL_EXIT_NO_DAEMON, r);
}

int ctl_call(sd_varlink *vl, const char *method, sd_json_variant *parameters, sd_json_variant **ret_reply,
             const char **ret_error_id) {
        int r;

        r = sd_varlink_call(vl, method, parameters, ret_reply, ret_error_id);
        if (r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN) {
                *ret_reply = NULL;
                *ret_error_id = SD_VARLINK_ERROR_DISCONNECTED;
                return 0;
        }
        if (r == -ETIME || r == -ETIMEDOUT) {
                log_error("%s: no answer from modgated in time.", method);
                log_error("It may be stuck: 'systemctl status modgated.service' and 'journalctl -u "
                          "modgated.service' say more.");
                return ctl_fail(CTL_EXIT_FAILURE, r);
        }
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_error_errno(r, "Failed to call %s: %m", method));
        return 0;
}

int ctl_call_simple(const char *verb, const char *method, sd_varlink **ret_link,
                    sd_json_variant **ret_reply) {
        sd_json_variant *reply = NULL;
        const char *error = NULL;
        int r;

        r = ctl_connect(ret_link);
        if (r < 0)
                return r;
        r = ctl_call(*ret_link, method, NULL, &reply, &error);
        if (r < 0)
                return r;
        if (error)
                return ctl_log_error(verb, verb, error, reply);
        *ret_reply = reply;
        return 0;
}
