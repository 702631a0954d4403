/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <systemd/sd-varlink.h>

#include "load-client.h"
#include "load-parameters.h"
#include "macro.h"

typedef struct Runner Runner;

typedef struct Slot {
        Runner *runner;
        LoadRequest *req;
        sd_varlink *link;
        sd_event_source *retry;         /* asks again once this fires, after Busy */
        unsigned busy;                  /* Busy answers so far */
        uint64_t first_busy;            /* CLOCK_MONOTONIC of the first */
} Slot;

struct Runner {
        const LoadOptions *options;
        sd_event *event;
        Slot *slots;
        size_t n, next, running;
        uint64_t deadline;              /* CLOCK_MONOTONIC, or USEC_INFINITY */
        int error;                      /* first failure of the loop itself */
};

static void runner_start_more(Runner *run);

static void slot_finish(Slot *s) {
        Runner *run = s->runner;

        s->link = sd_varlink_close_unref(s->link);
        run->running--;
        runner_start_more(run);
}

static int slot_start(Slot *s);

static int on_retry(sd_event_source *source, uint64_t usec, void *userdata) {
        Slot *s = userdata;
        int r;

        s->retry = sd_event_source_disable_unref(s->retry);
        s->runner->running--;
        r = slot_start(s);
        if (r < 0 && s->runner->error == 0)
                s->runner->error = r;
        if (r <= 0)
                runner_start_more(s->runner);
        return 0;
}

/* After Busy: when to ask again, or 0 when there is no time left for it. */
static uint64_t busy_retry_at(Slot *s) {
        uint64_t now = now_usec();

        if (s->busy++ == 0)
                s->first_busy = now;
        return load_busy_retry_at(s->busy, s->first_busy, now, s->runner->deadline);
}

/* Keeps the slot running, its connection closed, until the retry timer asks again. Returns 1 when
 * armed. */
static int slot_retry_busy(Slot *s) {
        uint64_t at = busy_retry_at(s);
        int r;

        if (at == 0)
                return 0;
        s->link = sd_varlink_close_unref(s->link);
        r = sd_event_add_time(s->runner->event, &s->retry, CLOCK_MONOTONIC, at, 1000, on_retry, s);
        return r < 0 ? r : 1;
}

static int on_reply(sd_varlink *link, sd_json_variant *parameters, const char *error_id,
                    sd_varlink_reply_flags_t flags, void *userdata) {
        _cleanup_(json_freep) JsonValue *params = NULL;
        Slot *s = userdata;
        LoadRequest *req = s->req;
        int r = 0;

        (void) link;
        (void) flags;

        if (error_id && strcmp(error_id, "io.modgate.Manager.Busy") == 0) {
                r = slot_retry_busy(s);
                if (r > 0)
                        return 0;
                if (r < 0 && s->runner->error == 0)
                        s->runner->error = r;
        }

        /* The answer is read by the same code as the plain client's (load-reply.c), from its text;
         * parameters that it does not take (nested deeper than it goes) count as none. */
        r = 0;
        if (parameters) {
                _cleanup_free_ char *text = NULL;

                r = sd_json_variant_format(parameters, 0, &text);
                if (r >= 0)
                        r = json_parse(text, strlen(text), &params, NULL);
                if (r < 0 && r != -ENOMEM)
                        r = 0;
        }
        if (r >= 0)
                r = load_result_from_reply(&req->result, error_id, params);
        if (r < 0 && s->runner->error == 0)
                s->runner->error = r;

        slot_finish(s);
        return 0;
}

int load_request_parameters(const LoadRequest *req, uint64_t daemon_timeout, sd_json_variant **ret,
                            LoadRefusal *ret_refusal) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *params = NULL;
        LoadParameters p;
        int r;

        r = sd_json_buildo(&params,
                           SD_JSON_BUILD_PAIR_CONDITION(!!req->name, "name", SD_JSON_BUILD_STRING(req->name)),
                           SD_JSON_BUILD_PAIR_CONDITION(!!req->modalias, "modalias",
                                                        SD_JSON_BUILD_STRING(req->modalias)),
                           SD_JSON_BUILD_PAIR_CONDITION(!!req->context, "context",
                                                        SD_JSON_BUILD_VARIANT(req->context)),
                           SD_JSON_BUILD_PAIR_CONDITION(daemon_timeout != USEC_INFINITY, "timeoutUSec",
                                                        SD_JSON_BUILD_UNSIGNED(daemon_timeout)));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* JSON carries UTF-8 only: a name or a modalias of other bytes names no module. */
                *ret_refusal = (LoadRefusal) {
                        .error = req->name ? "io.modgate.Manager.InvalidName"
                                           : "io.modgate.Manager.InvalidModalias",
                        .reason = "not UTF-8",
                };
                return 1;
        }
        r = load_parameters_parse(params, &p, ret_refusal);
        if (r != 0)
                return r;
        *ret = TAKE_PTR(params);
        return 0;
}

/* A request refused before it was sent: its verdict, with the daemon's error and its words. */
static int request_refuse(LoadRequest *req, const LoadRefusal *f) {
        _cleanup_free_ char *detail = NULL;
        int r;

        r = load_refusal_describe(f, &detail);
        if (r < 0)
                return r;
        (void) load_result_set(&req->result, LOAD_VERDICT_INVALID, 0, f->error, detail);
        return 0;
}

/* Connects and sends one request. A request that cannot be sent gets its verdict here. */
static int slot_start(Slot *s) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *params = NULL;
        const LoadOptions *o = s->runner->options;
        LoadRequest *req = s->req;
        LoadRefusal refusal = {};
        uint64_t left = USEC_INFINITY, daemon_timeout;
        int r;

        if (s->runner->deadline != USEC_INFINITY) {
                uint64_t now = now_usec();

                if (now >= s->runner->deadline) {
                        (void) load_result_set(&req->result, LOAD_VERDICT_NO_REPLY, 0, NULL, "not sent: no time was left");
                        return 0;
                }
                left = s->runner->deadline - now;
        }
        daemon_timeout = load_daemon_timeout(left);

        r = load_request_parameters(req, daemon_timeout, &params, &refusal);
        if (r < 0)
                return r;
        if (r > 0)
                return request_refuse(req, &refusal);

        r = sd_varlink_connect_address(&s->link, o->address ?: MODGATE_VARLINK_ADDRESS);
        if (r < 0) {
                (void) load_result_set(&req->result, LOAD_VERDICT_UNREACHABLE, r, NULL, "could not connect to modgated");
                return 0;
        }

        sd_varlink_set_userdata(s->link, s);
        (void) sd_varlink_set_description(s->link, "modgated");
        r = sd_varlink_set_relative_timeout(s->link, left);
        if (r < 0)
                return r;
        r = sd_varlink_bind_reply(s->link, on_reply);
        if (r < 0)
                return r;
        r = sd_varlink_attach_event(s->link, s->runner->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        r = sd_varlink_invoke(s->link, "io.modgate.Manager.Load", params);
        if (r < 0) {
                (void) load_result_set(&req->result, LOAD_VERDICT_UNREACHABLE, r, NULL, "could not send the request");
                s->link = sd_varlink_close_unref(s->link);
                return 0;
        }

        s->runner->running++;
        return 1;
}

static void runner_start_more(Runner *run) {
        unsigned max = run->options->max_parallel ?: 1;
        int r;

        while (run->error == 0 && run->running < max && run->next < run->n) {
                r = slot_start(run->slots + run->next++);
                if (r < 0)
                        run->error = r;
        }

        if (run->running == 0 && (run->next >= run->n || run->error < 0))
                (void) sd_event_exit(run->event, 0);
}

int load_requests_run(const LoadOptions *o, LoadRequest *reqs, size_t n) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_free_ Slot *slots = NULL;
        Runner run = {
                .options = o,
                .n = n,
                .deadline = USEC_INFINITY,
        };
        int r;

        for (size_t i = 0; i < n; i++)
                (void) load_result_set(&reqs[i].result, LOAD_VERDICT_NO_REPLY, 0, NULL, NULL);
        if (n == 0)
                return 0;

        if (o->timeout_usec != USEC_INFINITY)
                run.deadline = now_usec() + o->timeout_usec;

        slots = calloc(n, sizeof(Slot));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                slots[i] = (Slot) { .runner = &run, .req = reqs + i };
        run.slots = slots;

        r = sd_event_new(&event);
        if (r < 0)
                return r;
        run.event = event;

        runner_start_more(&run);
        if (run.running > 0) {
                r = sd_event_loop(event);
                if (r < 0 && run.error == 0)
                        run.error = r;
        }

        /* Only after a failure of the loop itself can connections still be open. */
        for (size_t i = 0; i < n; i++) {
                slots[i].link = sd_varlink_close_unref(slots[i].link);
                slots[i].retry = sd_event_source_disable_unref(slots[i].retry);
        }

        /* Every request has words for its log line, even when they could not be allocated above. */
        for (size_t i = 0; i < n && run.error == 0; i++)
                if (!reqs[i].result.detail)
                        run.error = load_result_set(&reqs[i].result, reqs[i].result.verdict, reqs[i].result.error,
                                                    NULL, NULL);

        return run.error;
}

void load_requests_done(LoadRequest *reqs, size_t n) {
        for (size_t i = 0; i < n; i++)
                load_result_done(&reqs[i].result);
}
