/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "load-plain.h"
#include "macro.h"
#include "time-util.h"
#include "varlink-errors.h"
#include "varlink-plain.h"

static void write_context(JsonWriter *w, const RequestContext *c) {
        const char *source = request_source_to_string(c->source);

        json_write_key(w, "context");
        json_write_open(w, '{');
        if (source) {
                json_write_key(w, "source");
                json_write_string(w, source);
        }
        const char *const fields[][2] = {
                { "devpath", c->devpath },
                { "subsystem", c->subsystem },
                { "action", c->action },
                { "file", c->file },
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (fields[i][1]) {
                        json_write_key(w, fields[i][0]);
                        json_write_string(w, fields[i][1]);
                }
        if (c->seqnum >= 0) {
                json_write_key(w, "seqnum");
                json_write_unsigned(w, (uint64_t) c->seqnum);
        }
        json_write_close(w, '}');
}

int plain_request_message(const PlainRequest *req, uint64_t daemon_timeout, char **ret, size_t *ret_len,
                          LoadRefusal *ret_refusal) {
        static const RequestContext no_context = { .source = SOURCE_ADMIN, .seqnum = -1 };
        const char *what = req->name ?: req->modalias;
        JsonWriter w = {};
        int r;

        assert(req);
        assert(ret_refusal);

        /* JSON carries UTF-8 only: a name or a modalias of other bytes names no module. */
        if (what && !utf8_is_valid(what, strlen(what))) {
                *ret_refusal = (LoadRefusal) {
                        .error = req->name ? MANAGER_ERROR_INVALID_NAME : MANAGER_ERROR_INVALID_MODALIAS,
                        .reason = "not UTF-8",
                };
                return 1;
        }
        r = request_check(req->name, req->modalias, NULL, NULL, req->context ?: &no_context, ret_refusal);
        if (r != 0)
                return r;

        json_write_open(&w, '{');
        json_write_key(&w, "method");
        json_write_string(&w, "io.modgate.Manager.Load");
        json_write_key(&w, "parameters");
        json_write_open(&w, '{');
        json_write_key(&w, req->name ? "name" : "modalias");
        json_write_string(&w, what);
        if (req->context)
                write_context(&w, req->context);
        if (daemon_timeout != USEC_INFINITY) {
                json_write_key(&w, "timeoutUSec");
                json_write_unsigned(&w, daemon_timeout);
        }
        json_write_close(&w, '}');
        json_write_close(&w, '}');
        return json_writer_finish(&w, ret, ret_len);
}

bool load_daemon_running(const char *path) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path ?: MODGATED_RUNNING_LOCK, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return false;
        if (flock(fd, LOCK_EX | LOCK_NB) >= 0)
                return false;   /* nobody holds it; closing the fd lets go */
        return errno == EWOULDBLOCK;
}

typedef struct Call {
        PlainRequest *req;
        VarlinkConn conn;               /* fd < 0 when not connected */
        uint64_t retry_at;              /* after Busy: when to ask again; 0 when not waiting */
        unsigned busy;                  /* Busy answers so far */
        uint64_t first_busy;
} Call;

typedef struct Run {
        const PlainOptions *options;
        Call *calls;
        size_t n, next, active;
        uint64_t deadline;              /* CLOCK_MONOTONIC, or USEC_INFINITY */
        uint64_t start_check;           /* when to give up on a daemon that has not started; 0: never */
} Run;

static bool call_active(const Call *c) {
        return c->conn.fd >= 0 || c->retry_at > 0;
}

/* Connects and sends one request, or gives it its verdict when it cannot be sent. Returns 1 when
 * it is under way, 0 when it has its verdict, -ENOMEM. */
static int call_start(Run *run, Call *c) {
        _cleanup_free_ char *message = NULL;
        LoadRefusal refusal = {};
        uint64_t left = USEC_INFINITY;
        size_t len;
        int r;

        if (run->deadline != USEC_INFINITY) {
                uint64_t now = now_usec();

                if (now >= run->deadline)
                        return load_result_set(&c->req->result, LOAD_VERDICT_NO_REPLY, 0, NULL,
                                               "not sent: no time was left");
                left = run->deadline - now;
        }

        r = plain_request_message(c->req, load_daemon_timeout(left), &message, &len, &refusal);
        if (r < 0)
                return r;
        if (r > 0) {
                _cleanup_free_ char *detail = NULL;

                r = load_refusal_describe(&refusal, &detail);
                if (r < 0)
                        return r;
                return load_result_set(&c->req->result, LOAD_VERDICT_INVALID, 0, refusal.error, detail);
        }

        r = varlink_conn_open(&c->conn, run->options->address ?: MODGATE_VARLINK_ADDRESS, TAKE_PTR(message),
                              len, left);
        if (r == -EAGAIN) {
                varlink_conn_close(&c->conn);
                return load_result_from_reply(&c->req->result, VARLINK_ERROR_TIMEOUT, NULL);
        }
        if (r < 0) {
                varlink_conn_close(&c->conn);
                return load_result_set(&c->req->result, LOAD_VERDICT_UNREACHABLE, r, NULL,
                                       "could not connect to modgated");
        }
        return 1;
}

/* A reply that is not one: the connection is of no more use, as when it breaks. */
static int call_broken(Call *c, int error, const char *reason) {
        char detail[256];
        int r;

        if (error == -ECONNRESET)
                return load_result_from_reply(&c->req->result, VARLINK_ERROR_DISCONNECTED, NULL);
        if (error == -ENOMEM)
                return error;
        snprintf(detail, sizeof(detail), "modgated's answer is not a varlink reply (%s)",
                 reason ?: (error == -EMSGSIZE ? "larger than 1 MiB" : "read failed"));
        r = load_result_set(&c->req->result, LOAD_VERDICT_UNREACHABLE, error, VARLINK_ERROR_PROTOCOL,
                            detail);
        return r < 0 ? r : 0;
}

/* The reply is complete: its verdict, or a pause before asking again after Busy. Returns 1 when the
 * call goes on, 0 when it has its verdict, -ENOMEM. */
static int call_reply(Run *run, Call *c) {
        _cleanup_(varlink_reply_done) VarlinkReply reply = {};
        const char *reason = NULL;
        int r;

        r = varlink_reply_parse(c->conn.in, c->conn.reply_len, &reply, &reason);
        varlink_conn_close(&c->conn);
        if (r < 0)
                return call_broken(c, r, reason);

        if (reply.error && strcmp(reply.error, MANAGER_ERROR_BUSY) == 0) {
                uint64_t now = now_usec();

                if (c->busy++ == 0)
                        c->first_busy = now;
                c->retry_at = load_busy_retry_at(c->busy, c->first_busy, now, run->deadline);
                if (c->retry_at > 0)
                        return 1;
        }
        r = load_result_from_reply(&c->req->result, reply.error, reply.parameters);
        return r < 0 ? r : 0;
}

/* Starts calls while there is room. Returns 0 or -ENOMEM. */
static int run_start_more(Run *run) {
        unsigned max = run->options->max_parallel ?: 1;

        while (run->active < max && run->next < run->n) {
                int r = call_start(run, run->calls + run->next++);

                if (r < 0)
                        return r;
                run->active += r;
        }
        return 0;
}

/* What poll() waits for, and how long (ms, -1 for ever). */
static int run_poll_setup(Run *run, struct pollfd *pfd, Call **polled, size_t max, size_t *ret_n) {
        uint64_t until = run->start_check > 0 ? MIN(run->deadline, run->start_check) : run->deadline;
        uint64_t now = now_usec();
        size_t k = 0;

        for (size_t i = 0; i < run->n; i++) {
                Call *c = run->calls + i;

                if (c->conn.fd >= 0 && k < max) {
                        pfd[k] = (struct pollfd) { .fd = c->conn.fd,
                                                   .events = varlink_conn_events(&c->conn) };
                        polled[k++] = c;
                } else if (c->retry_at > 0)
                        until = MIN(until, c->retry_at);
        }
        *ret_n = k;
        if (until == USEC_INFINITY)
                return -1;
        return until <= now ? 0 : (int) MIN((until - now + 999) / 1000, (uint64_t) INT32_MAX);
}

/* The daemon was not running when the run started and still is not: every request still waiting gets
 * no answer, and the run ends. */
static int run_check_start(Run *run) {
        char detail[128];

        if (run->start_check == 0 || now_usec() < run->start_check)
                return 0;
        run->start_check = 0;
        if (load_daemon_running(run->options->running_lock))
                return 0;
        snprintf(detail, sizeof(detail), "modgated was not running and did not start within %llu ms",
                 (unsigned long long) (run->options->start_timeout_usec / 1000));
        for (size_t i = 0; i < run->n; i++) {
                Call *c = run->calls + i;
                int r;

                if (!call_active(c))
                        continue;
                varlink_conn_close(&c->conn);
                c->retry_at = 0;
                r = load_result_set(&c->req->result, LOAD_VERDICT_NO_REPLY, 0, NULL, detail);
                if (r < 0)
                        return r;
        }
        run->active = 0;
        run->next = run->n;
        return 0;
}

/* Once the deadline has passed, each call still waiting for its answer gets none. */
static int run_expire(Run *run) {
        if (run->deadline == USEC_INFINITY || now_usec() < run->deadline)
                return 0;
        for (size_t i = 0; i < run->n; i++) {
                Call *c = run->calls + i;
                int r;

                if (c->conn.fd < 0)
                        continue;
                varlink_conn_close(&c->conn);
                run->active--;
                r = load_result_from_reply(&c->req->result, VARLINK_ERROR_TIMEOUT, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One round: poll, then the I/O, the replies and the retries that are due. */
static int run_step(Run *run) {
        /* Connected calls are active ones, at most max_parallel. */
        size_t max = MIN(run->n, (size_t) (run->options->max_parallel ?: 1));
        struct pollfd pfd[max];
        Call *polled[max];
        size_t k;
        int timeout, r;

        timeout = run_poll_setup(run, pfd, polled, max, &k);
        if (poll(pfd, k, timeout) < 0 && errno != EINTR)
                return -errno;

        for (size_t i = 0; i < k; i++) {
                Call *c = polled[i];

                if (pfd[i].revents == 0)
                        continue;
                r = varlink_conn_io(&c->conn);
                if (r == 0)
                        continue;
                if (r > 0)
                        r = call_reply(run, c);
                else {
                        varlink_conn_close(&c->conn);
                        r = call_broken(c, r, NULL);
                }
                if (r < 0)
                        return r;
                if (r == 0)
                        run->active--;
        }

        for (size_t i = 0; i < run->n; i++) {
                Call *c = run->calls + i;

                if (c->retry_at == 0 || c->retry_at > now_usec())
                        continue;
                c->retry_at = 0;
                r = call_start(run, c);
                if (r < 0)
                        return r;
                if (r == 0)
                        run->active--;
        }
        r = run_check_start(run);
        if (r < 0)
                return r;
        return run_expire(run);
}

int plain_requests_run(const PlainOptions *o, PlainRequest *reqs, size_t n) {
        _cleanup_free_ Call *calls = NULL;
        Run run = {
                .options = o,
                .n = n,
                .deadline = o->timeout_usec != USEC_INFINITY ? now_usec() + o->timeout_usec : USEC_INFINITY,
        };
        int r = 0;

        assert(o);

        for (size_t i = 0; i < n; i++) {
                r = load_result_set(&reqs[i].result, LOAD_VERDICT_NO_REPLY, 0, NULL, NULL);
                if (r < 0)
                        return r;
        }
        if (n == 0)
                return 0;

        if (o->start_timeout_usec > 0 && !load_daemon_running(o->running_lock))
                run.start_check = now_usec() + o->start_timeout_usec;

        calls = calloc(n, sizeof(Call));
        if (!calls)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                calls[i] = (Call) { .req = reqs + i, .conn = VARLINK_CONN_NULL };
        run.calls = calls;

        for (;;) {
                r = run_start_more(&run);
                if (r < 0 || run.active == 0)
                        break;
                r = run_step(&run);
                if (r < 0)
                        break;
        }

        for (size_t i = 0; i < n; i++)
                if (call_active(calls + i))
                        varlink_conn_close(&calls[i].conn);
        return r;
}

void plain_requests_done(PlainRequest *reqs, size_t n) {
        for (size_t i = 0; i < n; i++)
                load_result_done(&reqs[i].result);
}
