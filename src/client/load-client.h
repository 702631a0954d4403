/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-json.h>

#include "load-parameters.h"
#include "load-reply.h"

/* The client side of io.modgate.Manager.Load over sd-varlink, for modgate-modprobe and
 * modgate-modules-load. They are started often and must start fast: no libkmod, no configuration,
 * one sd-event loop, requests in parallel. modgate-udev, started once per device event, asks the
 * same way with libc alone (load-plain.h); both read the answers with load-reply.h. */

typedef struct LoadRequest {
        /* Exactly one of name and modalias. Borrowed, as is context (may be NULL). */
        const char *name;
        const char *modalias;
        sd_json_variant *context;

        LoadResult result;              /* set by load_requests_run() */
} LoadRequest;

typedef struct LoadOptions {
        const char *address;            /* NULL for MODGATE_VARLINK_ADDRESS */
        uint64_t timeout_usec;          /* for the whole run; USEC_INFINITY to wait as long as it takes */
        unsigned max_parallel;          /* connections at once; 0 for 1 */
} LoadOptions;

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
