/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-json.h>

/* modgatectl's exit statuses, documented in modgatectl(1). Scripts tell the kinds of failure apart
 * by them; the first failure of a run decides. */
typedef enum CtlExit {
        CTL_EXIT_SUCCESS = 0,
        CTL_EXIT_FAILURE = 1,           /* anything not below */
        CTL_EXIT_INVALID = 2,           /* the command line, or a request modgated would refuse as invalid */
        CTL_EXIT_DENIED = 3, /* PolicyDenied, ParameterDenied, UntrustedOrigin, InstallCommandRefused */
        CTL_EXIT_NOT_FOUND = 4,         /* ModuleNotFound, NoRecord, NotLoaded */
        CTL_EXIT_LOAD_FAILED = 5,       /* LoadFailed, Timeout, UnloadFailed, ModuleInUse */
        CTL_EXIT_REFUSED = 6,           /* PermissionDenied, Sealed: this caller may not ask this */
        CTL_EXIT_NO_DAEMON = 7,         /* no connection to modgated, or it went away */
} CtlExit;

/* The exit status a varlink error stands for. Pure. */
CtlExit ctl_exit_from_error(const char *error_id);

/* Records the status of a failure (the first one recorded is the one that counts) and returns
 * -error, so that a caller can log, record and return in one statement. */
int ctl_fail(CtlExit status, int error);
/* The exit status of the run so far: what ctl_fail() recorded, else CTL_EXIT_FAILURE when r < 0. */
int ctl_exit_status(int r);

/* Logs a varlink error from modgated for the request "what" of the verb, in words, with a second
 * line that says what to do next; records its exit status. Returns -errno. */
int ctl_log_error(const char *verb, const char *what, const char *error_id, sd_json_variant *parameters);

/* The same, for a request refused here before it was sent (load_parameters_parse()). */
int ctl_log_refusal(const char *what, const char *error_id, const char *reason);

/* Whether the verb only reports (status, list, describe, explain, monitor): for ReadGroup= too. */
bool ctl_verb_is_read_only(const char *verb);
