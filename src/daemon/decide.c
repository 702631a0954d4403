/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "strv.h"
#include "varlink-errors.h"


static void decision_step_done(DecisionStep *s) {
        free(s->parameter);
        free(s->rule);
        free(s->reason);
        strv_free(s->blacklisted);
        sd_json_variant_unref(s->error_parameters);
}

void load_decision_done(LoadDecision *d) {
        for (size_t i = 0; i < d->n_steps; i++)
                decision_step_done(d->steps + i);
        free(d->steps);
        free(d->modules);
        plan_free(d->plan);
        sd_json_variant_unref(d->denied);
        *d = (LoadDecision) {};
}

static bool permissive(const LoadInput *in) {
        return in->policy->mode == POLICY_PERMISSIVE;
}

static const char *request_key(const LoadInput *in) {
        return in->name ?: in->modalias;
}

/* A new step at the end, zeroed but for what every step has. NULL on -ENOMEM. */
static DecisionStep *step_add(LoadDecision *d, LoadVerdict verdict, const char *error) {
        DecisionStep *a = reallocarray(d->steps, d->n_steps + 1, sizeof(DecisionStep));

        if (!a)
                return NULL;
        d->steps = a;
        a[d->n_steps] = (DecisionStep) { .verdict = verdict, .module = SIZE_MAX, .error = error };
        return a + d->n_steps++;
}

static int decide_seal(const LoadInput *in, LoadDecision *d) {
        DecisionStep *s;

        if (in->seal == KERNEL_UNSEALED)
                return 0;
        /* Answered by seal_refuse(), which counts the repeats: after a seal the kernel goes on asking. */
        s = step_add(d, LOAD_SEALED, MANAGER_ERROR_SEALED);
        if (!s)
                return -ENOMEM;
        return strdup_or_null(in->seal == KERNEL_SEALING ? "the kernel is being sealed" :
                              "the kernel is sealed (kernel.modules_disabled=1)", &s->reason);
}

/* A DenyRequest= refuses the key itself, whatever it would resolve to. */
static int decide_key(const LoadInput *in, LoadDecision *d) {
        const char *key = request_key(in);
        PolicyVerdict v;
        DecisionStep *s;

        if (!key)
                return 0;
        v = policy_check_request(in->policy, in->source, key);
        d->key_policy = v.verdict == VERDICT_DENY ? "deny" : "allow";
        if (v.verdict == VERDICT_ALLOW)
                return 0;
        s = step_add(d, LOAD_DENIED, MANAGER_ERROR_POLICY_DENIED);
        if (!s)
                return -ENOMEM;
        s->would = permissive(in);
        s->record = DECISION_RECORD_POLICY;
        if (policy_rule_describe(v.rule, &s->rule) < 0 ||
            asprintf(&s->reason, "request %s denied by %s", key, s->rule) < 0) {
                s->reason = NULL;
                return -ENOMEM;
        }
        return sd_json_buildo(&s->error_parameters, SD_JSON_BUILD_PAIR_STRING("request", key),
                              SD_JSON_BUILD_PAIR_STRING("rule", s->rule),
                              SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
}

/* The loaders modgate stands in for honour a blacklist for modules named by the boot list
 * (systemd-modules-load) and by udev's rules (udev's kmod builtin), though modprobe does not for a
 * name: so do those requests here, by name or by a file that is that module. The source is the
 * caller's own, checked before. */
static bool blacklist_hides(const LoadInput *in) {
        return (in->name || in->path) && in->plan->key_blacklisted &&
                (in->source == SOURCE_BOOT || in->source == SOURCE_UDEV);
}

/* Not found: as those loaders would answer, "not loaded". one: the module a blacklist hides, else the
 * index's blacklisted matches are named. */
static int decide_not_found(const LoadInput *in, LoadDecision *d, const char *one) {
        const Plan *p = in->plan;
        bool blacklisted = one || (p && p->n_blacklisted > 0);
        DecisionStep *s;

        s = step_add(d, LOAD_NOT_FOUND, MANAGER_ERROR_MODULE_NOT_FOUND);
        if (!s)
                return -ENOMEM;
        s->record = DECISION_RECORD_NOT_FOUND;
        if (one)
                s->blacklisted = strv_copy_n((char **) &one, 1);
        else if (p && p->n_blacklisted > 0)
                s->blacklisted = strv_copy_n(p->blacklisted, p->n_blacklisted);
        if ((blacklisted && !s->blacklisted) ||
            strdup_or_null(blacklisted || (p && p->key_blacklisted) ?
                           "only modules that modprobe.d blacklists match" : "no module matches",
                           &s->reason) < 0)
                return -ENOMEM;
        return sd_json_buildo(
                        &s->error_parameters,
                        SD_JSON_BUILD_PAIR_CONDITION(!!(one ?: in->name), "name",
                                                     SD_JSON_BUILD_STRING(one ?: in->name)),
                        SD_JSON_BUILD_PAIR_CONDITION(!one && !!in->modalias, "modalias",
                                                     SD_JSON_BUILD_STRING(in->modalias)),
                        SD_JSON_BUILD_PAIR_CONDITION(blacklisted, "blacklisted",
                                                     SD_JSON_BUILD_STRV(s->blacklisted)));
}

/* The index failed the request: LoadFailed with no module loaded. error: 0, or the errno to name. */
static int decide_failed(LoadDecision *d, const char *key, const char *reason, int error) {
        DecisionStep *s = step_add(d, LOAD_FAILED, MANAGER_ERROR_LOAD_FAILED);

        if (!s || strdup_or_null(reason, &s->reason) < 0)
                return -ENOMEM;
        return sd_json_buildo(
                        &s->error_parameters,
                        SD_JSON_BUILD_PAIR_STRING("module", key),
                        SD_JSON_BUILD_PAIR_STRING("reason", reason),
                        SD_JSON_BUILD_PAIR_CONDITION(error != 0, "errno", SD_JSON_BUILD_INTEGER(error)),
                        SD_JSON_BUILD_PAIR_CONDITION(error != 0, "errnoName",
                                                     SD_JSON_BUILD_STRING(strerrorname_np(error))),
                        SD_JSON_BUILD_PAIR_EMPTY_ARRAY("modules"));
}

/* What the index made of the request. Returns 1 when there is a plan to judge. */
static int decide_resolution(const LoadInput *in, LoadDecision *d) {
        const char *key = request_key(in) ?: in->path;
        DecisionStep *s;
        int r = in->resolve_error;

        if (in->index_error < 0) {
                r = decide_failed(d, key, "the module index (modules.*.bin) cannot be read: missing or "
                                  "corrupt; nothing was loaded", -in->index_error);
                return r < 0 ? r : 0;
        }
        if (in->path && r == -EINVAL) {
                s = step_add(d, LOAD_INVALID_PATH, MANAGER_ERROR_INVALID_PATH);
                if (!s || strdup_or_null("file name is not a module name", &s->reason) < 0)
                        return -ENOMEM;
                return sd_json_buildo(&s->error_parameters, SD_JSON_BUILD_PAIR_STRING("path", in->path),
                                      SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
        }
        if (!in->path && r == -ENOENT)
                return decide_not_found(in, d, NULL);
        if (!in->path && r == -ELOOP) {
                r = decide_failed(d, key, "the module index has a dependency loop", 0);
                return r < 0 ? r : 0;
        }
        if (r < 0) {
                if (!step_add(d, LOAD_ERROR, NULL))
                        return -ENOMEM;
                d->error = r;
                return 0;
        }

        /* A file is the module its name names: the same blacklist as a request by that name. */
        if (blacklist_hides(in))
                return decide_not_found(in, d, in->path ? in->plan->specs[in->plan->n_specs - 1].name :
                                        in->name);
        return 1;
}

/* A policy step on plan module i, denied itself or through a hard dependency. */
static int module_step(const LoadInput *in, LoadDecision *d, size_t i, LoadVerdict verdict, bool would) {
        const ModuleVerdict *v = d->modules;
        DecisionStep *s = step_add(d, verdict, MANAGER_ERROR_POLICY_DENIED);

        if (!s)
                return -ENOMEM;
        s->would = would;
        s->record = DECISION_RECORD_POLICY;
        s->keep = true;
        s->module = i;
        if (policy_rule_describe(policy_chain_rule(v, i), &s->rule) < 0 ||
            policy_chain(in->plan, v, i, &s->reason) < 0)
                return -ENOMEM;
        return sd_json_buildo(&s->error_parameters,
                              SD_JSON_BUILD_PAIR_STRING("module", in->plan->specs[i].name),
                              SD_JSON_BUILD_PAIR_STRING("rule", s->rule),
                              SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
}

/* The policy's word on every module of the plan, before anything loads. A denied requested module
 * (itself or through a hard dependency) denies the request; a denied softdep is left out, and
 * listed for the reply. In permissive mode each is a would-deny and nothing changes. */
static int decide_plan(const LoadInput *in, LoadDecision *d) {
        const Plan *plan = in->plan;
        _cleanup_free_ bool *drop = NULL;
        const DecisionStep *s;
        size_t first;
        int r;

        r = policy_judge_plan(in->policy, in->source, plan, &d->modules, &first);
        if (r < 0)
                return r;
        if (first != SIZE_MAX && !permissive(in))
                return module_step(in, d, first, LOAD_DENIED, false);

        drop = calloc(plan->n_specs ?: 1, sizeof(bool));
        if (!drop)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_specs; i++) {
                if (!d->modules[i].denied)
                        continue;
                r = module_step(in, d, i, i == first ? LOAD_DENIED : LOAD_ALLOW, permissive(in));
                if (r < 0)
                        return r;
                if (permissive(in))
                        continue;
                drop[i] = true;
                s = d->steps + d->n_steps - 1;
                r = sd_json_variant_append_arraybo(&d->denied,
                                                   SD_JSON_BUILD_PAIR_STRING("name", plan->specs[i].name),
                                                   SD_JSON_BUILD_PAIR_STRING("rule", s->rule),
                                                   SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
                if (r < 0)
                        return r;
        }
        if (!d->denied)
                return 0;
        return plan_filter(plan, drop, &d->plan);
}

/* Parameters go to the one module a request names, within its [Parameters] rule, and never over an
 * option the administrator set. */
static int decide_parameters(const LoadInput *in, LoadDecision *d) {
        const Plan *plan = in->plan;
        const ModuleSpec *spec = NULL;
        const char *word = NULL;
        char buf[MODULE_PARAMETERS_MAX + 1];
        PolicyVerdict v;
        DecisionStep *s;
        int k = -1;

        if (!in->parameters || !in->parameters[0])
                return 0;
        for (size_t i = 0; i < plan->n_specs; i++) {
                if (plan->specs[i].role != ROLE_REQUESTED)
                        continue;
                if (spec) {
                        s = step_add(d, LOAD_PARAMETER_DENIED, MANAGER_ERROR_PARAMETER_DENIED);
                        if (!s || strdup_or_null(in->parameters, &s->parameter) < 0 ||
                            strdup_or_null("parameters are for one module, and this request matches "
                                           "several: ask for the module by name", &s->reason) < 0)
                                return -ENOMEM;
                        s->module = spec - plan->specs;
                        return sd_json_buildo(&s->error_parameters,
                                              SD_JSON_BUILD_PAIR_STRING("module", spec->name),
                                              SD_JSON_BUILD_PAIR_STRING("parameter", s->parameter),
                                              SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
                }
                spec = plan->specs + i;
        }
        if (!spec)
                return 0;

        v = policy_check_parameters(in->policy, spec->name, spec->options, in->parameters, buf, sizeof(buf),
                                    &word);
        if (v.verdict == VERDICT_ALLOW)
                return 0;
        s = step_add(d, LOAD_PARAMETER_DENIED, MANAGER_ERROR_PARAMETER_DENIED);
        if (!s || strdup_or_null(word ?: in->parameters, &s->parameter) < 0)
                return -ENOMEM;
        s->would = permissive(in);
        s->record = DECISION_RECORD_POLICY;
        s->module = spec - plan->specs;
        if (v.admin_option)
                k = asprintf(&s->reason, "%s would override the administrator's option for %s (\"%s\", "
                             "from modprobe.d or the kernel command line)", s->parameter, spec->name,
                             spec->options);
        else if (policy_rule_describe(v.rule, &s->rule) >= 0)
                k = asprintf(&s->reason, "%s is not allowed for %s by %s", s->parameter, spec->name,
                             s->rule);
        if (k < 0) {
                s->reason = NULL;
                return -ENOMEM;
        }
        return sd_json_buildo(&s->error_parameters, SD_JSON_BUILD_PAIR_STRING("module", spec->name),
                              SD_JSON_BUILD_PAIR_STRING("parameter", s->parameter),
                              SD_JSON_BUILD_PAIR_CONDITION(!!s->rule, "rule", SD_JSON_BUILD_STRING(s->rule)),
                              SD_JSON_BUILD_PAIR_STRING("reason", s->reason));
}

static int decide_all(const LoadInput *in, LoadDecision *d) {
        int r;

        r = decide_seal(in, d);
        if (r >= 0)
                r = decide_key(in, d);
        if (r < 0)
                return r;
        if (!in->resolved) {
                /* Nothing else can refuse before the index is asked: look there only when it must. */
                for (size_t i = 0; i < d->n_steps; i++)
                        if (!d->steps[i].would)
                                return 0;
                d->needs_plan = true;
                return 0;
        }
        r = decide_resolution(in, d);
        if (r <= 0)
                return r;
        r = decide_plan(in, d);
        if (r >= 0)
                r = decide_parameters(in, d);
        return r;
}

int load_decide(const LoadInput *in, LoadDecision *ret) {
        LoadDecision d = {};
        int r;

        assert(in && in->policy && ret);
        assert(!!in->name + !!in->modalias + !!in->path == 1);

        r = decide_all(in, &d);
        if (r < 0) {
                load_decision_done(&d);
                return r;
        }
        /* The first step that refuses and is not a would-deny: a Load stops there. */
        d.decided = d.n_steps;
        for (size_t i = 0; i < d.n_steps && d.decided == d.n_steps; i++)
                if (d.steps[i].verdict != LOAD_ALLOW && !d.steps[i].would)
                        d.decided = i;
        d.verdict = d.decided < d.n_steps ? d.steps[d.decided].verdict : LOAD_ALLOW;
        *ret = d;
        return 0;
}

const DecisionStep *load_decision_first(const LoadDecision *d) {
        assert(d);

        for (size_t i = 0; i < d->n_steps; i++)
                if (d->steps[i].verdict != LOAD_ALLOW)
                        return d->steps + i;
        return NULL;
}

void module_early_done(ModuleEarly *e) {
        free(e->reason);
        *e = (ModuleEarly) {};
}

static int early_done(ModuleEarly *e, Outcome o, int error, const char *reason) {
        *e = (ModuleEarly) { .verdict = EARLY_DONE, .outcome = o, .error = error };
        return strdup_or_null(reason, &e->reason);
}

bool modinfo_needed_before_load(Evidence evidence, bool fsverity, bool signer_rule) {
        /* A signer rule decides on the signature, which is inside the compressed file: read before. */
        if (signer_rule)
                return true;
        /* A manifest lists the SHA-256 of each path as the kernel package installed it, and a dm-verity
         * device fixes every byte of the file system, names with contents: there the file's name is as
         * good as the name inside it (the kernel's build names a module after its object file), and
         * costs no decompression. Whoever could put another module's bytes under a name could as well
         * have written the manifest or built the image. An allowed fs-verity digest vouches for bytes
         * wherever they are, under any name; read-only and ownership evidence say nothing of which
         * bytes a name holds: there the name inside the file is read before the load. */
        switch (evidence) {
        case EVIDENCE_MANIFEST:
                return false;
        case EVIDENCE_VERITY:
                return fsverity;
        default:
                return true;
        }
}

int module_decide_early(const ModuleSpec *spec, int state_error, ModuleState state,
                        const char *denial_reason, int denial_error, ModuleEarly *ret) {
        ModuleEarly e = {};
        int r;

        assert(spec && ret);

        if (!spec->path)
                return early_done(ret, OUTCOME_BUILTIN, 0, NULL);
        if (state_error < 0) {
                if (asprintf(&e.reason, "cannot read module state: %s", strerrordesc_np(-state_error)) < 0)
                        return -ENOMEM;
                *ret = (ModuleEarly) { .verdict = EARLY_DONE, .outcome = OUTCOME_FAILED,
                                       .error = -state_error, .reason = e.reason };
                return 0;
        }
        if (state == MODULE_STATE_LIVE)
                return early_done(ret, OUTCOME_ALREADY_LOADED, 0, NULL);
        if (state == MODULE_STATE_BUILTIN)
                return early_done(ret, OUTCOME_BUILTIN, 0, NULL);
        if (state == MODULE_STATE_GOING)
                return early_done(ret, OUTCOME_FAILED, EBUSY, "module is being removed");

        /* Before waiting for another loader: if that one gives up, this job loads the module itself,
         * and must have been refused by then if it is to be refused. */
        if (spec->install_command) {
                if (asprintf(&e.reason, "modprobe.d has an install command for this module (%s); modgate "
                             "never runs commands", spec->install_command) < 0)
                        return -ENOMEM;
                *ret = (ModuleEarly) { .verdict = EARLY_DONE, .outcome = OUTCOME_DENIED, .error = EPERM,
                                       .reason = e.reason, .command = true };
                return 0;
        }
        if (denial_reason) {
                r = early_done(ret, OUTCOME_DENIED, denial_error, denial_reason);
                ret->cached = true;
                return r;
        }
        *ret = (ModuleEarly) { .verdict = state == MODULE_STATE_COMING ? EARLY_COMING : EARLY_LOAD };
        return 0;
}
