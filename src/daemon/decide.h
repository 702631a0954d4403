/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-json.h>

#include "kernel.h"
#include "module-result.h"
#include "policy.h"
#include "request.h"
#include "resolver.h"

/* The Load decision, written once: plain data in (the request, the seal, what the index resolved it
 * to, the policy), a decision out (the verdict, the varlink error and its parameters, the rule and
 * the chain, the plan to load, the records to write). Nothing here does I/O: Load records the
 * decision, answers it and submits the plan; Explain serializes it; Seal makes one per name of its
 * final list. The stages come in the order a Load has always taken them: the seal, DenyRequest= on
 * the key, the resolution, the policy on every module of the plan, the request's parameters. */

typedef enum KernelSeal {
        KERNEL_UNSEALED,
        KERNEL_SEALING,         /* a Seal was accepted and waits for loads */
        KERNEL_SEALED,          /* kernel.modules_disabled=1 */
        _KERNEL_SEAL_MAX,
} KernelSeal;

typedef enum LoadVerdict {
        LOAD_ALLOW,             /* load the plan */
        LOAD_SEALED,
        LOAD_DENIED,            /* DenyRequest= on the key, or the policy on a module the request needs */
        LOAD_NOT_FOUND,         /* nothing matches, or only what modprobe.d blacklists for this source */
        LOAD_INVALID_PATH,      /* a file whose name is not a module name */
        LOAD_FAILED,            /* the index cannot be read, or has a dependency loop */
        LOAD_PARAMETER_DENIED,
        LOAD_ERROR,             /* resolving failed otherwise (-ENOMEM, libkmod): LoadDecision.error */
        _LOAD_VERDICT_MAX,
} LoadVerdict;

typedef struct LoadInput {
        const char *name;       /* the request: one of name, modalias and path */
        const char *modalias;
        const char *path;
        RequestSource source;
        const char *parameters; /* NULL or "" for none */
        const Policy *policy;
        KernelSeal seal;
        bool resolved;          /* the index was asked: what follows is set */
        int index_error;        /* the index changed on disk and cannot be read again: nothing resolved */
        int resolve_error;      /* 0; -ENOENT: nothing matches (plan may still list blacklisted
                                 * matches); -EINVAL: a path whose file name is not a module name;
                                 * -ELOOP: a dependency loop; or another -errno */
        const Plan *plan;       /* when resolve_error is 0, or -ENOENT */
} LoadInput;

typedef enum DecisionRecord {
        DECISION_RECORD_NONE,
        DECISION_RECORD_POLICY, /* a policy record (journal, history) */
        DECISION_RECORD_NOT_FOUND,
} DecisionRecord;

/* One finding. Load acts on the steps up to the one that decides; Explain shows the first that says
 * something of the request as a whole (a would-deny too). */
typedef struct DecisionStep {
        LoadVerdict verdict;    /* what the step makes of the request: LOAD_ALLOW for a denial it goes
                                 * on past (a softdep left out; a dependency in permissive mode) */
        bool would;             /* permissive mode: recorded as would-deny, and the load goes on */
        DecisionRecord record;
        bool keep;              /* a policy record that becomes the module's latest in the history */
        size_t module;          /* LoadInput.plan's index of the module, or SIZE_MAX */
        char *parameter;        /* the parameter refused */
        char *rule;             /* "FILE:LINE (Deny=...)" */
        char *reason;           /* the whole sentence, with the chain through dependencies */
        char **blacklisted;     /* a not found's record: the matches modprobe.d blacklists */
        const char *error;      /* the varlink error that answers the request, when this step decides */
        sd_json_variant *error_parameters;
} DecisionStep;

typedef struct LoadDecision {
        LoadVerdict verdict;
        size_t decided;         /* the step that decided, or n_steps when allowed: Load records the
                                 * steps before it and it */
        DecisionStep *steps;
        size_t n_steps;
        bool needs_plan;        /* LoadInput.resolved was false and nothing refused before the index:
                                 * resolve, and decide again */
        int error;              /* LOAD_ERROR's -errno */
        const char *key_policy; /* "allow" or "deny" for a key (never a path); NULL without one */
        ModuleVerdict *modules; /* the policy on each module of LoadInput.plan; NULL when none */
        Plan *plan;             /* LoadInput.plan without the softdeps the policy denies; NULL when
                                 * nothing was left out */
        sd_json_variant *denied; /* those softdeps, for the reply: {name, rule, reason} */
} LoadDecision;

void load_decision_done(LoadDecision *d);

/* Pure: the decision on a request. Every stage the input allows is looked at, so that Explain can
 * say all of it; verdict and decided say what a Load does. Returns 0 or -ENOMEM. */
int load_decide(const LoadInput *in, LoadDecision *ret);

/* The first step that says something of the request as a whole, a would-deny included: Explain's
 * verdict. NULL when there is none. */
const DecisionStep *load_decision_first(const LoadDecision *d);

/* What a module's job knows before any file is opened: the kernel's state of it, the plan's entry
 * (a builtin, an install command) and a denial remembered for its file. */
typedef enum EarlyVerdict {
        EARLY_LOAD,             /* nothing decided: load it */
        EARLY_COMING,           /* another loader is loading it: wait for that */
        EARLY_DONE,             /* decided: outcome, error, reason */
} EarlyVerdict;

typedef struct ModuleEarly {
        EarlyVerdict verdict;
        Outcome outcome;
        int error;              /* positive errno */
        char *reason;
        bool command;           /* refused for its install command */
        bool cached;            /* the remembered denial */
} ModuleEarly;

void module_early_done(ModuleEarly *e);

/* Pure: whether a module file's .modinfo (its name, its signer) must be read before it is handed to
 * the kernel, given the evidence its origin check passed with (fsverity: the file's own fs-verity,
 * not its device's dm-verity) and whether a signer rule (RequireSignature=, AllowSigner=) applies to
 * the load. Not where the evidence binds each path to its bytes and no rule asks for the signer: there
 * the name check compares the file's name with the resolved one, and the .modinfo is read after the
 * load, for the record only. */
bool modinfo_needed_before_load(Evidence evidence, bool fsverity, bool signer_rule);

/* Pure: state_error is kernel_module_state()'s result for a module with a path (0 otherwise, state
 * then unused); denial_reason (NULL: none) and denial_error what an earlier load of the same file
 * was refused with. Returns 0 or -ENOMEM. */
int module_decide_early(const ModuleSpec *spec, int state_error, ModuleState state,
                        const char *denial_reason, int denial_error, ModuleEarly *ret);
