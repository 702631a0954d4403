/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "explain.h"
#include "kernel.h"
#include "loader.h"
#include "macro.h"
#include "policy.h"
#include "seal.h"

typedef struct Explanation {
        const char *verdict;    /* NULL until something decides */
        char *rule;
        char *reason;
} Explanation;

static void explanation_done(Explanation *e) {
        free(e->rule);
        free(e->reason);
}

static const char *denied_verdict(const Manager *m) {
        return m->config.policy.mode == POLICY_PERMISSIVE ? "would_deny" : "denied";
}

/* The first decision stands: it is the one a Load would answer with. */
static int decide(Explanation *e, const char *verdict, const char *rule, const char *reason) {
        if (e->verdict)
                return 0;
        e->verdict = verdict;
        if (strdup_or_null(rule, &e->rule) < 0 || strdup_or_null(reason, &e->reason) < 0)
                return -ENOMEM;
        return 0;
}

static int origin_json(const ModuleResult *r, sd_json_variant **ret) {
        char device[32], hex[SHA256_HEX_SIZE] = "";

        snprintf(device, sizeof(device), "%u:%u", major(r->origin.dev), minor(r->origin.dev));
        if (r->have_sha256)
                sha256_to_hex(r->sha256, hex);
        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_BOOLEAN("trusted", !r->reason),
                        SD_JSON_BUILD_PAIR_CONDITION(r->trusted, "evidence",
                                                     SD_JSON_BUILD_STRING(evidence_to_string(r->evidence))),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->reason, "reason", SD_JSON_BUILD_STRING(r->reason)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "fstype", SD_JSON_BUILD_STRING(r->origin.fstype)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "device", SD_JSON_BUILD_STRING(device)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "inode",
                                                     SD_JSON_BUILD_UNSIGNED((uint64_t) r->origin.ino)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "superblockReadOnly",
                                                     SD_JSON_BUILD_BOOLEAN(r->origin.sb_ro)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->backing, "backing", SD_JSON_BUILD_STRING(r->backing)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->dm_target, "dmTarget", SD_JSON_BUILD_STRING(r->dm_target)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->verity_root_hash, "verityRootHash",
                                                     SD_JSON_BUILD_STRING(r->verity_root_hash)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->fsverity_digest, "fsverityDigest",
                                                     SD_JSON_BUILD_STRING(r->fsverity_digest)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->have_sha256, "sha256", SD_JSON_BUILD_STRING(hex)),
                        SD_JSON_BUILD_PAIR_STRING("signer", r->modinfo.signer),
                        SD_JSON_BUILD_PAIR_STRING("signatureKey", r->modinfo.signature_key));
}

/* The checks a worker would make on the file, made here on the event loop thread. */
static int explain_origin(Manager *m, const ModuleSpec *s, Explanation *e, sd_json_variant **ret) {
        _cleanup_(module_result_done) ModuleResult r = { .name = s->name, .path = s->path, .role = s->role };
        int q;

        q = loader_check(&m->load_context, &r);
        if (q >= 0)
                q = origin_json(&r, ret);
        if (q >= 0 && r.reason)
                q = decide(e, r.outcome == OUTCOME_DENIED ? "untrusted" : "failed", NULL, r.reason);
        /* Borrowed, not the result's to free. */
        r.name = r.path = NULL;
        return q;
}

static int names_json(const Plan *plan, const size_t *idx, size_t n, sd_json_variant **ret) {
        int r = sd_json_variant_new_array(ret, NULL, 0);

        for (size_t k = 0; r >= 0 && k < n; k++)
                r = sd_json_variant_append_arrayb(ret, SD_JSON_BUILD_STRING(plan->specs[idx[k]].name));
        return r;
}

static int explain_module(Manager *m, const Plan *plan, const ModuleVerdict *v, size_t i, Explanation *e,
                          bool *ret_live, sd_json_variant **array) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *requires = NULL, *after = NULL, *origin = NULL;
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        const ModuleSpec *s = plan->specs + i;
        const PolicyRule *pr = policy_chain_rule(v, i);
        ModuleState state = MODULE_STATE_BUILTIN;
        int q;

        if (s->path && kernel_module_state(s->name, &state) < 0)
                state = MODULE_STATE_ABSENT;
        *ret_live = state == MODULE_STATE_LIVE || state == MODULE_STATE_BUILTIN;
        if ((pr && policy_rule_describe(pr, &rule) < 0) || (v[i].denied && policy_chain(plan, v, i, &reason) < 0))
                return -ENOMEM;
        if (s->path && !*ret_live && (!v[i].denied || m->config.policy.mode == POLICY_PERMISSIVE)) {
                q = explain_origin(m, s, e, &origin);
                if (q < 0)
                        return q;
        }
        q = names_json(plan, s->requires, s->n_requires, &requires);
        if (q >= 0)
                q = names_json(plan, s->after, s->n_after, &after);
        if (q < 0)
                return q;
        return sd_json_variant_append_arraybo(
                        array,
                        SD_JSON_BUILD_PAIR_STRING("name", s->name),
                        SD_JSON_BUILD_PAIR_STRING("role", role_to_string(s->role)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!s->path, "path", SD_JSON_BUILD_STRING(s->path)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!s->options, "options", SD_JSON_BUILD_STRING(s->options)),
                        SD_JSON_BUILD_PAIR_VARIANT("requires", requires),
                        SD_JSON_BUILD_PAIR_VARIANT("after", after),
                        SD_JSON_BUILD_PAIR_STRING("state", module_state_to_string(state)),
                        SD_JSON_BUILD_PAIR_STRING("policy", v[i].denied ? "deny" : "allow"),
                        SD_JSON_BUILD_PAIR_CONDITION(!!rule, "rule", SD_JSON_BUILD_STRING(rule)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!reason, "reason", SD_JSON_BUILD_STRING(reason)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!origin, "origin", SD_JSON_BUILD_VARIANT(origin)));
}

static int explain_key(Manager *m, const char *key, RequestSource source, Explanation *e, const char **ret) {
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        PolicyVerdict v = policy_check_request(&m->config.policy, source, key);

        *ret = v.verdict == VERDICT_DENY ? "deny" : "allow";
        if (v.verdict == VERDICT_ALLOW)
                return 0;
        if (policy_rule_describe(v.rule, &rule) < 0 || asprintf(&reason, "request %s denied by %s", key, rule) < 0)
                return -ENOMEM;
        return decide(e, denied_verdict(m), rule, reason);
}

static int explain_parameters(Manager *m, const Plan *plan, const char *parameters, Explanation *e) {
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        const char *word;
        char buf[MODULE_PARAMETERS_MAX + 1];
        size_t n_requested = 0;

        for (size_t i = 0; i < plan->n_specs; i++)
                n_requested += plan->specs[i].role == ROLE_REQUESTED;
        /* As Load answers: parameters are for one module. */
        if (parameters && *parameters && n_requested > 1)
                return decide(e, "denied", NULL, "parameters are for one module, and this request matches several");

        for (size_t i = 0; parameters && *parameters && i < plan->n_specs; i++) {
                const ModuleSpec *s = plan->specs + i;
                PolicyVerdict v;

                if (s->role != ROLE_REQUESTED)
                        continue;
                v = policy_check_parameters(&m->config.policy, s->name, s->options, parameters, buf, sizeof(buf),
                                            &word);
                if (v.verdict == VERDICT_ALLOW)
                        continue;
                if ((v.rule && policy_rule_describe(v.rule, &rule) < 0) ||
                    asprintf(&reason, "%s is not allowed for %s%s", word ?: parameters, s->name,
                             v.admin_option ? ": it would override the administrator's option" : "") < 0)
                        return -ENOMEM;
                return decide(e, denied_verdict(m), rule, reason);
        }
        return 0;
}

static int resolve(Manager *m, const LoadParameters *p, const Plan **ret, Plan **ret_owned) {
        int r = manager_refresh_index(m);

        if (r < 0)
                return r;
        if (p->path) {
                r = resolver_plan_path(m->resolver, p->path, ret_owned);
                *ret = *ret_owned;
                return r;
        }
        return resolver_plan_key(m->resolver, p->name ?: p->modalias, ret);
}

int explain_request(Manager *m, const LoadParameters *p, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *modules = NULL;
        _cleanup_(explanation_done) Explanation e = {};
        _cleanup_(plan_freep) Plan *owned = NULL;
        _cleanup_free_ ModuleVerdict *v = NULL;
        const char *key = p->name ?: p->modalias, *key_policy = NULL;
        RequestSource source = p->context.source;
        const Plan *plan = NULL;
        bool all_live = true;
        size_t first;
        int r;

        /* A Load is refused before anything else once the kernel is sealed; the rest still says what
         * the policy and the files would have decided. */
        if (seal_refuses(m) && decide(&e, "sealed", NULL, m->seal.request ? "the kernel is being sealed" :
                                      "the kernel is sealed (kernel.modules_disabled=1)") < 0)
                return -ENOMEM;
        if (key && explain_key(m, key, source, &e, &key_policy) < 0)
                return -ENOMEM;
        r = sd_json_variant_new_array(&modules, NULL, 0);
        if (r < 0)
                return r;
        r = resolve(m, p, &plan, &owned);
        if (r == -ENOENT || r == -EINVAL || (r >= 0 && (p->name || p->path) && plan->key_blacklisted &&
                                             (source == SOURCE_BOOT || source == SOURCE_UDEV)))
                r = decide(&e, "not_found", NULL, r == -EINVAL ? "file name is not a module name" :
                           plan && plan->n_blacklisted + plan->key_blacklisted > 0 ?
                           "only modules that modprobe.d blacklists match" : "no module matches");
        else if (r == -ELOOP)
                r = decide(&e, "failed", NULL, "the module index has a dependency loop");
        else if (r >= 0) {
                r = policy_judge_plan(&m->config.policy, source, plan, &v, &first);
                if (r >= 0 && first != SIZE_MAX) {
                        _cleanup_free_ char *rule = NULL, *reason = NULL;

                        if (policy_rule_describe(policy_chain_rule(v, first), &rule) < 0 ||
                            policy_chain(plan, v, first, &reason) < 0)
                                return -ENOMEM;
                        r = decide(&e, denied_verdict(m), rule, reason);
                }
                if (r >= 0)
                        r = explain_parameters(m, plan, p->parameters, &e);
                for (size_t i = 0; r >= 0 && i < plan->n_specs; i++) {
                        bool live;

                        r = explain_module(m, plan, v, i, &e, &live, &modules);
                        if (plan->specs[i].role == ROLE_REQUESTED && !live)
                                all_live = false;
                }
        }
        if (r < 0)
                return r;
        if (!e.verdict)
                e.verdict = all_live && plan && plan->n_specs > 0 ? "already_loaded" : "load";

        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_STRING("verdict", e.verdict),
                        SD_JSON_BUILD_PAIR_CONDITION(!!e.rule, "rule", SD_JSON_BUILD_STRING(e.rule)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!e.reason, "reason", SD_JSON_BUILD_STRING(e.reason)),
                        SD_JSON_BUILD_PAIR_STRING("mode", policy_mode_to_string(m->config.policy.mode)),
                        SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest),
                        SD_JSON_BUILD_PAIR_STRING("source", request_source_to_string(source)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!key, "key", SD_JSON_BUILD_STRING(key)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!key_policy, "keyPolicy", SD_JSON_BUILD_STRING(key_policy)),
                        SD_JSON_BUILD_PAIR_VARIANT("modules", modules),
                        SD_JSON_BUILD_PAIR_CONDITION(plan && plan->n_blacklisted > 0, "blacklisted",
                                                     SD_JSON_BUILD_STRV(plan ? plan->blacklisted : NULL)));
}
