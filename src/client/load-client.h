/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-json.h>

#include "load-parameters.h"
#include "parse-util.h"

/* The client side of io.modgate.Manager.Load, shared by the small programs that forward requests to
 * modgated (modgate-udev, modgate-modprobe, modgate-modules-load). They are started often and must
 * start fast: no libkmod, no configuration, one sd-event loop, requests in parallel. */

#define MODGATE_VARLINK_ADDRESS "/run/modgate/io.modgate"


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

typedef struct LoadRequest {
        /* Exactly one of name and modalias. Borrowed, as is context (may be NULL). */
        const char *name;
        const char *modalias;
        sd_json_variant *context;

        /* Set by load_requests_run(). */
        LoadVerdict verdict;
        int error;                      /* -errno for LOAD_VERDICT_UNREACHABLE, else 0 */
        char *error_id;                 /* the varlink error name, NULL on success */
        char *detail;                   /* what happened, in words, for a log line */
        size_t n_loaded;                /* modules that finit_module() loaded for this request */
} LoadRequest;

/* What a running modgated holds share-locked (its RuntimeDirectory= and RUNTIME_LOCK). */
#define MODGATED_RUNNING_LOCK "/run/modgated/running"

typedef struct LoadOptions {
        const char *address;            /* NULL for MODGATE_VARLINK_ADDRESS */
        uint64_t timeout_usec;          /* for the whole run; USEC_INFINITY to wait as long as it takes */
        unsigned max_parallel;          /* connections at once; 0 for 1 */
        /* When not 0: a daemon that is not running when the run starts (running_lock, NULL for
         * MODGATED_RUNNING_LOCK, is not locked) and has not started this long after is given up on:
         * LOAD_VERDICT_NO_REPLY. Its socket waits for the service manager to start it, which never
         * happens while the service manager itself waits for this request. */
        uint64_t start_timeout_usec;
        const char *running_lock;
} LoadOptions;

/* Whether a modgated holds path (NULL: MODGATED_RUNNING_LOCK) share-locked. */
bool load_daemon_running(const char *path);

/* Sends every request and waits for the answers or the deadline. A request that the daemon would
 * refuse as invalid (load_parameters_parse()) is not sent: it gets LOAD_VERDICT_INVALID and the
 * daemon's error and reason at once. With a finite timeout, each request carries a timeoutUSec a
 * little shorter than the time left, so that the daemon answers Timeout before this client gives
 * up. Returns 0 (each outcome is in its request) or -errno when the event loop itself failed.
 * Does not log. */
int load_requests_run(const LoadOptions *o, LoadRequest *reqs, size_t n);
void load_requests_done(LoadRequest *reqs, size_t n);

/* Pure: the parameters of Load for a request, and the daemon's own checks on them, so that a request
 * it would refuse as invalid is not sent. Returns 0 and *ret, 1 when refused (*ret_refusal says how:
 * a name or modalias that JSON cannot carry is InvalidName or InvalidModalias), or -ENOMEM. */
int load_request_parameters(const LoadRequest *req, uint64_t daemon_timeout, sd_json_variant **ret,
                            LoadRefusal *ret_refusal);

/* How long the daemon gets of the time left: the rest is kept to receive its answer. */
uint64_t load_daemon_timeout(uint64_t left_usec);

/* Pure parts, for tests. */
LoadVerdict load_verdict_from_reply(const char *error_id, sd_json_variant *parameters);
int load_reply_describe(const char *error_id, sd_json_variant *parameters, char **ret_detail,
                        size_t *ret_n_loaded);
/* The words for a request refused before it was sent: the daemon's error and reason. */
int load_refusal_describe(const LoadRefusal *f, char **ret_detail);

/* "60", "1.5", "60s", "500ms": a timeout for --timeout=, more than 0 and at most an hour. */
int parse_timeout(const char *s, uint64_t *ret_usec);
