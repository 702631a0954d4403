/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "kernel.h"
#include "log.h"
#include "macro.h"
#include "method-explain.h"
#include "method-load.h"
#include "method-seal.h"
#include "module-loader.h"
#include "policy.h"
#include "reader-pool.h"
#include "record-journal.h"
#include "strv.h"

typedef struct Explanation {
        const char *verdict;    /* NULL until something decides */
        char *rule;
        char *reason;
} Explanation;

static void explanation_done(Explanation *e) {
        free(e->rule);
        free(e->reason);
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
                ret, SD_JSON_BUILD_PAIR_BOOLEAN("trusted", !r->reason),
                SD_JSON_BUILD_PAIR_CONDITION(r->trusted, "evidence",
                                             SD_JSON_BUILD_STRING(evidence_to_string(r->evidence))),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->reason, "reason", SD_JSON_BUILD_STRING(r->reason)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "fstype",
                                             SD_JSON_BUILD_STRING(r->origin.fstype)),
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

/* A module of the reply: its entry, made on the event loop, and the file checks a load would make,
 * made on the reader pool (the entry's "origin", added when they are done). */
typedef struct ExplainModule {
        sd_json_variant *entry;
        bool check;
        ModuleResult result;    /* name, path and role: the file to check; then what the checks found */
} ExplainModule;

/* An Explain between the event loop and the reader pool: everything the reply needs, owned. */
typedef struct ExplainWork {
        sd_varlink *link;
        const LoadContext *ctx;
        Explanation e;
        ExplainModule *modules;
        size_t n_modules;
        int error;              /* of the checks: -ENOMEM */
        bool all_live;
        bool have_specs;
        PolicyMode mode;
        char policy_digest[SHA256_HEX_SIZE];
        RequestSource source;
        char *key;
        const char *key_policy;
        char **blacklisted;
} ExplainWork;

static ExplainWork *explain_work_free(ExplainWork *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_modules; i++) {
                sd_json_variant_unref(w->modules[i].entry);
                module_result_done(&w->modules[i].result);
        }
        free(w->modules);
        explanation_done(&w->e);
        sd_varlink_unref(w->link);
        free(w->key);
        strv_free(w->blacklisted);
        free(w);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ExplainWork *, explain_work_free);

/* The file's checks, for the module's "origin": what it is and where it comes from, decided as a load
 * would decide. */
static int explain_origin(ExplainModule *em, Explanation *e) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *origin = NULL;
        const ModuleResult *r = &em->result;
        int q;

        q = origin_json(r, &origin);
        if (q >= 0)
                q = sd_json_variant_set_field(&em->entry, "origin", origin);
        if (q >= 0 && r->reason)
                q = decide(e, r->outcome == OUTCOME_DENIED ? "untrusted" : "failed", NULL, r->reason);
        return q;
}

static int names_json(const Plan *plan, const size_t *idx, size_t n, sd_json_variant **ret) {
        int r = sd_json_variant_new_array(ret, NULL, 0);

        for (size_t k = 0; r >= 0 && k < n; k++)
                r = sd_json_variant_append_arrayb(ret, SD_JSON_BUILD_STRING(plan->specs[idx[k]].name));
        return r;
}

static int explain_module(Manager *m, const Plan *plan, const ModuleVerdict *v, size_t i, RequestSource source,
                          bool *ret_live, ExplainModule *em) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *requires = NULL, *after = NULL;
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        const ModuleSpec *s = plan->specs + i;
        const PolicyRule *pr = policy_chain_rule(v, i);
        ModuleState state = MODULE_STATE_BUILTIN;
        int q;

        if (s->path && kernel_module_state(s->name, &state) < 0)
                state = MODULE_STATE_ABSENT;
        *ret_live = state == MODULE_STATE_LIVE || state == MODULE_STATE_BUILTIN;
        if ((pr && policy_rule_describe(pr, &rule) < 0) ||
            (v[i].denied && policy_chain(plan, v, i, &reason) < 0))
                return -ENOMEM;
        if (s->path && !*ret_live && (!v[i].denied || m->config.policy.mode == POLICY_PERMISSIVE)) {
                em->check = true;
                em->result.role = s->role;
                em->result.source = source;
                if (strdup_or_null(s->name, &em->result.name) < 0 ||
                    strdup_or_null(s->path, &em->result.path) < 0)
                        return -ENOMEM;
        }
        q = names_json(plan, s->requires, s->n_requires, &requires);
        if (q >= 0)
                q = names_json(plan, s->after, s->n_after, &after);
        if (q < 0)
                return q;
        return sd_json_buildo(
                &em->entry, SD_JSON_BUILD_PAIR_STRING("name", s->name),
                SD_JSON_BUILD_PAIR_STRING("role", role_to_string(s->role)),
                SD_JSON_BUILD_PAIR_CONDITION(!!s->path, "path", SD_JSON_BUILD_STRING(s->path)),
                SD_JSON_BUILD_PAIR_CONDITION(!!s->options, "options", SD_JSON_BUILD_STRING(s->options)),
                SD_JSON_BUILD_PAIR_VARIANT("requires", requires), SD_JSON_BUILD_PAIR_VARIANT("after", after),
                SD_JSON_BUILD_PAIR_STRING("state", module_state_to_string(state)),
                SD_JSON_BUILD_PAIR_STRING("policy", v[i].denied ? "deny" : "allow"),
                SD_JSON_BUILD_PAIR_CONDITION(!!rule, "rule", SD_JSON_BUILD_STRING(rule)),
                SD_JSON_BUILD_PAIR_CONDITION(!!reason, "reason", SD_JSON_BUILD_STRING(reason)));
}

/* The verdict of a step of the decision, in Explain's words. */
static const char *step_verdict(const DecisionStep *s) {
        switch (s->verdict) {
        case LOAD_SEALED:
                return "sealed";
        case LOAD_NOT_FOUND:
        case LOAD_INVALID_PATH:
                return "not_found";
        case LOAD_FAILED:
                return "failed";
        default:
                return s->would ? "would_deny" : "denied";
        }
}

/* What the event loop knows: the policy, the index, the modules' states. The files are checked after,
 * on the reader pool. */
static int explain_prepare(Manager *m, const LoadParameters *p, ExplainWork *w) {
        _cleanup_(load_judgement_done) LoadJudgement j = {};
        const DecisionStep *first;
        const Plan *plan;
        int r;

        w->ctx = &m->load_context;
        w->mode = m->config.policy.mode;
        memcpy(w->policy_digest, m->policy_digest, sizeof(w->policy_digest));
        w->source = p->context.source;
        w->all_live = true;
        if (strdup_or_null(p->name ?: p->modalias, &w->key) < 0)
                return -ENOMEM;

        /* A Load is refused before anything else once the kernel is sealed; the rest still says what
         * the policy and the files would have decided. */
        r = load_judge(m, p, seal_kernel(m), true, &j);
        if (r < 0)
                return r;
        if (j.input.index_error < 0)
                return j.input.index_error;
        if (j.decision.error < 0)
                return j.decision.error;
        w->key_policy = j.decision.key_policy;
        first = load_decision_first(&j.decision);
        if (first && decide(&w->e, step_verdict(first), first->rule, first->reason) < 0)
                return -ENOMEM;

        plan = j.input.plan;
        if (plan && j.input.resolve_error >= 0 && plan->n_blacklisted > 0) {
                w->blacklisted = strv_copy_n(plan->blacklisted, plan->n_blacklisted);
                if (!w->blacklisted)
                        return -ENOMEM;
        }
        /* Not found: nothing to show of the modules. */
        if (!j.decision.modules)
                return 0;

        w->have_specs = plan->n_specs > 0;
        w->modules = calloc(plan->n_specs ?: 1, sizeof(ExplainModule));
        if (!w->modules)
                return -ENOMEM;
        w->n_modules = plan->n_specs;
        for (size_t i = 0; i < plan->n_specs; i++) {
                bool live;

                r = explain_module(m, plan, j.decision.modules, i, w->source, &live, w->modules + i);
                if (r < 0)
                        return r;
                if (plan->specs[i].role == ROLE_REQUESTED && !live)
                        w->all_live = false;
        }
        return 0;
}

/* On the reader pool: the checks a load would make on each file, on the same pinned roots. */
static void explain_check_files(void *userdata) {
        ExplainWork *w = userdata;

        for (size_t i = 0; w->error >= 0 && i < w->n_modules; i++)
                if (w->modules[i].check)
                        w->error = loader_check(w->ctx, &w->modules[i].result);
}
static int explain_reply(ExplainWork *w, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *modules = NULL;
        int r;

        r = sd_json_variant_new_array(&modules, NULL, 0);
        for (size_t i = 0; r >= 0 && i < w->n_modules; i++) {
                if (w->modules[i].check)
                        r = explain_origin(w->modules + i, &w->e);
                if (r >= 0)
                        r = sd_json_variant_append_array(&modules, w->modules[i].entry);
        }
        if (r < 0)
                return r;
        if (!w->e.verdict)
                w->e.verdict = w->all_live && w->have_specs ? "already_loaded" : "load";

        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_STRING("verdict", w->e.verdict),
                        SD_JSON_BUILD_PAIR_CONDITION(!!w->e.rule, "rule", SD_JSON_BUILD_STRING(w->e.rule)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!w->e.reason, "reason",
                                                     SD_JSON_BUILD_STRING(w->e.reason)),
                        SD_JSON_BUILD_PAIR_STRING("mode", policy_mode_to_string(w->mode)),
                        SD_JSON_BUILD_PAIR_STRING("policyDigest", w->policy_digest),
                        SD_JSON_BUILD_PAIR_STRING("source", request_source_to_string(w->source)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!w->key, "key", SD_JSON_BUILD_STRING(w->key)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!w->key_policy, "keyPolicy",
                                                     SD_JSON_BUILD_STRING(w->key_policy)),
                        SD_JSON_BUILD_PAIR_VARIANT("modules", modules),
                        SD_JSON_BUILD_PAIR_CONDITION(!!w->blacklisted, "blacklisted",
                                                     SD_JSON_BUILD_STRV(w->blacklisted)));
}

/* On the event loop: the reply, to a client that may have gone meanwhile (then nobody reads it). */
static void explain_done(void *userdata, bool cancelled) {
        _cleanup_(explain_work_freep) ExplainWork *w = userdata;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *reply = NULL;
        int r;

        if (cancelled)
                return;
        /* The checks may have pinned a root. */
        journal_record_root_pins(w->ctx->roots, w->ctx->n_roots);
        r = w->error < 0 ? w->error : explain_reply(w, &reply);
        reader_reply(w->link, r, reply, "explain the request");
}

int explain_start(Manager *m, sd_varlink *link, const LoadParameters *p) {
        _cleanup_(explain_work_freep) ExplainWork *w = NULL;
        int r;

        assert(m);

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        r = explain_prepare(m, p, w);
        if (r < 0)
                return log_error_errno(r, "Failed to explain the request: %m");

        w->link = sd_varlink_ref(link);
        r = reader_pool_submit_call(m->readers, link, explain_check_files, explain_done, w);
        if (r <= 0)
                return r;
        TAKE_PTR(w);
        return 0;
}
