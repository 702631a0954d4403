/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Load, stage by stage: the request's key, its plan, the policy on the plan and on the parameters,
 * then the jobs, and the answer when they are done. Seal's final list goes the same way. */

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "log.h"
#include "method-load.h"
#include "policy.h"
#include "record.h"
#include "strv.h"
#include "time-util.h"
#include "varlink-errors.h"

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
        assert(m);

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
                return sd_varlink_replybo(req->link, SD_JSON_BUILD_PAIR_VARIANT("modules", array),
                                          SD_JSON_BUILD_PAIR_CONDITION(!!req->blacklisted &&
                                                                               !!req->blacklisted[0],
                                                                       "blacklisted",
                                                                       SD_JSON_BUILD_STRV(req->blacklisted)),
                                          SD_JSON_BUILD_PAIR_CONDITION(!!req->denied, "denied",
                                                                       SD_JSON_BUILD_VARIANT(req->denied)));
        if (f->command)
                return sd_varlink_errorbo(req->link, MANAGER_ERROR_INSTALL_COMMAND_REFUSED,
                                          SD_JSON_BUILD_PAIR_STRING("module", f->name),
                                          SD_JSON_BUILD_PAIR_STRING("command", f->command),
                                          SD_JSON_BUILD_PAIR_VARIANT("modules", array));
        if (f->outcome == OUTCOME_DENIED)
                return sd_varlink_errorbo(req->link, MANAGER_ERROR_UNTRUSTED_ORIGIN,
                                          SD_JSON_BUILD_PAIR_STRING("module", f->name),
                                          SD_JSON_BUILD_PAIR_CONDITION(!!f->path, "path",
                                                                       SD_JSON_BUILD_STRING(f->path)),
                                          SD_JSON_BUILD_PAIR_STRING("reason",
                                                                    f->reason ?: "untrusted origin"),
                                          SD_JSON_BUILD_PAIR_VARIANT("modules", array));
        return sd_varlink_errorbo(
                req->link, MANAGER_ERROR_LOAD_FAILED, SD_JSON_BUILD_PAIR_STRING("module", f->name),
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
                                                          SD_JSON_BUILD_STRING(
                                                                  job_result(req->jobs[i])->name));
        if (r >= 0)
                r = sd_varlink_errorbo(req->link, MANAGER_ERROR_TIMEOUT,
                                       SD_JSON_BUILD_PAIR_VARIANT("pending", pending));
        if (r < 0 && r != -EBADR)
                log_debug_errno(r, "Failed to send timeout reply: %m");

        /* The load goes on, and its journal records are still written when it ends. */
        req->link = sd_varlink_unref(req->link);
        return 0;
}


/* Every input is checked, with a named error, before anything is looked up. */
int load_reply_refusal(sd_varlink *link, const LoadParameters *p, const LoadRefusal *f) {
        assert(link);
        assert(p);
        assert(f);

        if (f->field)
                return sd_varlink_error_invalid_parameter_name(link, f->field);
        if (strcmp(f->error, MANAGER_ERROR_INVALID_NAME) == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("name", p->name));
        if (strcmp(f->error, MANAGER_ERROR_INVALID_PATH) == 0)
                return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("path", p->path),
                                          SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
        return sd_varlink_errorbo(link, f->error, SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
}

/* The index's answer for p, refreshed first when depmod changed it. An index that cannot be read again
 * (depmod left it missing, truncated or corrupt) resolves nothing, so nothing is loaded, and the
 * caller is told why by name rather than by a bare errno; the next request tries again. */
static void load_resolve(Manager *m, const LoadParameters *p, LoadJudgement *j) {
        const Plan *plan = NULL;
        int r;

        j->input.resolved = true;
        r = manager_refresh_index(m);
        if (r < 0) {
                j->input.index_error = r;
                return;
        }
        if (p->path) {
                r = resolver_plan_path(m->resolver, p->path, &j->owned);
                plan = j->owned;
        } else
                r = resolver_plan_key(m->resolver, p->name ?: p->modalias, &plan);
        j->input.resolve_error = MIN(r, 0);
        j->input.plan = plan;
}

int load_judge(Manager *m, const LoadParameters *p, KernelSeal seal, bool resolve, LoadJudgement *ret) {
        int r;

        assert(m);
        assert(p);
        assert(ret);

        *ret = (LoadJudgement) {
                .input = {
                        .name = p->name,
                        .modalias = p->modalias,
                        .path = p->path,
                        .source = p->context.source,
                        .parameters = p->parameters,
                        .policy = &m->config.policy,
                        .seal = seal,
                },
        };
        if (resolve)
                load_resolve(m, p, ret);
        r = load_decide(&ret->input, &ret->decision);
        if (r >= 0 && ret->decision.needs_plan) {
                load_decision_done(&ret->decision);
                load_resolve(m, p, ret);
                r = load_decide(&ret->input, &ret->decision);
        }
        if (r < 0)
                load_judgement_done(ret);
        return r;
}

void load_judgement_done(LoadJudgement *j) {
        load_decision_done(&j->decision);
        j->owned = plan_free(j->owned);
}

const Plan *load_judgement_plan(const LoadJudgement *j) {
        assert(j);

        return j->decision.plan ?: j->input.plan;
}

static void record_step(Manager *m, const Requester *who, const LoadJudgement *j, const DecisionStep *s) {
        const ModuleSpec *spec = s->module != SIZE_MAX ? j->input.plan->specs + s->module : NULL;

        if (s->record == DECISION_RECORD_NOT_FOUND)
                manager_record_not_found(m, who, s->blacklisted);
        else if (s->record == DECISION_RECORD_POLICY)
                manager_record_policy(m, who,
                                      &(PolicyRecord) {
                                              .module = spec ? spec->name : NULL,
                                              .role = spec ? spec->role : ROLE_REQUESTED,
                                              .parameter = s->parameter,
                                              .rule = s->rule,
                                              .reason = s->reason,
                                              .would = s->would,
                                      },
                                      s->keep);
}

int load_judgement_apply(Manager *m, sd_varlink *link, const Requester *who, const LoadJudgement *j) {
        const LoadDecision *d = &j->decision;
        const char *key = who->name ?: who->modalias ?: who->path;
        const DecisionStep *s;

        assert(m);
        assert(link);
        assert(who);
        assert(j);
        assert(d->verdict != LOAD_SEALED);
        for (size_t i = 0; i < d->n_steps && i <= d->decided; i++)
                record_step(m, who, j, d->steps + i);
        if (d->verdict == LOAD_ALLOW)
                return 1;
        if (d->verdict == LOAD_ERROR)
                return log_error_errno(d->error, "Failed to resolve %s: %m", key);
        if (d->verdict == LOAD_FAILED && j->input.index_error < 0)
                log_error_errno(j->input.index_error, "Failed to reload the module index of %s for %s: %m",
                                resolver_dirname(m->resolver), key);
        s = d->steps + d->decided;
        return sd_varlink_error(link, s->error, s->error_parameters);
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

int load_reply_busy(sd_varlink *link, const char *module) {
        assert(link);

        return sd_varlink_errorbo(
                link, MANAGER_ERROR_BUSY,
                SD_JSON_BUILD_PAIR_STRING("reason",
                                          "module is being loaded from another file or "
                                          "with other parameters; ask again when that load is "
                                          "done"),
                SD_JSON_BUILD_PAIR_STRING("module", module));
}

int load_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const LoadParameters *p,
               const Requester *who, const Plan *plan, sd_json_variant *denied, uint64_t arrival_usec) {
        const char *conflict = NULL;
        LoadRequest *req;
        int r = 0;

        assert(m);
        assert(link);
        assert(p);

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
                        return load_reply_busy(link, conflict);
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

