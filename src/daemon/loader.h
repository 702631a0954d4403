/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "compression.h"
#include "resolver.h"
#include "trust.h"

typedef enum Outcome {
        OUTCOME_LOADED,
        OUTCOME_ALREADY_LOADED,
        OUTCOME_BUILTIN,
        OUTCOME_FAILED,
        OUTCOME_DENIED,
        _OUTCOME_MAX,
} Outcome;

const char *outcome_to_string(Outcome o);

typedef struct ModuleResult {
        char *name;
        char *path;
        Outcome outcome;
        char *reason;           /* why it was not loaded; NULL when it was */
        int error;              /* positive errno of the failure, 0 if none */
        bool have_origin;       /* the file was opened and origin describes it */
        FileOrigin origin;
        Compression compression;
        unsigned flags;         /* finit_module() flags used */
        uint64_t duration_usec;
} ModuleResult;

typedef struct LoadContext {
        TrustedRoot *root;
        Compression kernel_compression;
} LoadContext;

/* Loads specs in order (dependencies first), opening each file beneath the trusted root, checking
 * the open fd and handing that fd to finit_module(). Stops at the first module that is denied or
 * fails; the modules after it are not touched and not in the results. Returns 0 (the outcome is in
 * the results) or -ENOMEM. */
int loader_run(const LoadContext *ctx, const ModuleSpec *specs, size_t n, ModuleResult **ret, size_t *ret_n);

void module_results_free(ModuleResult *results, size_t n);

/* Whether the whole request succeeded: every module loaded, already loaded or builtin. */
bool module_results_ok(const ModuleResult *results, size_t n);
