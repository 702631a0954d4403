#include "varlink-errors.h"
/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* What a client asks for, checked before anything is looked up. Pure: no I/O. */

/* udev's MODALIAS for CPU features passes 1 KiB; leave room far beyond that. */
#define MODALIAS_MAX (64U * 1024U)
#define MODULE_PARAMETERS_MAX 4096U
#define CONTEXT_STRING_MAX 4096U
#define MODULE_PATH_MAX 4096U

typedef enum RequestSource {
        SOURCE_ADMIN,
        SOURCE_UDEV,
        SOURCE_KERNEL,
        SOURCE_BOOT,
        _SOURCE_MAX,
        _SOURCE_INVALID = -1,
} RequestSource;

const char *request_source_to_string(RequestSource s);
RequestSource request_source_from_string(const char *s);

typedef struct RequestContext {
        RequestSource source;
        const char *devpath;
        const char *subsystem;
        const char *action;
        const char *file;
        int64_t seqnum;         /* -1 when not given */
} RequestContext;

/* Whether s may be a string of a request's context (devpath, subsystem, action, file): at most
 * CONTEXT_STRING_MAX bytes, no control characters. */
bool request_context_string_is_valid(const char *s);

/* Each returns NULL when the value is acceptable, or the reason it is not. */
const char *modalias_check(const char *s);
const char *module_parameters_check(const char *s);
const char *module_path_check(const char *path);
const char *request_context_check(const RequestContext *c);

/* Why a request was refused: the varlink error to send and what to say. */
typedef struct LoadRefusal {
        const char *error;      /* MANAGER_ERROR_INVALID_NAME, ..., or NULL */
        const char *field;      /* for org.varlink.service.InvalidParameter: the bad field */
        const char *reason;     /* words for the client, or NULL */
} LoadRefusal;

/* The checks of a Load's values that do not depend on JSON, made by the daemon and, before they
 * send, by the clients: exactly one of name, modalias and path, each well formed, module parameters
 * and the context acceptable. Returns 0, or 1 with *ret_refusal (an io.modgate.Manager.Invalid*
 * error and its reason). */
int request_check(const char *name, const char *modalias, const char *path, const char *parameters,
                  const RequestContext *context, LoadRefusal *ret_refusal);
