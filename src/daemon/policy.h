/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"
#include "request.h"
#include "resolver.h"

/* The module policy: which modules may load, for whom, with which parameters. Pure: the rules come in
 * as plain data (config.c fills them from modgate.conf, policy_add_cmdline() from the kernel command
 * line), a verdict and the rule that decided it come out; nothing here does I/O.
 *
 * A module is denied when a Deny= matches it, in [Policy] or in the [Source] of the request's source;
 * a Deny= always wins. Otherwise it must pass two layers: [Policy] (Default=allow, or an Allow= that
 * matches) and the request source's [Source] (the same). A request is also denied, before anything
 * is resolved, when a DenyRequest= matches the key it asks for (a name, alias or the kernel's
 * request_module() string such as net-pf-38 or fs-cramfs). */

typedef enum PolicyMode {
        POLICY_ENFORCE,         /* a denial refuses the load */
        POLICY_PERMISSIVE,      /* a denial is recorded as would-deny, and the load goes on */
        _POLICY_MODE_MAX,
        _POLICY_MODE_INVALID = -1,
} PolicyMode;

const char *policy_mode_to_string(PolicyMode m);
PolicyMode policy_mode_from_string(const char *s);

typedef enum RuleKind {
        RULE_ALLOW,             /* Allow=: a module name glob */
        RULE_DENY,              /* Deny=, module_blacklist=, modprobe.blacklist=: a module name glob */
        RULE_DENY_REQUEST,      /* DenyRequest=: a request key glob */
        RULE_DEFAULT,           /* Default=deny: no Allow= matched */
        RULE_PARAMETERS,        /* a [Parameters] section, or RequestParameters= */
        _RULE_KIND_MAX,
} RuleKind;

const char *rule_kind_to_string(RuleKind k);

/* One rule, with where it was written: a file and line, or the kernel command line (line 0). */
typedef struct PolicyRule {
        RuleKind kind;
        char *pattern;          /* fnmatch(3) glob; module names canonical ('_' for '-'); NULL for
                                 * RULE_DEFAULT */
        char *file;             /* "/etc/modgate/modgate.conf.d/50-cve.conf", or POLICY_CMDLINE */
        unsigned line;          /* 0 on the kernel command line */
        char *option;           /* what was written: "Deny=algif_aead", "module_blacklist=algif_aead" */
} PolicyRule;

#define POLICY_CMDLINE "the kernel command line"

/* [Policy], or the [Source] sections of one request source. */
typedef struct PolicyLayer {
        bool default_deny;      /* Default=deny: only what an Allow= matches */
        PolicyRule default_rule;/* where Default= was set (RULE_DEFAULT), for the message */
        PolicyRule *rules;      /* Allow=, Deny=, DenyRequest=, in the order written */
        size_t n_rules;
} PolicyLayer;

/* A [Parameters] section: the request parameters a module may be given. */
typedef struct ParameterRule {
        char *module;           /* Module=, a module name glob */
        char **allow;           /* Allow=, "KEY=VALUE" globs; empty: no parameters at all; "*" any */
        PolicyRule rule;        /* RULE_PARAMETERS: the [Parameters] header's file and line */
} ParameterRule;

typedef struct Policy {
        PolicyMode mode;        /* [Policy] Mode=; modgate.mode= on the kernel command line wins */
        PolicyRule mode_rule;   /* where the mode was set */
        PolicyLayer global;     /* [Policy] */
        PolicyLayer sources[_SOURCE_MAX]; /* [Source] Name=... */
        bool request_parameters_any; /* [Policy] RequestParameters=any (the default) or none: for
                                      * modules that no [Parameters] section matches */
        PolicyRule request_parameters_rule;
        ParameterRule *parameters;
        size_t n_parameters;
} Policy;

void policy_init(Policy *p);
void policy_done(Policy *p);
void policy_rule_done(PolicyRule *r);
/* Sets r to a rule with copies of the strings; r is replaced only on success. 0 or -ENOMEM. */
int policy_rule_set(PolicyRule *r, RuleKind kind, const char *pattern, const char *file, unsigned line,
                    const char *option);

/* Appends a rule to a layer; copies the strings. Returns 0 or -ENOMEM (or -E2BIG past
 * POLICY_RULES_MAX). */
int policy_layer_add(PolicyLayer *l, RuleKind kind, const char *pattern, const char *file, unsigned line,
                     const char *option);
#define POLICY_RULES_MAX 16384U

/* Removes a layer's rules of one kind: an empty Deny= drops the Deny= rules written before it. */
void policy_layer_clear_kind(PolicyLayer *l, RuleKind kind);

/* Applies the kernel command line: module_blacklist= and modprobe.blacklist= (comma-separated, split
 * by the kernel's rules as the kernel and modprobe read them) become [Policy] denies; modgate.mode=
 * (split by systemd's rules, kernel-cmdline.h) sets the mode, the last one. A malformed
 * value is skipped and named in *ret_ignored (a NULL-terminated list the caller frees), so the
 * daemon can say so. Returns 0 or -ENOMEM. */
int policy_add_cmdline(Policy *p, const char *cmdline, char ***ret_ignored);

/* A stable text of every rule in force, for the digest: the same policy, however it was spread over
 * files, gives the same text; any change of a rule, a mode or a default changes it. */
int policy_serialize(const Policy *p, char **ret);

typedef enum VerdictKind {
        VERDICT_ALLOW,
        VERDICT_DENY,
} VerdictKind;

typedef struct PolicyVerdict {
        VerdictKind verdict;
        const PolicyRule *rule; /* the rule that decided; NULL for an allow by default */
        bool admin_option;      /* parameters: denied because an administrator's option sets the key */
} PolicyVerdict;

/* The verdict on a request key (before resolution). */
PolicyVerdict policy_check_request(const Policy *p, RequestSource source, const char *key);

/* The verdict on one module, however it is reached. */
PolicyVerdict policy_check_module(const Policy *p, RequestSource source, const char *module);

/* The verdict on the parameters a request gives module (NULL or "" for none), against the last
 * [Parameters] section whose Module= matches, or RequestParameters= when none does. admin_options are
 * modprobe.d's and the kernel command line's for the module: a request may not set a key they set,
 * since it would silently override the administrator (admin_option is then set, and rule NULL).
 * Parameter names compare with '-' and '_' alike, as the kernel's do. On deny, *ret_word is the
 * offending "key=value", normalized, in buf (size bytes), or NULL when it did not fit. */
PolicyVerdict policy_check_parameters(const Policy *p, const char *module, const char *admin_options,
                                      const char *parameters, char *buf, size_t size, const char **ret_word);

/* The verdict on one module of a plan. */
typedef struct ModuleVerdict {
        PolicyVerdict self;     /* on the module itself */
        bool denied;            /* itself, or through a hard dependency */
        size_t via;             /* that dependency's plan index; SIZE_MAX when denied itself or allowed */
} ModuleVerdict;

/* Judges each module of a plan for source: one whose hard dependency is denied is denied through
 * it (the kernel cannot load it without). ret gets plan->n_specs entries, the caller's. Returns the
 * plan index of the first requested module that is denied, SIZE_MAX when none is (a denied softdep
 * alone does not deny the request: it is left out), via *ret_first; 0 or -ENOMEM. */
int policy_judge_plan(const Policy *p, RequestSource source, const Plan *plan, ModuleVerdict **ret,
                      size_t *ret_first);

/* Why plan module i is denied, from it to the rule: "vxlan needs udp_tunnel, denied by
 * /etc/modgate/modgate.conf.d/50-cve.conf:3 (Deny=udp_tunnel)". */
int policy_chain(const Plan *plan, const ModuleVerdict *v, size_t i, char **ret);

/* The rule at the end of module i's chain: its own, or that of the dependency it is denied through. */
const PolicyRule *policy_chain_rule(const ModuleVerdict *v, size_t i);

/* "file:line (Deny=udp_tunnel)", or "the kernel command line (module_blacklist=udp_tunnel)". */
int policy_rule_describe(const PolicyRule *r, char **ret);
