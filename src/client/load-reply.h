/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "json-plain.h"
#include "parse-util.h"
#include "request.h"

/* What the clients make of io.modgate.Manager.Load's answers: pure, libc only, for the plain client
 * (load-plain.h) that every helper asks with. */

#define MODGATE_VARLINK_ADDRESS "/run/modgate/io.modgate"

/* The errors a varlink client makes up itself, as sd-varlink names them. */
#define VARLINK_ERROR_TIMEOUT "io.systemd.TimedOut"
#define VARLINK_ERROR_DISCONNECTED "io.systemd.Disconnected"
#define VARLINK_ERROR_PROTOCOL "io.systemd.Protocol"
#define VARLINK_ERROR_SYSTEM "io.systemd.System"

/* What came of one request, from the requester's point of view. */
typedef enum LoadVerdict {
        LOAD_VERDICT_LOADED,            /* every module loaded, already loaded or builtin */
        LOAD_VERDICT_NOT_FOUND,         /* ModuleNotFound */
        LOAD_VERDICT_BLACKLISTED,       /* ModuleNotFound, and modprobe.d blacklists every match */
        LOAD_VERDICT_DENIED,            /* UntrustedOrigin, PolicyDenied, ParameterDenied */
        LOAD_VERDICT_INSTALL_REFUSED,   /* InstallCommandRefused */
        LOAD_VERDICT_TIMEOUT,           /* io.modgate.Manager.Timeout: the load goes on in the daemon */
        LOAD_VERDICT_FAILED,            /* LoadFailed, or an error this client does not know */
        LOAD_VERDICT_INVALID,           /* the request itself is invalid (name, modalias, ...): refused
                                         * by the daemon, or unsent by its checks run here */
        LOAD_VERDICT_NO_REPLY,          /* no answer before this client's own deadline */
        LOAD_VERDICT_UNREACHABLE,       /* no connection, or the connection broke */
        _LOAD_VERDICT_MAX,
} LoadVerdict;

const char *load_verdict_to_string(LoadVerdict v);

/* What came of a request, for its log line. */
typedef struct LoadResult {
        LoadVerdict verdict;
        int error;                      /* -errno for LOAD_VERDICT_UNREACHABLE, else 0 */
        char *error_id;                 /* the varlink error name, NULL on success */
        char *detail;                   /* what happened, in words, for a log line */
        size_t n_loaded;                /* modules that finit_module() loaded for this request */
} LoadResult;

/* Replaces what *res held. detail NULL: the verdict's name. Returns 0 or -ENOMEM. */
int load_result_set(LoadResult *res, LoadVerdict verdict, int error, const char *error_id,
                    const char *detail);
/* From an answer (error_id NULL for success; parameters may be NULL). Returns 0 or -ENOMEM. */
int load_result_from_reply(LoadResult *res, const char *error_id, const JsonValue *parameters);
void load_result_done(LoadResult *res);

/* Pure parts, for tests. */
LoadVerdict load_verdict_from_reply(const char *error_id, const JsonValue *parameters);
int load_reply_describe(const char *error_id, const JsonValue *parameters, char **ret_detail,
                        size_t *ret_n_loaded);
/* The words for a request refused before it was sent: the daemon's error and reason. */
int load_refusal_describe(const LoadRefusal *f, char **ret_detail);

/* How long the daemon gets of the time left: the rest is kept to receive its answer. */
uint64_t load_daemon_timeout(uint64_t left_usec);

/* After the busy'th Busy answer (1 for the first, first_busy when it came): when to ask again, or 0
 * when there is no time left for it before deadline (USEC_INFINITY: a minute after the first). */
uint64_t load_busy_retry_at(unsigned busy, uint64_t first_busy, uint64_t now, uint64_t deadline);

/* "60", "1.5", "60s", "500ms": a timeout for --timeout=, more than 0 and at most an hour. */
int parse_timeout(const char *s, uint64_t *ret_usec);
