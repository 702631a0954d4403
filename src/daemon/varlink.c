/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "connections.h"
#include "explain.h"
#include "history.h"
#include "journal.h"
#include "kernel.h"
#include "load-parameters.h"
#include "log.h"
#include "module-name.h"
#include "peer.h"
#include "policy.h"
#include "request.h"
#include "scheduler.h"
#include "seal.h"
#include "status.h"
#include "strv.h"
#include "varlink-io.modgate.Manager.h"
#include "varlink.h"

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

static void load_request_answer(LoadRequest *req) {
        int r;

        if (!req->link)
                return;
        latency_add(&req->manager->latency, now_usec() - req->arrival_usec);
        /* sd_varlink_error() returns -EBADR once the error is sent, so that methods can return it. */
        r = load_request_reply(req);
        if (r < 0 && r != -EBADR)
                log_debug_errno(r, "Failed to send reply, client gone? %m");
        req->link = sd_varlink_unref(req->link);
}

static void on_job_done(Job *j, void *userdata) {
        LoadRequest *req = userdata;

        if (--req->n_pending > 0)
                return;
        load_request_answer(req);
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

#define reply_invalid(link, error, ...) sd_varlink_errorbo(link, "io.modgate.Manager." error, __VA_ARGS__)

/* Every input is checked, with a named error, before anything is looked up. */
static int reply_refusal(sd_varlink *link, const LoadParameters *p, const LoadRefusal *f) {
        if (f->field)
                return sd_varlink_error_invalid_parameter_name(link, f->field);
        if (strcmp(f->error, "io.modgate.Manager.InvalidName") == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("name", p->name));
        if (strcmp(f->error, "io.modgate.Manager.InvalidPath") == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("path", p->path),
                                          SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
        return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
}

static int load_plan(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
                     const Plan **ret_plan, Plan **ret_owned) {
        const Plan *plan = NULL;
        int r;

        r = manager_refresh_index(m);
        if (r < 0)
                return log_error_errno(r, "Failed to reload the module index: %m");

        if (p->path) {
                r = resolver_plan_path(m->resolver, p->path, ret_owned);
                if (r == -EINVAL)
                        return reply_invalid(link, "InvalidPath", SD_JSON_BUILD_PAIR_STRING("path", p->path),
                                             SD_JSON_BUILD_PAIR_STRING("reason", "file name is not a module name"));
                if (r < 0)
                        return log_error_errno(r, "Failed to resolve %s: %m", p->path);
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

        /* The loaders modgate stands in for honour a blacklist for modules named by the boot list
         * (systemd-modules-load) and by udev's rules (udev's kmod builtin), though modprobe does not
         * for a name: so do those requests here, answered as those loaders would, "not loaded". The
         * source is the caller's own, checked before. */
        if (p->name && plan->key_blacklisted && (p->context.source == SOURCE_BOOT || p->context.source == SOURCE_UDEV)) {
                char *one[2] = { (char *) p->name, NULL };

                manager_record_not_found(m, who, one);
                return sd_varlink_errorbo(link, "io.modgate.Manager.ModuleNotFound",
                                          SD_JSON_BUILD_PAIR_STRING("name", p->name),
                                          SD_JSON_BUILD_PAIR_STRV("blacklisted", one));
        }

        *ret_plan = plan;
        return 1;
}

static bool policy_permissive(Manager *m) {
        return m->config.policy.mode == POLICY_PERMISSIVE;
}

/* A DenyRequest= refuses the key itself, whatever it would resolve to. Returns 1 to go on. */
static int load_judge_key(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who) {
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
static int load_judge_parameters(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
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
static int load_judge_plan(Manager *m, sd_varlink *link, const Requester *who, const Plan **plan, Plan **owned,
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

static int load_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const LoadParameters *p,
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
                load_request_answer(req);
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

/* The record's "who asked", from the peer's verified identity. who borrows peer's strings. */
static void requester_set_peer(Requester *who, const PeerIdentity *peer) {
        who->have_peer = peer->known;
        who->pid = peer->pid;
        who->uid = peer->uid;
        who->unit = peer->unit;
        who->cgroup = peer->cgroup;
        who->comm = peer->comm[0] ? (char *) peer->comm : NULL;
}

/* Who asks decides what may be asked: refused, the peer gets PermissionDenied and the journal a
 * record of who it was and what it claimed. Returns 1 when allowed, else the reply's result. */
static int check_caller(Manager *m, sd_varlink *link, const PeerIdentity *peer, const AuthRequest *req,
                        const Requester *who, const char *method) {
        char buf[512];
        const char *why;

        why = authorize(peer, req, buf, sizeof(buf));
        if (!why)
                return 1;
        log_debug("Refused %s from pid %d: %s", method, (int) peer->pid, why);
        manager_record_refused_caller(m, who, method, why);
        return sd_varlink_errorbo(link, "io.modgate.Manager.PermissionDenied", SD_JSON_BUILD_PAIR_STRING("reason", why));
}

static int vl_method_load(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        _cleanup_(plan_freep) Plan *owned = NULL;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *denied = NULL;
        Manager *m = userdata;
        LoadParameters p = {};
        LoadRefusal refusal = {};
        const Plan *plan = NULL;
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *device_modalias = NULL, *device_subsystem = NULL;
        bool device_exists = false;
        uint64_t arrival_usec = now_usec();
        Requester who;
        int r;

        manager_touch(m);
        r = load_parameters_parse(parameters, &p, &refusal);
        if (r < 0)
                return r;
        if (r > 0)
                return reply_refusal(link, &p, &refusal);

        if (m->n_requests >= REQUESTS_MAX)
                return reply_invalid(link, "Busy", SD_JSON_BUILD_PAIR_STRING("reason", "too many requests pending"));

        who = (Requester) {
                .name = (char *) p.name,
                .modalias = (char *) p.modalias,
                .path = (char *) p.path,
                .source = p.context.source,
                .devpath = (char *) p.context.devpath,
                .subsystem = (char *) p.context.subsystem,
                .action = (char *) p.context.action,
                .file = (char *) p.context.file,
                .seqnum = p.context.seqnum,
        };
        r = peer_identify(link, &peer);
        if (r < 0)
                return r;
        requester_set_peer(&who, &peer);
        who.source_given = p.context_json && sd_json_variant_by_key(p.context_json, "source");

        /* udevd without CAP_SYS_MODULE asks for a device: what that device is, sysfs says. */
        if (peer.known && !peer.cap_sys_module && streq_ptr(peer.unit, UDEV_UNIT) && p.context.devpath) {
                r = peer_read_device(p.context.devpath, &device_exists, &device_modalias, &device_subsystem);
                if (r < 0)
                        return r;
        }
        r = check_caller(m, link, &peer,
                         &(AuthRequest) {
                                 .method = AUTH_LOAD,
                                 .name = p.name,
                                 .modalias = p.modalias,
                                 .path = p.path,
                                 .parameters = p.parameters,
                                 .source_given = who.source_given,
                                 .source = p.context.source,
                                 .devpath = p.context.devpath,
                                 .device_exists = device_exists,
                                 .device_modalias = device_modalias,
                                 .device_subsystem = device_subsystem,
                                 .rule_names = m->udev_rule_names,
                                 .n_rule_names = m->n_udev_rule_names,
                         },
                         &who, "Load");
        if (r <= 0)
                return r;
        manager_record_request(m, "Load", &who);
        if (seal_refuses(m))
                return seal_refuse(m, link, &who, "Load");

        r = load_judge_key(m, link, &p, &who);
        if (r <= 0)
                return r;

        r = load_plan(m, link, &p, &who, &plan, &owned);
        if (r <= 0)
                return r;

        r = load_judge_plan(m, link, &who, &plan, &owned, &denied);
        if (r <= 0)
                return r;

        r = load_judge_parameters(m, link, &p, &who, plan);
        if (r <= 0)
                return r;

        return load_start(m, link, flags, &p, &who, plan, denied, arrival_usec);
}

static int unload_refuse(sd_varlink *link, const Requester *who, const char *name, int error, const char *reason) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, error, reason);
        return sd_varlink_errorbo(link, "io.modgate.Manager.UnloadFailed", SD_JSON_BUILD_PAIR_STRING("module", name),
                                  SD_JSON_BUILD_PAIR_STRING("reason", reason),
                                  SD_JSON_BUILD_PAIR_STRING("errnoName", strerrorname_np(error)));
}

static int unload_in_use(sd_varlink *link, const Requester *who, const char *name, int error, char **holders,
                         unsigned refs) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, error, holders && holders[0] ? "used by other modules" : "in use");
        return sd_varlink_errorbo(link, "io.modgate.Manager.ModuleInUse", SD_JSON_BUILD_PAIR_STRING("module", name),
                                  SD_JSON_BUILD_PAIR_STRV("holders", holders),
                                  SD_JSON_BUILD_PAIR_INTEGER("refcount", refs));
}

static int unload_not_loaded(sd_varlink *link, const Requester *who, const char *name) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, ENOENT, "module is not loaded");
        return sd_varlink_errorbo(link, "io.modgate.Manager.NotLoaded",
                                  SD_JSON_BUILD_PAIR_STRING("module", name));
}

/* A builtin module has a directory in /sys/module only when it has parameters: the index knows the
 * others. */
static bool module_is_builtin(Manager *m, const char *name) {
        const Plan *plan;

        if (resolver_plan_key(m->resolver, name, &plan) < 0)
                return false;
        for (size_t i = 0; i < plan->n_specs; i++)
                if (module_name_equal(plan->specs[i].name, name))
                        return !plan->specs[i].path;
        return false;
}

/* delete_module(2), and what its answer means. The kernel says EWOULDBLOCK for holders and references,
 * which may have come since the caller looked, and EBUSY for a module that is not live or has no exit
 * function. */
static int unload_delete(Manager *m, sd_varlink *link, const Requester *who, const char *name) {
        _cleanup_strv_free_ char **holders = NULL;
        unsigned refs = 0;
        int r;

        r = kernel_delete_module(name);
        if (r == -EWOULDBLOCK) {
                /* Say who uses it as the kernel shows it now, not as before the call. */
                (void) kernel_module_holders(name, &holders);
                (void) kernel_module_refcount(name, &refs);
                return unload_in_use(link, who, name, -r, holders, refs);
        }
        if (r == -EBUSY)
                return unload_refuse(link, who, name, -r, "the kernel cannot unload the module now: it is "
                                     "initializing or going away, or it has no exit function");
        if (r == -ENOENT)
                return unload_not_loaded(link, who, name);
        if (r < 0)
                return unload_refuse(link, who, name, -r, strerror(-r));

        manager_record_unload(m, who, name, 0, NULL);
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_STRING("name", name));
}

static int unload(Manager *m, sd_varlink *link, const Requester *who, const char *name) {
        _cleanup_free_ char *command = NULL;
        _cleanup_strv_free_ char **holders = NULL;
        ModuleState state;
        unsigned refs = 0;
        int r;

        if (scheduler_has_job(m->scheduler, name))
                return unload_refuse(link, who, name, EBUSY, "a load of this module is in progress");

        r = kernel_module_state(name, &state);
        if (r < 0)
                return unload_refuse(link, who, name, -r, "cannot read module state");
        if (state == MODULE_STATE_ABSENT && module_is_builtin(m, name))
                state = MODULE_STATE_BUILTIN;
        if (state == MODULE_STATE_ABSENT)
                return unload_not_loaded(link, who, name);
        if (state == MODULE_STATE_BUILTIN)
                return unload_refuse(link, who, name, EPERM, "module is built into the kernel");
        /* The kernel refuses both with EBUSY: nothing uses the module, it is not live. */
        if (state == MODULE_STATE_COMING)
                return unload_refuse(link, who, name, EBUSY, "module is still initializing");
        if (state == MODULE_STATE_GOING)
                return unload_refuse(link, who, name, EBUSY, "module is already being unloaded");

        r = kernel_module_holders(name, &holders);
        if (r < 0)
                return unload_refuse(link, who, name, -r, "cannot read the module's holders");
        (void) kernel_module_refcount(name, &refs);
        if (holders[0] || refs > 0)
                return unload_in_use(link, who, name, EBUSY, holders, refs);

        r = resolver_remove_command(m->resolver, name, &command);
        if (r >= 0 && command) {
                manager_record_unload(m, who, name, EPERM, "modprobe.d has a remove command; modgate never runs commands");
                return sd_varlink_errorbo(link, "io.modgate.Manager.InstallCommandRefused",
                                          SD_JSON_BUILD_PAIR_STRING("module", name),
                                          SD_JSON_BUILD_PAIR_STRING("command", command),
                                          SD_JSON_BUILD_PAIR_EMPTY_ARRAY("modules"));
        }

        return unload_delete(m, link, who, name);
}

/* The one parameter of Unload and Describe, a module name, checked and made canonical. Returns 1 with
 * *ret set, else the reply's result. */
static int dispatch_module_name(sd_varlink *link, sd_json_variant *parameters, char **ret) {
        static const sd_json_dispatch_field table[] = {
                { "name", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, 0, SD_JSON_MANDATORY },
                {}
        };
        const char *n = NULL;
        int r;

        r = sd_varlink_dispatch(link, parameters, table, &n);
        if (r != 0)
                return r;
        if (!module_name_is_valid(n))
                return reply_invalid(link, "InvalidName", SD_JSON_BUILD_PAIR_STRING("name", n));
        *ret = strdup(n);
        if (!*ret)
                return -ENOMEM;
        module_name_normalize(*ret);
        return 1;
}

static int vl_method_unload(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *name = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        int r;

        manager_touch(userdata);
        r = dispatch_module_name(link, parameters, &name);
        if (r <= 0)
                return r;
        who.name = name;
        r = peer_identify(link, &peer);
        if (r < 0)
                return r;
        requester_set_peer(&who, &peer);
        r = check_caller(userdata, link, &peer, &(AuthRequest) { .method = AUTH_UNLOAD, .name = name }, &who,
                         "Unload");
        if (r <= 0)
                return r;
        manager_record_request(userdata, "Unload", &who);
        if (seal_refuses(userdata))
                return seal_refuse(userdata, link, &who, "Unload");

        return unload(userdata, link, &who, name);
}

/* The read-only methods: root, or ReadGroup=. who says what was asked, for a refusal's record.
 * Returns 1 when allowed, else the reply's result. */
static int check_reader(Manager *m, sd_varlink *link, const char *method, Requester *who) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        int r;

        r = peer_identify(link, &peer);
        if (r < 0)
                return r;
        requester_set_peer(who, &peer);
        return check_caller(m, link, &peer,
                            &(AuthRequest) { .method = AUTH_READ, .have_read_group = m->config.have_read_group,
                                             .read_group = m->config.read_group },
                            who, method);
}

static int vl_method_explain(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                             void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *reply = NULL;
        Manager *m = userdata;
        LoadParameters p = {};
        LoadRefusal refusal = {};
        Requester who;
        int r;

        manager_touch(m);
        r = load_parameters_parse(parameters, &p, &refusal);
        if (r < 0)
                return r;
        if (r > 0)
                return reply_refusal(link, &p, &refusal);

        who = (Requester) { .name = (char *) p.name, .modalias = (char *) p.modalias, .path = (char *) p.path,
                            .source = p.context.source, .seqnum = -1 };
        r = check_reader(m, link, "Explain", &who);
        if (r <= 0)
                return r;

        r = explain_request(m, &p, &reply);
        if (r < 0)
                return log_error_errno(r, "Failed to explain the request: %m");
        return sd_varlink_reply(link, reply);
}

static int vl_method_list(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        static const sd_json_dispatch_field table[] = { {} };
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *all = NULL;
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = sd_varlink_dispatch(link, parameters, table, NULL);
        if (r != 0)
                return r;
        r = check_reader(m, link, "List", &(Requester) { .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        r = history_list(m->history, &all);
        if (r < 0)
                return r;
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_VARIANT("modules", all));
}

static int vl_method_describe(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                              void *userdata) {
        _cleanup_free_ char *name = NULL;
        Manager *m = userdata;
        sd_json_variant *e;
        int r;

        manager_touch(m);
        r = dispatch_module_name(link, parameters, &name);
        if (r <= 0)
                return r;
        r = check_reader(m, link, "Describe", &(Requester) { .name = name, .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        e = history_get(m->history, name);
        if (!e)
                return sd_varlink_errorbo(link, "io.modgate.Manager.NoRecord", SD_JSON_BUILD_PAIR_STRING("module", name));
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_VARIANT("module", e));
}

static int vl_method_reload(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *error = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        Manager *m = userdata;
        int r;

        static const sd_json_dispatch_field table[] = { {} };

        manager_touch(m);
        r = sd_varlink_dispatch(link, parameters, table, NULL);
        if (r != 0)
                return r;
        r = peer_identify(link, &peer);
        if (r < 0)
                return r;
        requester_set_peer(&who, &peer);
        r = check_caller(m, link, &peer, &(AuthRequest) { .method = AUTH_RELOAD }, &who, "Reload");
        if (r <= 0)
                return r;

        r = manager_reload(m, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_varlink_errorbo(link, "io.modgate.Manager.ConfigurationInvalid",
                                          SD_JSON_BUILD_PAIR_STRING("reason", error ?: strerror(-r)));
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest),
                                  SD_JSON_BUILD_PAIR_STRING("mode", policy_mode_to_string(m->config.policy.mode)));
}

static int vl_method_status(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        static const sd_json_dispatch_field table[] = { {} };
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *reply = NULL;
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = sd_varlink_dispatch(link, parameters, table, NULL);
        if (r != 0)
                return r;
        r = check_reader(m, link, "Status", &(Requester) { .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        r = manager_status(m, &reply);
        if (r < 0)
                return log_error_errno(r, "Failed to build the status: %m");
        return sd_varlink_reply(link, reply);
}

static int vl_method_monitor(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                             void *userdata) {
        static const sd_json_dispatch_field table[] = {
                { "modules", SD_JSON_VARIANT_ARRAY, sd_json_dispatch_strv, 0, 0 },
                {}
        };
        _cleanup_strv_free_ char **modules = NULL;
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = sd_varlink_dispatch(link, parameters, table, &modules);
        if (r != 0)
                return r;
        if (!(flags & SD_VARLINK_METHOD_MORE))
                return sd_varlink_error(link, SD_VARLINK_ERROR_EXPECTED_MORE, NULL);
        for (char **n = modules; n && *n; n++) {
                if (!module_name_is_valid(*n))
                        return reply_invalid(link, "InvalidName", SD_JSON_BUILD_PAIR_STRING("name", *n));
                module_name_normalize(*n);
        }
        r = check_reader(m, link, "Monitor", &(Requester) { .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        r = monitors_add(m->monitors, link, TAKE_PTR(modules));
        if (r == -EBUSY)
                return reply_invalid(link, "Busy", SD_JSON_BUILD_PAIR_STRING("reason", "too many Monitor calls"));
        return r;
}

static void plans_free(Plan **plans, size_t n) {
        for (size_t i = 0; i < n; i++)
                plan_free(plans[i]);
        free(plans);
}

/* Seal's final list, each name judged as a Load of it is (DenyRequest=, the index, the policy), before
 * anything loads: the first refusal is the Seal's reply, and nothing is sealed. Returns 1 with a plan
 * of our own per name, else the reply's result. */
static int seal_judge(Manager *m, sd_varlink *link, const Requester *caller, char **names, Plan ***ret) {
        size_t n = strv_length(names), i;
        Plan **plans;
        int r = 1;

        plans = calloc(n ?: 1, sizeof(Plan *));
        if (!plans)
                return -ENOMEM;
        for (i = 0; r > 0 && i < n; i++) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *denied = NULL;
                LoadParameters p = { .name = names[i], .context = { .source = SOURCE_ADMIN, .seqnum = -1 } };
                Requester who = *caller;
                const Plan *plan = NULL;
                Plan *owned = NULL;

                who.name = names[i];
                r = load_judge_key(m, link, &p, &who);
                if (r > 0)
                        r = load_plan(m, link, &p, &who, &plan, &owned);
                if (r > 0)
                        r = load_judge_plan(m, link, &who, &plan, &owned, &denied);
                /* A plan of the index's may go when the next name refreshes it: keep a copy. */
                if (r > 0 && !owned) {
                        _cleanup_free_ bool *none = calloc(plan->n_specs ?: 1, sizeof(bool));

                        r = none ? plan_filter(plan, none, &owned) : -ENOMEM;
                        if (r >= 0)
                                r = 1;
                }
                plans[i] = owned;
        }
        if (r <= 0) {
                plans_free(plans, i);
                return r;
        }
        *ret = plans;
        return 1;
}

static int vl_method_seal(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        static const sd_json_dispatch_field table[] = {
                { "load", SD_JSON_VARIANT_ARRAY, sd_json_dispatch_strv, 0, SD_JSON_NULLABLE },
                {}
        };
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_strv_free_ char **names = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        Manager *m = userdata;
        Plan **plans = NULL;
        size_t n;
        int r;

        manager_touch(m);
        r = sd_varlink_dispatch(link, parameters, table, &names);
        if (r != 0)
                return r;
        n = strv_length(names);
        if (n > SEAL_LOAD_MAX) {
                char reason[64];

                snprintf(reason, sizeof(reason), "the final list names more than %u modules", SEAL_LOAD_MAX);
                return reply_invalid(link, "InvalidRequest", SD_JSON_BUILD_PAIR_STRING("reason", reason));
        }
        for (size_t i = 0; i < n; i++)
                if (!module_name_is_valid(names[i]))
                        return reply_invalid(link, "InvalidName", SD_JSON_BUILD_PAIR_STRING("name", names[i]));

        r = peer_identify(link, &peer);
        if (r < 0)
                return r;
        requester_set_peer(&who, &peer);
        r = check_caller(m, link, &peer, &(AuthRequest) { .method = AUTH_SEAL }, &who, "Seal");
        if (r <= 0)
                return r;
        if (seal_refuses(m))
                return seal_refuse(m, link, &who, "Seal");

        r = seal_judge(m, link, &who, names, &plans);
        if (r <= 0)
                return r;
        r = seal_start(m, link, flags, &who, names, plans, n);
        plans_free(plans, n);
        return r;
}

int manager_varlink_init(Manager *m) {
        _cleanup_(sd_varlink_server_unrefp) sd_varlink_server *s = NULL;
        int r;

        /* Not SD_VARLINK_SERVER_ROOT_ONLY: ReadGroup= may let others in, when the socket's mode does.
         * Each method checks its caller (authorize()). */
        r = sd_varlink_server_new(&s, SD_VARLINK_SERVER_ACCOUNT_UID | SD_VARLINK_SERVER_INHERIT_USERDATA);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate varlink server: %m");

        sd_varlink_server_set_userdata(s, m);
        (void) sd_varlink_server_set_description(s, "modgated");
        (void) sd_varlink_server_set_info(s, "modgate", "modgate", PROJECT_VERSION, NULL);
        r = manager_connections_init(m, s);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the connection limits: %m");

        r = sd_varlink_server_add_interface(s, &vl_interface_io_modgate_Manager);
        if (r < 0)
                return log_error_errno(r, "Failed to add varlink interface: %m");

        r = sd_varlink_server_bind_method_many(
                        s,
                        "io.modgate.Manager.Load", vl_method_load,
                        "io.modgate.Manager.Unload", vl_method_unload,
                        "io.modgate.Manager.Explain", vl_method_explain,
                        "io.modgate.Manager.List", vl_method_list,
                        "io.modgate.Manager.Describe", vl_method_describe,
                        "io.modgate.Manager.Reload", vl_method_reload,
                        "io.modgate.Manager.Status", vl_method_status,
                        "io.modgate.Manager.Monitor", vl_method_monitor,
                        "io.modgate.Manager.Seal", vl_method_seal);
        if (r < 0)
                return log_error_errno(r, "Failed to bind varlink methods: %m");

        if (m->listen_address) {
                r = sd_varlink_server_listen_address(s, m->listen_address, 0600);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on %s: %m", m->listen_address);
        } else {
                /* Adopts only sockets passed with FileDescriptorName=varlink. */
                r = sd_varlink_server_listen_auto(s);
                if (r < 0)
                        return log_error_errno(r, "Failed to take the varlink socket: %m");
                if (r == 0)
                        return log_error_errno(EBADF, "No socket named 'varlink' was passed "
                                               "(FileDescriptorName=varlink), and no --listen= was given.");
        }

        r = sd_varlink_server_attach_event(s, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach varlink server to the event loop: %m");

        m->varlink_server = TAKE_PTR(s);
        return 0;
}
