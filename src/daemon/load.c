/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Load, stage by stage: the request's key, its plan, the policy on the plan and on the parameters,
 * then the jobs, and the answer when they are done. Seal's final list goes the same way. */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "load.h"
#include "log.h"
#include "policy.h"
#include "strv.h"

/* A Load call in flight: it waits for its jobs, which may be shared with other calls. */
typedef struct LoadRequest {
        Manager *manager;
        sd_varlink *link;               /* NULL once answered */
        Job **jobs;
        size_t n_jobs;
        size_t n_pending;
        char **blacklisted;
        sd_json_variant *denied;        /* softdeps the policy left out: {name, rule, reason} */
        sd_event_source *timeout;
        uint64_t arrival_usec;          /* when the call came: its latency, once answered */
        struct LoadRequest *prev, *next;
} LoadRequest;

static void load_request_free(LoadRequest *req) {
        Manager *m = req->manager;

        if (req->prev)
                req->prev->next = req->next;
        else
                m->requests = req->next;
        if (req->next)
                req->next->prev = req->prev;
        m->n_requests--;
        manager_touch(m);

        sd_event_source_disable_unref(req->timeout);
        sd_varlink_unref(req->link);
        jobs_unref(req->jobs, req->n_jobs);
        strv_free(req->blacklisted);
        sd_json_variant_unref(req->denied);
        free(req);
}

void manager_free_requests(Manager *m) {
        while (m->requests)
                load_request_free(m->requests);
        m->reply_writer = sd_event_source_disable_unref(m->reply_writer);
        for (size_t i = 0; i < m->n_replied; i++)
                sd_varlink_unref(m->replied[i]);
        free(m->replied);
        m->replied = NULL;
        m->n_replied = m->n_replied_allocated = 0;
}

/* The replies to the waiters of a job, written in the iteration after the one that finished it, all
 * of them. Left to sd-varlink, each link's write waits for an iteration of its own, and every
 * iteration of sd-event runs every connection's prepare callback: N waiters cost O(N²), and the
 * last of 1,536 heard seconds after the first. Each link gets what its own event sources would
 * have done (sd_varlink_process(): the write, which does not block; then, with nothing left to
 * write, a look for more input), here at the top of the loop as there. */
static int on_write_replies(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        while (m->n_replied > 0) {
                sd_varlink *link = m->replied[--m->n_replied];

                /* The second call finds nothing to write and turns the link's own deferred processing
                 * off again, so that it does not take an iteration of its own after this one. */
                if (sd_varlink_process(link) > 0)
                        (void) sd_varlink_process(link);
                sd_varlink_unref(link);
        }
        return 0;
}

/* Takes link's reference. */
static void reply_write_soon(Manager *m, sd_varlink *link) {
        int r = 0;

        if (m->n_replied == m->n_replied_allocated) {
                size_t n = MAX(m->n_replied_allocated * 2, (size_t) 16);
                sd_varlink **a = reallocarray(m->replied, n, sizeof(*a));

                if (!a)
                        r = -ENOMEM;
                else {
                        m->replied = a;
                        m->n_replied_allocated = n;
                }
        }
        if (r >= 0 && !m->reply_writer)
                r = sd_event_add_defer(m->event, &m->reply_writer, on_write_replies, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->reply_writer, SD_EVENT_ONESHOT);
        if (r < 0) {
                /* sd-varlink writes it in its own time. */
                sd_varlink_unref(link);
                return;
        }
        m->replied[m->n_replied++] = link;
}

int module_result_build_json(const ModuleResult *r, sd_json_variant **array) {
        return sd_json_variant_append_arraybo(
                        array,
                        SD_JSON_BUILD_PAIR_STRING("name", r->name),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->path, "path", SD_JSON_BUILD_STRING(r->path)),
                        SD_JSON_BUILD_PAIR_STRING("outcome", outcome_to_string(r->outcome)),
                        SD_JSON_BUILD_PAIR_STRING("role", role_to_string(r->role)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->parameters, "parameters",
                                                     SD_JSON_BUILD_STRING(r->parameters)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!r->reason, "reason", SD_JSON_BUILD_STRING(r->reason)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->error != 0, "errno", SD_JSON_BUILD_INTEGER(r->error)),
                        SD_JSON_BUILD_PAIR_CONDITION(r->error != 0, "errnoName",
                                                     SD_JSON_BUILD_STRING(strerrorname_np(r->error))));
}

/* The first module whose failure fails the request: softdeps may fail alone. Plan order puts a
 * dependency before its users, so this is the cause rather than a consequence. */
static const ModuleResult *first_failure(LoadRequest *req) {
        for (size_t i = 0; i < req->n_jobs; i++) {
                const ModuleResult *r = job_result(req->jobs[i]);

                if (!outcome_is_success(r->outcome) && r->role != ROLE_SOFTDEP_PRE &&
                    r->role != ROLE_SOFTDEP_POST)
                        return r;
        }
        return NULL;
}

static int load_request_reply(LoadRequest *req) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *array = NULL;
        const ModuleResult *f;
        int r;

        r = sd_json_variant_new_array(&array, NULL, 0);
        for (size_t i = 0; r >= 0 && i < req->n_jobs; i++)
                r = module_result_build_json(job_result(req->jobs[i]), &array);
        if (r < 0)
                return r;

        f = first_failure(req);
        if (!f)
                return sd_varlink_replybo(
                                req->link,
                                SD_JSON_BUILD_PAIR_VARIANT("modules", array),
                                SD_JSON_BUILD_PAIR_CONDITION(!!req->blacklisted && !!req->blacklisted[0],
                                                             "blacklisted", SD_JSON_BUILD_STRV(req->blacklisted)),
                                SD_JSON_BUILD_PAIR_CONDITION(!!req->denied, "denied",
                                                             SD_JSON_BUILD_VARIANT(req->denied)));
        if (f->command)
                return sd_varlink_errorbo(req->link, "io.modgate.Manager.InstallCommandRefused",
                                          SD_JSON_BUILD_PAIR_STRING("module", f->name),
                                          SD_JSON_BUILD_PAIR_STRING("command", f->command),
                                          SD_JSON_BUILD_PAIR_VARIANT("modules", array));
        if (f->outcome == OUTCOME_DENIED)
                return sd_varlink_errorbo(req->link, "io.modgate.Manager.UntrustedOrigin",
                                          SD_JSON_BUILD_PAIR_STRING("module", f->name),
                                          SD_JSON_BUILD_PAIR_CONDITION(!!f->path, "path", SD_JSON_BUILD_STRING(f->path)),
                                          SD_JSON_BUILD_PAIR_STRING("reason", f->reason ?: "untrusted origin"),
                                          SD_JSON_BUILD_PAIR_VARIANT("modules", array));
        return sd_varlink_errorbo(req->link, "io.modgate.Manager.LoadFailed",
                                  SD_JSON_BUILD_PAIR_STRING("module", f->name),
                                  SD_JSON_BUILD_PAIR_STRING("reason", f->reason ?: "load failed"),
                                  SD_JSON_BUILD_PAIR_CONDITION(f->error != 0, "errno", SD_JSON_BUILD_INTEGER(f->error)),
                                  SD_JSON_BUILD_PAIR_CONDITION(f->error != 0, "errnoName",
                                                               SD_JSON_BUILD_STRING(strerrorname_np(f->error))),
                                  SD_JSON_BUILD_PAIR_VARIANT("modules", array));
}

/* later: answered outside its method call, when a job finished; the reply is written with the others
 * of that iteration. */
static void load_request_answer(LoadRequest *req, bool later) {
        int r;

        if (!req->link)
                return;
        latency_add(&req->manager->latency, now_usec() - req->arrival_usec);
        /* sd_varlink_error() returns -EBADR once the error is sent, so that methods can return it. */
        r = load_request_reply(req);
        if (r < 0 && r != -EBADR)
                log_debug_errno(r, "Failed to send reply, client gone? %m");
        if (later && (r >= 0 || r == -EBADR))
                reply_write_soon(req->manager, TAKE_PTR(req->link));
        req->link = sd_varlink_unref(req->link);
}

static void on_job_done(Job *j, void *userdata) {
        LoadRequest *req = userdata;

        if (--req->n_pending > 0)
                return;
        load_request_answer(req, true);
        load_request_free(req);
}

static int on_request_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *pending = NULL;
        LoadRequest *req = userdata;
        int r = 0;

        if (!req->link)
                return 0;

        r = sd_json_variant_new_array(&pending, NULL, 0);
        for (size_t i = 0; r >= 0 && i < req->n_jobs; i++)
                if (!job_is_done(req->jobs[i]))
                        r = sd_json_variant_append_arrayb(&pending,
                                                          SD_JSON_BUILD_STRING(job_result(req->jobs[i])->name));
        if (r >= 0)
                r = sd_varlink_errorbo(req->link, "io.modgate.Manager.Timeout",
                                       SD_JSON_BUILD_PAIR_VARIANT("pending", pending));
        if (r < 0 && r != -EBADR)
                log_debug_errno(r, "Failed to send timeout reply: %m");

        /* The load goes on, and its journal records are still written when it ends. */
        req->link = sd_varlink_unref(req->link);
        return 0;
}


/* Every input is checked, with a named error, before anything is looked up. */
int load_reply_refusal(sd_varlink *link, const LoadParameters *p, const LoadRefusal *f) {
        if (f->field)
                return sd_varlink_error_invalid_parameter_name(link, f->field);
        if (strcmp(f->error, "io.modgate.Manager.InvalidName") == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("name", p->name));
        if (strcmp(f->error, "io.modgate.Manager.InvalidPath") == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("path", p->path),
                                          SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
        return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
}

/* The loaders modgate stands in for honour a blacklist for modules named by the boot list
 * (systemd-modules-load) and by udev's rules (udev's kmod builtin), though modprobe does not for a
 * name: so do those requests here, by name or by a file that is that module. The source is the
 * caller's own, checked before. */
static bool blacklist_hides(const LoadParameters *p, const Plan *plan) {
        return (p->name || p->path) && plan->key_blacklisted &&
                (p->context.source == SOURCE_BOOT || p->context.source == SOURCE_UDEV);
}

/* Answered as those loaders would, "not loaded". */
static int reply_blacklisted(Manager *m, sd_varlink *link, const Requester *who, const char *name) {
        char *one[2] = { (char *) name, NULL };

        manager_record_not_found(m, who, one);
        return sd_varlink_errorbo(link, "io.modgate.Manager.ModuleNotFound", SD_JSON_BUILD_PAIR_STRING("name", name),
                                  SD_JSON_BUILD_PAIR_STRV("blacklisted", one));
}

int load_plan(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
              const Plan **ret_plan, Plan **ret_owned) {
        const Plan *plan = NULL;
        int r;

        /* An index that changed on disk and cannot be read again (depmod left it missing, truncated or
         * corrupt): nothing is resolved, so nothing is loaded, and the caller is told why by name
         * rather than by a bare errno. The next request tries again. */
        r = manager_refresh_index(m);
        if (r < 0) {
                const char *key = p->name ?: p->modalias ?: p->path;

                log_error_errno(r, "Failed to reload the module index of %s for %s: %m", resolver_dirname(m->resolver),
                                key);
                return sd_varlink_errorbo(link, "io.modgate.Manager.LoadFailed",
                                          SD_JSON_BUILD_PAIR_STRING("module", key),
                                          SD_JSON_BUILD_PAIR_STRING("reason", "the module index (modules.*.bin) "
                                                                    "cannot be read: missing or corrupt; nothing "
                                                                    "was loaded"),
                                          SD_JSON_BUILD_PAIR_INTEGER("errno", -r),
                                          SD_JSON_BUILD_PAIR_STRING("errnoName", strerrorname_np(-r)),
                                          SD_JSON_BUILD_PAIR_EMPTY_ARRAY("modules"));
        }

        if (p->path) {
                r = resolver_plan_path(m->resolver, p->path, ret_owned);
                if (r == -EINVAL)
                        return reply_invalid(link, "InvalidPath", SD_JSON_BUILD_PAIR_STRING("path", p->path),
                                             SD_JSON_BUILD_PAIR_STRING("reason", "file name is not a module name"));
                if (r < 0)
                        return log_error_errno(r, "Failed to resolve %s: %m", p->path);
                /* A file is the module its name names: the same blacklist as a request by that name. */
                if (blacklist_hides(p, *ret_owned))
                        return reply_blacklisted(m, link, who, (*ret_owned)->specs[(*ret_owned)->n_specs - 1].name);
                *ret_plan = *ret_owned;
                return 1;
        }

        r = resolver_plan_key(m->resolver, p->name ?: p->modalias, &plan);
        if (r == -ENOENT) {
                manager_record_not_found(m, who, plan ? plan->blacklisted : NULL);
                return sd_varlink_errorbo(
                                link, "io.modgate.Manager.ModuleNotFound",
                                SD_JSON_BUILD_PAIR_CONDITION(!!p->name, "name", SD_JSON_BUILD_STRING(p->name)),
                                SD_JSON_BUILD_PAIR_CONDITION(!!p->modalias, "modalias",
                                                             SD_JSON_BUILD_STRING(p->modalias)),
                                SD_JSON_BUILD_PAIR_CONDITION(plan && plan->n_blacklisted > 0, "blacklisted",
                                                             SD_JSON_BUILD_STRV(plan ? plan->blacklisted : NULL)));
        }
        if (r == -ELOOP)
                return sd_varlink_errorbo(link, "io.modgate.Manager.LoadFailed",
                                          SD_JSON_BUILD_PAIR_STRING("module", p->name ?: p->modalias),
                                          SD_JSON_BUILD_PAIR_STRING("reason", "the module index has a dependency loop"),
                                          SD_JSON_BUILD_PAIR_EMPTY_ARRAY("modules"));
        if (r < 0)
                return log_error_errno(r, "Failed to resolve %s: %m", p->name ?: p->modalias);

        if (blacklist_hides(p, plan))
                return reply_blacklisted(m, link, who, p->name);

        *ret_plan = plan;
        return 1;
}

static bool policy_permissive(Manager *m) {
        return m->config.policy.mode == POLICY_PERMISSIVE;
}

/* A DenyRequest= refuses the key itself, whatever it would resolve to. Returns 1 to go on. */
int load_judge_key(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who) {
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        const char *key = p->name ?: p->modalias;
        PolicyVerdict v;

        if (!key)
                return 1;
        v = policy_check_request(&m->config.policy, who->source, key);
        if (v.verdict == VERDICT_ALLOW)
                return 1;
        if (policy_rule_describe(v.rule, &rule) < 0 || asprintf(&reason, "request %s denied by %s", key, rule) < 0)
                return log_oom();
        manager_record_policy(m, who, &(PolicyRecord) { .rule = rule, .reason = reason, .would = policy_permissive(m) },
                              false);
        if (policy_permissive(m))
                return 1;
        return sd_varlink_errorbo(link, "io.modgate.Manager.PolicyDenied", SD_JSON_BUILD_PAIR_STRING("request", key),
                                  SD_JSON_BUILD_PAIR_STRING("rule", rule), SD_JSON_BUILD_PAIR_STRING("reason", reason));
}

/* Records plan module i as denied by the policy (or would be), and gives the rule and reason. */
static int record_module_denial(Manager *m, const Requester *who, const Plan *plan, const ModuleVerdict *v,
                                size_t i, char **ret_rule, char **ret_reason) {
        _cleanup_free_ char *rule = NULL, *reason = NULL;

        if (policy_rule_describe(policy_chain_rule(v, i), &rule) < 0 || policy_chain(plan, v, i, &reason) < 0)
                return -ENOMEM;
        manager_record_policy(m, who,
                              &(PolicyRecord) {
                                      .module = plan->specs[i].name,
                                      .role = plan->specs[i].role,
                                      .rule = rule,
                                      .reason = reason,
                                      .would = policy_permissive(m),
                              },
                              true);
        *ret_rule = TAKE_PTR(rule);
        *ret_reason = TAKE_PTR(reason);
        return 0;
}

/* Parameters go to the one module a request names, within its [Parameters] rule, and never over an
 * option the administrator set. Returns 1 to go on. */
int load_judge_parameters(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
                          const Plan *plan) {
        _cleanup_free_ char *rule = NULL, *reason = NULL;
        const ModuleSpec *spec = NULL;
        const char *word;
        PolicyVerdict v;
        char buf[MODULE_PARAMETERS_MAX + 1];
        int k;

        if (!p->parameters || !p->parameters[0])
                return 1;
        for (size_t i = 0; i < plan->n_specs; i++) {
                if (plan->specs[i].role != ROLE_REQUESTED)
                        continue;
                if (spec)
                        return sd_varlink_errorbo(
                                        link, "io.modgate.Manager.ParameterDenied",
                                        SD_JSON_BUILD_PAIR_STRING("module", spec->name),
                                        SD_JSON_BUILD_PAIR_STRING("parameter", p->parameters),
                                        SD_JSON_BUILD_PAIR_STRING("reason", "parameters are for one module, and this "
                                                                  "request matches several: ask for the module by "
                                                                  "name"));
                spec = plan->specs + i;
        }
        if (!spec)
                return 1;

        v = policy_check_parameters(&m->config.policy, spec->name, spec->options, p->parameters, buf, sizeof(buf),
                                    &word);
        if (v.verdict == VERDICT_ALLOW)
                return 1;
        if (v.admin_option)
                k = asprintf(&reason, "%s would override the administrator's option for %s (\"%s\", from "
                             "modprobe.d or the kernel command line)", word, spec->name, spec->options);
        else if (policy_rule_describe(v.rule, &rule) >= 0)
                k = asprintf(&reason, "%s is not allowed for %s by %s", word ?: p->parameters, spec->name, rule);
        else
                k = -1;
        if (k < 0)
                return log_oom();
        manager_record_policy(m, who,
                              &(PolicyRecord) {
                                      .module = spec->name,
                                      .role = spec->role,
                                      .parameter = word ?: p->parameters,
                                      .rule = rule,
                                      .reason = reason,
                                      .would = policy_permissive(m),
                              },
                              false);
        if (policy_permissive(m))
                return 1;
        return sd_varlink_errorbo(link, "io.modgate.Manager.ParameterDenied",
                                  SD_JSON_BUILD_PAIR_STRING("module", spec->name),
                                  SD_JSON_BUILD_PAIR_STRING("parameter", word ?: p->parameters),
                                  SD_JSON_BUILD_PAIR_CONDITION(!!rule, "rule", SD_JSON_BUILD_STRING(rule)),
                                  SD_JSON_BUILD_PAIR_STRING("reason", reason));
}

/* The policy's word on every module of the plan, before anything loads. A denied requested module
 * (itself or through a hard dependency) denies the request; a denied softdep is left out, and
 * listed in ret_denied for the reply. In permissive mode each is a would-deny and nothing changes.
 * Returns 1 to go on, with *plan maybe replaced by the filtered *owned. */
int load_judge_plan(Manager *m, sd_varlink *link, const Requester *who, const Plan **plan, Plan **owned,
                    sd_json_variant **ret_denied) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *denied = NULL;
        _cleanup_free_ ModuleVerdict *v = NULL;
        _cleanup_free_ bool *drop = NULL;
        Plan *filtered = NULL;
        size_t first;
        int r;

        r = policy_judge_plan(&m->config.policy, who->source, *plan, &v, &first);
        if (r < 0)
                return log_oom();
        if (first != SIZE_MAX && !policy_permissive(m)) {
                _cleanup_free_ char *rule = NULL, *reason = NULL;

                if (record_module_denial(m, who, *plan, v, first, &rule, &reason) < 0)
                        return log_oom();
                return sd_varlink_errorbo(link, "io.modgate.Manager.PolicyDenied",
                                          SD_JSON_BUILD_PAIR_STRING("module", (*plan)->specs[first].name),
                                          SD_JSON_BUILD_PAIR_STRING("rule", rule),
                                          SD_JSON_BUILD_PAIR_STRING("reason", reason));
        }

        drop = calloc((*plan)->n_specs ?: 1, sizeof(bool));
        if (!drop)
                return log_oom();
        for (size_t i = 0; i < (*plan)->n_specs; i++) {
                _cleanup_free_ char *rule = NULL, *reason = NULL;

                if (!v[i].denied)
                        continue;
                if (record_module_denial(m, who, *plan, v, i, &rule, &reason) < 0)
                        return log_oom();
                drop[i] = !policy_permissive(m);
                r = sd_json_variant_append_arraybo(&denied, SD_JSON_BUILD_PAIR_STRING("name", (*plan)->specs[i].name),
                                                   SD_JSON_BUILD_PAIR_STRING("rule", rule),
                                                   SD_JSON_BUILD_PAIR_STRING("reason", reason));
                if (r < 0)
                        return log_oom();
        }
        if (!denied || policy_permissive(m)) {
                *ret_denied = NULL;
                return 1;
        }

        r = plan_filter(*plan, drop, &filtered);
        if (r < 0)
                return log_error_errno(r, "Failed to leave denied softdeps out of the plan: %m");
        plan_free(*owned);
        *plan = *owned = filtered;
        *ret_denied = TAKE_PTR(denied);
        return 1;
}

static LoadRequest *load_request_new(Manager *m, uint64_t arrival_usec) {
        LoadRequest *req = calloc(1, sizeof(*req));

        if (!req)
                return NULL;
        req->manager = m;
        req->arrival_usec = arrival_usec;
        req->next = m->requests;
        if (req->next)
                req->next->prev = req;
        m->requests = req;
        m->n_requests++;
        return req;
}

int load_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const LoadParameters *p,
               const Requester *who, const Plan *plan, sd_json_variant *denied, uint64_t arrival_usec) {
        const char *conflict = NULL;
        LoadRequest *req;
        int r = 0;

        req = load_request_new(m, arrival_usec);
        if (!req)
                return -ENOMEM;
        req->denied = sd_json_variant_ref(denied);
        req->blacklisted = strv_copy_n(plan->blacklisted, plan->n_blacklisted);
        if (!req->blacklisted) {
                load_request_free(req);
                return -ENOMEM;
        }
        r = scheduler_submit(m->scheduler, plan, p->parameters, who, &req->jobs, &conflict);
        if (r < 0) {
                load_request_free(req);
                if (r == -EBUSY)
                        return sd_varlink_errorbo(
                                        link, "io.modgate.Manager.Busy",
                                        SD_JSON_BUILD_PAIR_STRING("reason", "module is being loaded from another file "
                                                                  "or with other parameters; ask again when that "
                                                                  "load is done"),
                                        SD_JSON_BUILD_PAIR_STRING("module", conflict));
                return r;
        }
        req->n_jobs = plan->n_specs;

        /* A oneway call wants no reply: the load runs and is recorded, and nothing is sent. */
        if (!(flags & SD_VARLINK_METHOD_ONEWAY))
                req->link = sd_varlink_ref(link);

        for (size_t i = 0; r >= 0 && i < req->n_jobs; i++)
                if (!job_is_done(req->jobs[i])) {
                        r = job_watch(req->jobs[i], on_job_done, req);
                        if (r >= 0)
                                req->n_pending++;
                }
        if (r < 0) {
                /* sd-varlink answers with the error; what is watched finishes unanswered. */
                req->link = sd_varlink_unref(req->link);
                if (req->n_pending == 0)
                        load_request_free(req);
                return log_oom();
        }

        if (req->n_pending == 0) {
                load_request_answer(req, false);
                load_request_free(req);
                return 0;
        }

        if (p->timeout_usec > 0 && req->link) {
                r = sd_event_add_time_relative(m->event, &req->timeout, CLOCK_MONOTONIC, p->timeout_usec, 1,
                                               on_request_timeout, req);
                if (r < 0)
                        log_warning_errno(r, "Failed to arm the request's timeout, ignoring: %m");
        }
        return 0;
}

