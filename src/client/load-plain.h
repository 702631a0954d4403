/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load-reply.h"
#include "request.h"

/* io.modgate.Manager.Load without libsystemd, for every helper: modgate-udev and modgate-modprobe,
 * which udevd and the kernel start once per device event or request_module() (what they cost to start
 * is most of what they cost), and modgate-modules-load, which asks for the whole boot list at once.
 * The daemon's own checks run before sending, Busy is asked again, and the daemon is given part of
 * the time left; over varlink-plain.h, with libc only. */

typedef struct PlainRequest {
        /* Exactly one of name and modalias. Borrowed, as is context (may be NULL). */
        const char *name;
        const char *modalias;
        const RequestContext *context;

        LoadResult result;              /* set by plain_requests_run() */
} PlainRequest;

/* What a running modgated holds share-locked (its RuntimeDirectory= and RUNTIME_LOCK). */
#define MODGATED_RUNNING_LOCK "/run/modgated/running"

typedef struct PlainOptions {
        const char *address;            /* NULL for MODGATE_VARLINK_ADDRESS */
        uint64_t timeout_usec;          /* for the whole run; USEC_INFINITY to wait as long as it takes */
        unsigned max_parallel;          /* connections at once; 0 for 1 */
        /* When not 0: a daemon that is not running when the run starts (running_lock, NULL for
         * MODGATED_RUNNING_LOCK, is not locked) and has not started this long after is given up on:
         * LOAD_VERDICT_NO_REPLY. Its socket waits for the service manager to start it, which never
         * happens while the service manager itself waits for this request. */
        uint64_t start_timeout_usec;
        const char *running_lock;
} PlainOptions;

/* Whether a modgated holds path (NULL: MODGATED_RUNNING_LOCK) share-locked. */
bool load_daemon_running(const char *path);

/* Pure: the call of Load for a request, as text (without its NUL), after the daemon's own checks,
 * so that a request it would refuse as invalid is not sent. Returns 0 and *ret, 1 when refused
 * (*ret_refusal says how: a name or modalias that is not UTF-8 is InvalidName or InvalidModalias),
 * or -ENOMEM. A context string that is not UTF-8 is -EILSEQ: the context is the caller's to check. */
int plain_request_message(const PlainRequest *req, uint64_t daemon_timeout, char **ret, size_t *ret_len,
                          LoadRefusal *ret_refusal);

/* Sends every request, at most max_parallel at once, and waits for the answers or the deadline. A
 * request that the daemon would refuse as invalid is not sent: it gets LOAD_VERDICT_INVALID and the
 * daemon's error and reason at once. With a finite timeout, each request carries a timeoutUSec a
 * little shorter than the time left, so that the daemon answers Timeout before this client gives up.
 * Returns 0 (each outcome is in its request), or -ENOMEM, -EILSEQ (a context string that is not
 * UTF-8) or poll()'s -errno. Does not log. */
int plain_requests_run(const PlainOptions *o, PlainRequest *reqs, size_t n);
void plain_requests_done(PlainRequest *reqs, size_t n);
