/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "decide.h"
#include "hashmap.h"
#include "kernel.h"
#include "log.h"
#include "module-name.h"
#include "record-journal.h"
#include "scheduler.h"
#include "time-util.h"

/* A module in state "coming" is being loaded by someone else (PID 1, an initrd, another loader):
 * poll until it is live or gone. */
#define COMING_POLL_USEC (20U * 1000U)
#define COMING_WAIT_MAX_USEC (10U * 60U * 1000000U)
#define DENIALS_MAX 4096U

typedef enum JobState {
        JOB_WAITING,    /* for the modules it needs */
        JOB_PREPARING,  /* waiting, and its file is being checked on a worker meanwhile */
        JOB_COMING,     /* for another loader's load of the same module */
        JOB_READY,      /* queued for a worker */
        JOB_RUNNING,
        JOB_DONE,
} JobState;

typedef struct Watcher {
        job_done_t cb;
        void *userdata;
} Watcher;

struct Job {
        unsigned n_ref;
        Scheduler *scheduler;
        JobState state;
        ModuleResult result;
        bool alone;
        bool kernel;            /* asked for by the kernel's request_module(): never waits behind loads */
        uint64_t made_usec;     /* CLOCK_MONOTONIC: when it was asked for */
        uint64_t running_since; /* CLOCK_MONOTONIC, once on a worker */
        uint64_t seq;           /* in the order jobs were made: what a module needs comes first */
        LoaderPrepared prepared; /* what a check of its file found while it waited */
        bool prepare_tried;
        bool prepared_counted;  /* in n_prepared */

        Job **requires;         /* must be live before this starts */
        size_t n_requires;
        Job **after;            /* must be done before this starts, success or not */
        size_t n_after;
        Job **dependents;       /* jobs to look at again when this is done */
        size_t n_dependents;
        Watcher *watchers;
        size_t n_watchers;

        Requester requester;    /* the first who asked */
        Requester *joined;      /* who asked while it was in flight, the first REQUESTERS_JOINED_MAX */
        size_t n_joined;
        unsigned n_requesters;  /* all who asked */

        sd_event_source *coming_timer;
        uint64_t coming_since;
        Job *next;              /* in the ready, work or done queue */
};

typedef struct Denial {
        int error;
        char reason[];
} Denial;

typedef struct JobQueue {
        Job *head;
        Job *tail;
} JobQueue;

struct Scheduler {
        sd_event *event;
        sd_event_source *done_source;
        LoadContext ctx;
        char *const *load_alone;
        scheduler_record_t record; /* writes what a job decided: the journal, the history */
        scheduler_started_t started;
        scheduler_record_t recorded; /* writes a record that waited for the file's .modinfo */
        void *record_userdata;

        /* Event loop thread only. */
        Hashmap *jobs;          /* module name → Job in flight, holding a reference */
        Hashmap *denials;       /* module file path → Denial */
        Hashmap *recording;     /* module name → Job done whose record waits for its .modinfo, held */
        JobQueue ready;
        JobQueue reads;         /* of those, the ones not yet handed to the workers (read_after) */
        unsigned n_running;
        unsigned n_preparing;
        unsigned n_prepared;    /* jobs waiting with a check ahead kept */
        unsigned n_cpus;
        uint64_t seq;
        bool alone_running;
        unsigned n_extra;       /* workers added while the pool was stuck, until it drains */
        sd_event_source *stuck_timer;

        /* Shared with the workers, under lock. */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        JobQueue work;
        JobQueue read_after;    /* taken after work: the .modinfo of files loaded, for their records */
        JobQueue prepare;       /* taken after those */
        JobQueue done;
        bool stopping;
        int done_fd;

        pthread_t *threads;
        unsigned n_threads;
        unsigned n_workers;
};

static void queue_push(JobQueue *q, Job *j) {
        j->next = NULL;
        if (q->tail)
                q->tail->next = j;
        else
                q->head = j;
        q->tail = j;
}

/* Takes j, which follows prev (NULL: j is the head), out of q. */
static void queue_unlink(JobQueue *q, Job *prev, Job *j) {
        if (prev)
                prev->next = j->next;
        else
                q->head = j->next;
        if (q->tail == j)
                q->tail = prev;
        j->next = NULL;
}

static Job *queue_pop(JobQueue *q) {
        Job *j = q->head;

        if (j) {
                q->head = j->next;
                if (!q->head)
                        q->tail = NULL;
                j->next = NULL;
        }
        return j;
}

Job *job_ref(Job *j) {
        if (j)
                j->n_ref++;
        return j;
}

static void job_release(Job **jobs, size_t n) {
        for (size_t i = 0; i < n; i++)
                job_unref(jobs[i]);
        free(jobs);
}

Job *job_unref(Job *j) {
        if (!j || --j->n_ref > 0)
                return NULL;

        sd_event_source_disable_unref(j->coming_timer);
        job_release(j->requires, j->n_requires);
        job_release(j->after, j->n_after);
        job_release(j->dependents, j->n_dependents);
        free(j->watchers);
        loader_prepared_done(&j->prepared);
        module_result_done(&j->result);
        requester_done(&j->requester);
        for (size_t i = 0; i < j->n_joined; i++)
                requester_done(j->joined + i);
        free(j->joined);
        free(j);
        return NULL;
}

void jobs_unref(Job **jobs, size_t n) {
        job_release(jobs, n);
}

bool job_is_done(const Job *j) {
        return j->state == JOB_DONE;
}

const ModuleResult *job_result(const Job *j) {
        assert(j);

        return &j->result;
}

int job_watch(Job *j, job_done_t cb, void *userdata) {
        Watcher *w;

        assert(j);

        w = reallocarray(j->watchers, j->n_watchers + 1, sizeof(Watcher));
        if (!w)
                return -ENOMEM;
        j->watchers = w;
        j->watchers[j->n_watchers++] = (Watcher) { cb, userdata };
        return 0;
}

/* The dependent is referenced: starting it may finish it, and its requests may let it go, while
 * this job still walks its list. */
static int job_add_dependent(Job *on, Job *j) {
        Job **a;

        for (size_t i = 0; i < on->n_dependents; i++)
                if (on->dependents[i] == j)
                        return 0;
        a = reallocarray(on->dependents, on->n_dependents + 1, sizeof(Job *));
        if (!a)
                return -ENOMEM;
        on->dependents = a;
        on->dependents[on->n_dependents++] = job_ref(j);
        return 0;
}

static void remember_denial(Scheduler *s, const ModuleResult *r) {
        size_t n;
        Denial *d;

        /* Only what the next attempt would find again: the origin check. Install commands are in the
         * index, which has its own cache. The verdict is about one file, so it is remembered for that
         * file: a request by path for a copy elsewhere must not deny the module's own file. A source's
         * signer rule is about the request, and another source's request is judged again. */
        if (r->outcome != OUTCOME_DENIED || r->cached || r->by_source || r->command || !r->reason || !r->path)
                return;
        if (hashmap_size(s->denials) >= DENIALS_MAX)
                hashmap_clear(s->denials);

        n = strlen(r->reason);
        d = malloc(sizeof(Denial) + n + 1);
        if (!d)
                return;
        d->error = r->error;
        memcpy(d->reason, r->reason, n + 1);
        if (hashmap_put(s->denials, r->path, d) < 0)
                free(d);
}

static void job_try_start(Job *j);
static void scheduler_dispatch(Scheduler *s);
static void scheduler_dispatch_prepares(Scheduler *s);

static Requesters job_requesters(Job *j) {
        return (Requesters) {
                .first = &j->requester,
                .joined = j->joined,
                .n_joined = j->n_joined,
                .n = j->n_requesters,
        };
}

static void job_record(Job *j) {
        Scheduler *s = j->scheduler;
        Requesters who = job_requesters(j);

        /* A root the load (or a check ahead) pinned first: its record before the module's. */
        journal_record_root_pins(s->ctx.roots, s->ctx.n_roots);
        if (s->record)
                s->record(&who, &j->result, s->record_userdata);
        else if (!j->result.modinfo_pending)
                journal_record_module(&who, &j->result);
}

/* The record that waited for the loaded file's .modinfo, with what it said. */
static void job_record_after(Job *j) {
        Scheduler *s = j->scheduler;
        Requesters who = job_requesters(j);

        if (loader_apply_after(&j->result, &j->prepared) < 0)
                (void) log_oom();
        j->result.modinfo_pending = false;
        loader_prepared_done(&j->prepared);
        if (s->recorded)
                s->recorded(&who, &j->result, s->record_userdata);
        else
                journal_record_module(&who, &j->result);
}

/* A load whose name was checked from its path (loader_load()) is final now: it is answered, counted
 * and kept, and its dependents start. Only its journal record waits until a worker that no load wants
 * has read the file's .modinfo; until then the job counts as in flight (scheduler_n_jobs()), so that
 * the daemon does not exit owing it. The same module loaded again while the last load's record
 * waits, or a scheduler stopping, reads it here. */
static void job_read_later(Job *j) {
        Scheduler *s = j->scheduler;

        if (!s->stopping && hashmap_put(s->recording, j->result.name, j) >= 0) {
                queue_push(&s->reads, job_ref(j));
                return;
        }
        loader_read_after(&j->prepared, j->result.alias_key);
        job_record_after(j);
}

static void job_finish(Job *j) {
        Scheduler *s = j->scheduler;
        Job **dependents;
        size_t n;

        job_ref(j);
        j->state = JOB_DONE;
        j->coming_timer = sd_event_source_disable_unref(j->coming_timer);
        if (j->prepared_counted)
                s->n_prepared--;
        j->prepared_counted = false;
        if (!j->prepared.read_after) {
                loader_prepared_done(&j->prepared);
                j->result.modinfo_pending = false;
        }

        job_record(j);
        if (j->prepared.read_after)
                job_read_later(j);
        remember_denial(s, &j->result);

        if (hashmap_get(s->jobs, j->result.name) == j) {
                hashmap_remove(s->jobs, j->result.name);
                job_unref(j);
        }

        for (size_t i = 0; i < j->n_watchers; i++)
                j->watchers[i].cb(j, j->watchers[i].userdata);
        j->n_watchers = 0;

        dependents = TAKE_PTR(j->dependents);
        n = j->n_dependents;
        j->n_dependents = 0;
        for (size_t i = 0; i < n; i++)
                if (dependents[i]->state == JOB_WAITING)
                        job_try_start(dependents[i]);
        job_release(dependents, n);

        job_unref(j);
}

static void job_finish_with(Job *j, Outcome o, int error, const char *fmt, ...) _printf_(4, 5);
static void job_finish_with(Job *j, Outcome o, int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (module_result_setv(&j->result, o, error, fmt, ap) < 0)
                (void) log_oom();
        va_end(ap);
        job_finish(j);
}

static void job_try_start(Job *j) {
        for (size_t i = 0; i < j->n_requires; i++)
                if (!job_is_done(j->requires[i]))
                        return;
        for (size_t i = 0; i < j->n_after; i++)
                if (!job_is_done(j->after[i]))
                        return;

        for (size_t i = 0; i < j->n_requires; i++) {
                const ModuleResult *d = &j->requires[i]->result;

                if (!outcome_is_success(d->outcome))
                        return job_finish_with(j, OUTCOME_FAILED, 0, "dependency %s was not loaded",
                                               d->name);
        }

        j->state = JOB_READY;
        queue_push(&j->scheduler->ready, j);
        scheduler_dispatch(j->scheduler);
}

static void *worker_main(void *userdata);

/* A thread for each load that runs: Workers= at start, more as the lane and growth need them. */
static int scheduler_spawn(Scheduler *s) {
        sigset_t all, saved;
        int r;

        if (s->n_threads >= s->n_workers + EXTRA_WORKERS_MAX)
                return -EAGAIN;
        /* Workers take no signals: the event loop handles them. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = -pthread_create(&s->threads[s->n_threads], NULL, worker_main, s);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0)
                return r;
        s->n_threads++;
        return 0;
}

/* The workers as the pure rules below see them. */
static WorkerLanes scheduler_lanes(const Scheduler *s) {
        return (WorkerLanes) {
                .running = s->n_running,
                .preparing = s->n_preparing,
                .prepared = s->n_prepared,
                .workers = s->n_workers,
                .extra = s->n_extra,
                .cpus = s->n_cpus,
                .alone_running = s->alone_running,
        };
}

bool lanes_may_start(const WorkerLanes *l, bool kernel, bool alone) {
        if (kernel)
                return l->running < l->workers + EXTRA_WORKERS_MAX;
        if (l->alone_running || l->running >= l->workers + l->extra)
                return false;
        return !alone || l->running == 0;
}

bool lanes_may_prepare(const WorkerLanes *l) {
        assert(l);

        return l->running + l->preparing < l->workers && l->preparing < l->cpus &&
                l->prepared + l->preparing < PREPARED_MAX;
}

bool lanes_stuck(const WorkerLanes *l, bool ready) {
        assert(l);

        return ready && l->running >= l->workers + l->extra && l->extra < EXTRA_WORKERS_MAX;
}

/* Whether j may start now (lanes_may_start()). */
static bool job_may_start(Scheduler *s, const Job *j) {
        WorkerLanes l = scheduler_lanes(s);

        return lanes_may_start(&l, j->kernel, j->alone);
}

static void job_run(Scheduler *s, Job *j) {
        if (j->prepared_counted)
                s->n_prepared--;        /* no longer waiting */
        j->prepared_counted = false;
        j->state = JOB_RUNNING;
        j->running_since = now_usec();
        j->result.wait_usec = j->running_since - j->made_usec;
        s->n_running++;
        s->alone_running = s->alone_running || j->alone;
        if (s->started)
                s->started(&j->requester, &j->result, s->record_userdata);
        if (s->n_running + s->n_preparing > s->n_threads) {
                int r = scheduler_spawn(s);
                if (r < 0)
                        log_warning_errno(r, "Failed to start another worker thread, %s waits for one: %m",
                                          j->result.name);
        }

        pthread_mutex_lock(&s->lock);
        queue_push(&s->work, j);
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

static void scheduler_arm_stuck_timer(Scheduler *s);

/* The job made first among those that wait for what they need and whose file was not checked yet. */
static Job *next_to_prepare(Scheduler *s) {
        size_t state = 0;
        Job *j, *best = NULL;

        while (hashmap_iterate(s->jobs, &state, NULL, (void **) &j))
                if (j->state == JOB_WAITING && !j->prepare_tried && (!best || j->seq < best->seq))
                        best = j;
        return best;
}

/* While a job waits for the modules it needs, its file can be opened and checked on a worker no load
 * wants: reading a compressed module's name and signature means decompressing all of it, which then
 * is not on the path from the last of those modules going live to this one's finit_module(). Not more
 * at once than there are CPUs (it is CPU work, competing with the loads' own checks), nor more kept
 * than PREPARED_MAX. A load that finds every worker on a check ahead gets a thread of its own
 * (job_run()): at most Workers= of them over the daemon's life, since checks ahead only start
 * within Workers=. */
static void scheduler_dispatch_prepares(Scheduler *s) {
        for (;;) {
                WorkerLanes l = scheduler_lanes(s);
                Job *j;

                if (!lanes_may_prepare(&l) || s->stopping)
                        return;
                j = next_to_prepare(s);

                if (!j)
                        return;
                j->prepare_tried = true;
                j->state = JOB_PREPARING;
                s->n_preparing++;
                pthread_mutex_lock(&s->lock);
                queue_push(&s->prepare, j);
                pthread_cond_signal(&s->cond);
                pthread_mutex_unlock(&s->lock);
        }
}

/* Starts every ready job that may start, in order; one that may not (a LoadAlone= module waiting for
 * the others to finish) never holds up those behind it. */
static void scheduler_dispatch(Scheduler *s) {
        Job *prev = NULL, *j, *next;

        if (s->stopping)
                return;
        if (s->n_running == 0)
                s->n_extra = 0;
        for (j = s->ready.head; j; j = next) {
                next = j->next;
                if (!job_may_start(s, j)) {
                        prev = j;
                        continue;
                }
                queue_unlink(&s->ready, prev, j);
                job_run(s, j);
        }
        scheduler_dispatch_prepares(s);
        scheduler_arm_stuck_timer(s);
}

/* Jobs wait and every worker has been inside one load for STUCK_USEC: its init may be waiting for one
 * of them (a request_module() that is not the kernel's own lane, a probe that needs another driver),
 * or just slow; either way one more worker lets the queue move. */
static int on_stuck_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Scheduler *s = userdata;
        WorkerLanes l = scheduler_lanes(s);

        if (lanes_stuck(&l, !!s->ready.head)) {
                const Job *oldest = NULL, *j;
                size_t state = 0;

                /* Named, so that an init that hangs is found in the journal, not only in Status. */
                while (hashmap_iterate(s->jobs, &state, NULL, (void **) &j))
                        if (j->state == JOB_RUNNING && (!oldest || j->running_since < oldest->running_since))
                                oldest = j;
                s->n_extra++;
                log_notice(
                        "Every worker has been loading for %u s (the longest, %s, for %llu s) and %s waits: "
                        "adding a worker (%u beyond Workers=).",
                        STUCK_USEC / 1000000U, oldest ? oldest->result.name : "?",
                        oldest ? (unsigned long long) ((now_usec() - oldest->running_since) / 1000000U) :
                                 0ULL,
                        s->ready.head->result.name, s->n_extra);
        }
        scheduler_dispatch(s);
        return 0;
}

static void scheduler_arm_stuck_timer(Scheduler *s) {
        WorkerLanes l = scheduler_lanes(s);
        uint64_t newest = 0;
        size_t state = 0;
        Job *j;
        int r;

        if (!lanes_stuck(&l, !!s->ready.head) || s->alone_running) {
                (void) sd_event_source_set_enabled(s->stuck_timer, SD_EVENT_OFF);
                return;
        }
        /* Every worker is stuck once the one that started last has been running STUCK_USEC. */
        while (hashmap_iterate(s->jobs, &state, NULL, (void **) &j))
                if (j->state == JOB_RUNNING && j->running_since > newest)
                        newest = j->running_since;
        if (newest == 0)
                return;
        if (s->stuck_timer) {
                r = sd_event_source_set_time(s->stuck_timer, newest + STUCK_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(s->stuck_timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(s->event, &s->stuck_timer, CLOCK_MONOTONIC, newest + STUCK_USEC,
                                      100U * 1000U, on_stuck_timer, s);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the timer that adds workers when all are stuck: %m");
}

static void *worker_main(void *userdata) {
        Scheduler *s = userdata;

        for (;;) {
                bool prepare = false, after = false;
                Job *j;

                pthread_mutex_lock(&s->lock);
                while (!s->work.head && !s->read_after.head && !s->prepare.head && !s->stopping)
                        pthread_cond_wait(&s->cond, &s->lock);
                j = s->stopping ? NULL : queue_pop(&s->work);
                if (!j && !s->stopping) {
                        j = queue_pop(&s->read_after);
                        after = !!j;
                }
                if (!j && !s->stopping) {
                        j = queue_pop(&s->prepare);
                        prepare = true;
                }
                pthread_mutex_unlock(&s->lock);
                if (!j)
                        return NULL;

                if (after)
                        loader_read_after(&j->prepared, j->result.alias_key);
                else if (prepare)
                        (void) loader_prepare(&s->ctx, &j->result, &j->prepared);
                else if (loader_load(&s->ctx, &j->result, &j->prepared) < 0)
                        j->result.outcome = OUTCOME_FAILED;

                pthread_mutex_lock(&s->lock);
                queue_push(&s->done, j);
                pthread_mutex_unlock(&s->lock);
                (void) eventfd_write(s->done_fd, 1);
        }
}

/* The reads of the loads just finished, to the workers: after the loads those made ready, which a
 * worker takes first. */
static void scheduler_dispatch_reads(Scheduler *s) {
        Job *j;

        if (!s->reads.head)
                return;
        pthread_mutex_lock(&s->lock);
        while ((j = queue_pop(&s->reads)))
                queue_push(&s->read_after, j);
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

/* A job back from loader_read_after(): its record written, and no longer in flight. */
static void job_recorded(Job *j) {
        Scheduler *s = j->scheduler;

        if (hashmap_get(s->recording, j->result.name) == j)
                hashmap_remove(s->recording, j->result.name);
        job_record_after(j);
        job_unref(j);
}

static int on_jobs_done(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Scheduler *s = userdata;
        JobQueue done;
        eventfd_t v;
        Job *j;

        (void) eventfd_read(fd, &v);

        pthread_mutex_lock(&s->lock);
        done = s->done;
        s->done = (JobQueue) {};
        pthread_mutex_unlock(&s->lock);

        while ((j = queue_pop(&done))) {
                if (j->state == JOB_DONE) {
                        job_recorded(j);
                        continue;
                }
                if (j->state == JOB_PREPARING) {
                        s->n_preparing--;
                        if (j->prepared.checked) {
                                s->n_prepared++;
                                j->prepared_counted = true;
                        }
                        j->state = JOB_WAITING;
                        job_try_start(j);
                        continue;
                }
                s->n_running--;
                if (j->alone)
                        s->alone_running = false;
                job_finish(j);
        }
        scheduler_dispatch(s);
        scheduler_dispatch_reads(s);
        return 0;
}

static int on_coming_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Job *j = userdata;
        ModuleState state;
        int r;

        r = kernel_module_state(j->result.name, &state);
        if (r < 0) {
                job_finish_with(j, OUTCOME_FAILED, r, "cannot read module state: %s", strerrordesc_np(-r));
                return 0;
        }
        switch (state) {
        case MODULE_STATE_LIVE:
                job_finish_with(j, OUTCOME_ALREADY_LOADED, 0, NULL);
                return 0;
        case MODULE_STATE_ABSENT:
                /* The other load failed or was undone; try ours. */
                j->coming_timer = sd_event_source_disable_unref(j->coming_timer);
                j->state = JOB_WAITING;
                job_try_start(j);
                return 0;
        default:
                break;
        }

        if (now_usec() - j->coming_since > COMING_WAIT_MAX_USEC) {
                job_finish_with(j, OUTCOME_FAILED, ETIMEDOUT, "module stayed in state '%s'",
                                module_state_to_string(state));
                return 0;
        }
        r = sd_event_source_set_time_relative(source, COMING_POLL_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        if (r < 0)
                job_finish_with(j, OUTCOME_FAILED, r, "cannot wait for the module: %s", strerrordesc_np(-r));
        return 0;
}

/* What is known before any file is opened (module_decide_early()). Returns true when that decided
 * the job, or set it waiting for another loader. */
static bool job_decide_early(Job *j, const ModuleSpec *spec) {
        Scheduler *s = j->scheduler;
        ModuleState state = MODULE_STATE_ABSENT;
        const Denial *denial = spec->path ? hashmap_get(s->denials, spec->path) : NULL;
        _cleanup_(module_early_done) ModuleEarly e = {};
        int r = 0;

        if (spec->path)
                r = kernel_module_state(j->result.name, &state);
        r = module_decide_early(spec, r, state, denial ? denial->reason : NULL, denial ? denial->error : 0,
                                &e);
        if (r < 0) {
                job_finish_with(j, OUTCOME_FAILED, r, "%s", strerrordesc_np(-r));
                return true;
        }
        switch (e.verdict) {
        case EARLY_DONE:
                j->result.cached = e.cached;
                if (e.command)
                        j->result.command = strdup(spec->install_command);
                job_finish_with(j, e.outcome, e.error, e.reason ? "%s" : NULL, e.reason);
                return true;
        case EARLY_COMING:
                j->state = JOB_COMING;
                j->coming_since = now_usec();
                r = sd_event_add_time_relative(s->event, &j->coming_timer, CLOCK_MONOTONIC, COMING_POLL_USEC,
                                               COMING_POLL_USEC / 4, on_coming_timer, j);
                if (r < 0)
                        job_finish_with(j, OUTCOME_FAILED, r, "cannot wait for the module: %s",
                                        strerrordesc_np(-r));
                return true;
        default:
                return false;
        }
}

static bool name_in(char *const *names, const char *name) {
        for (; names && *names; names++)
                if (module_name_equal(*names, name))
                        return true;
        return false;
}

int join_parameters(const char *a, const char *b, char **ret) {
        if (!a && !b) {
                *ret = NULL;
                return 0;
        }
        if (asprintf(ret, "%s%s%s", a ?: "", a && b ? " " : "", b ?: "") < 0)
                return -ENOMEM;
        return 0;
}

/* The request's key, for a module it asked for through an alias: which of the file's alias patterns it
 * matched is read with the file. */
static const char *alias_key(const ModuleSpec *spec, const Requester *who) {
        const char *key = who->modalias ?: who->name;

        if (spec->role != ROLE_REQUESTED || !key || module_name_equal(key, spec->name))
                return NULL;
        return key;
}

static int job_new(Scheduler *s, const Plan *plan, size_t i, const char *parameters, const Requester *who,
                   Job **ret) {
        const ModuleSpec *spec = plan->specs + i;
        Job *j;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->n_ref = 1;
        j->scheduler = s;
        j->seq = ++s->seq;
        j->made_usec = now_usec();
        j->n_requesters = 1;
        j->alone = name_in(s->load_alone, spec->name);
        j->kernel = who->source == SOURCE_KERNEL;
        j->result.role = spec->role;
        j->result.source = who->source;
        j->result.name = strdup(spec->name);
        if (!j->result.name || (spec->path && !(j->result.path = strdup(spec->path))) ||
            join_parameters(spec->options, spec->role == ROLE_REQUESTED ? parameters : NULL,
                            &j->result.parameters) < 0 ||
            strdup_or_null(spec->options_source, &j->result.options_source) < 0 ||
            strdup_or_null(alias_key(spec, who), &j->result.alias_key) < 0 ||
            plan_needed_by(plan, i, &j->result.required_by) < 0 ||
            requester_copy(who, &j->requester) < 0) {
                job_unref(j);
                return -ENOMEM;
        }
        *ret = j;
        return 0;
}

static int job_link(Job ***array, size_t *n, Job *on, Job *j) {
        Job **a = reallocarray(*array, *n + 1, sizeof(Job *));

        if (!a)
                return -ENOMEM;
        *array = a;
        (*array)[(*n)++] = job_ref(on);
        return job_is_done(on) ? 0 : job_add_dependent(on, j);
}

static int job_link_all(Job *j, const ModuleSpec *spec, Job **jobs) {
        int r;

        for (size_t k = 0; k < spec->n_requires; k++) {
                r = job_link(&j->requires, &j->n_requires, jobs[spec->requires[k]], j);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < spec->n_after; k++) {
                r = job_link(&j->after, &j->n_after, jobs[spec->after[k]], j);
                if (r < 0)
                        return r;
        }
        return 0;
}

int job_joinable(const char *job_path, const char *job_parameters, const ModuleSpec *spec,
                 const char *parameters) {
        _cleanup_free_ char *want = NULL;

        if (join_parameters(spec->options, parameters, &want) < 0)
                return -ENOMEM;
        return streq_ptr(job_path, spec->path) && streq_ptr(job_parameters, want);
}

/* A request joins a load in flight only when it would have done the same (job_joinable()). */
static int find_conflict(Scheduler *s, const Plan *plan, const char *parameters, const char **ret) {
        for (size_t i = 0; i < plan->n_specs; i++) {
                const ModuleSpec *spec = plan->specs + i;
                Job *j = hashmap_get(s->jobs, spec->name);
                int r;

                if (!j || spec->role != ROLE_REQUESTED)
                        continue;
                r = job_joinable(j->result.path, j->result.parameters, spec, parameters);
                if (r < 0)
                        return r;
                if (r == 0) {
                        *ret = j->result.name;
                        return -EBUSY;
                }
        }
        return 0;
}

bool join_takes_kernel_lane(bool kernel, RequestSource source) {
        return source == SOURCE_KERNEL && !kernel;
}

/* Another request for a job in flight: counted always, and kept for the record while there is room
 * (without memory for it, only counted: the count still says it asked). The kernel's request_module()
 * waits for its answer, maybe inside another module's init that holds a worker or runs alone: a job
 * it joins takes the kernel's lane from then on, or it would wait behind what waits for it. Returns
 * whether the job just took the lane. */
static bool job_join(Job *j, const Requester *who) {
        bool promoted = join_takes_kernel_lane(j->kernel, who->source);

        j->kernel = j->kernel || promoted;
        j->n_requesters++;
        if (j->n_joined >= REQUESTERS_JOINED_MAX)
                return promoted;
        if (!j->joined) {
                j->joined = calloc(REQUESTERS_JOINED_MAX, sizeof(Requester));
                if (!j->joined)
                        return promoted;
        }
        if (requester_copy(who, j->joined + j->n_joined) >= 0)
                j->n_joined++;
        return promoted;
}

int scheduler_submit(Scheduler *s, const Plan *plan, const char *parameters, const Requester *who,
                     Job ***ret_jobs, const char **ret_conflict) {
        bool promoted = false;
        Job **jobs;
        int r;

        assert(s);

        r = find_conflict(s, plan, parameters, ret_conflict);
        if (r < 0)
                return r;

        jobs = calloc(plan->n_specs ?: 1, sizeof(Job *));
        if (!jobs)
                return -ENOMEM;

        /* Plan order puts what a module needs before it, so every index a spec refers to is set. */
        for (size_t i = 0; i < plan->n_specs; i++) {
                const ModuleSpec *spec = plan->specs + i;
                Job *j = hashmap_get(s->jobs, spec->name);

                if (j) {
                        /* Unlike a new job, one in the ready queue already starts only at the next
                         * dispatch: made below, once the whole plan is in. */
                        promoted = job_join(j, who) || promoted;
                        jobs[i] = job_ref(j);
                        continue;
                }

                r = job_new(s, plan, i, parameters, who, &j);
                if (r >= 0) {
                        r = hashmap_put(s->jobs, spec->name, j);
                        if (r < 0)
                                job_unref(j);
                }
                if (r < 0) {
                        jobs_unref(jobs, i);
                        return r;
                }
                jobs[i] = job_ref(j);

                /* Linked first: a job that waits for another loader may end up loading itself. */
                r = job_link_all(j, spec, jobs);
                if (r < 0) {
                        job_finish_with(j, OUTCOME_FAILED, r, "%s", strerrordesc_np(-r));
                        continue;
                }
                if (job_decide_early(j, spec))
                        continue;

                j->state = JOB_WAITING;
                job_try_start(j);
        }
        if (promoted)
                scheduler_dispatch(s);
        else
                scheduler_dispatch_prepares(s);

        *ret_jobs = jobs;
        return 0;
}

bool scheduler_has_job(Scheduler *s, const char *name) {
        assert(s);

        return hashmap_get(s->jobs, name);
}

bool scheduler_has_unrecorded(Scheduler *s, const char *name) {
        assert(s);

        return hashmap_get(s->recording, name);
}

size_t scheduler_n_jobs(Scheduler *s) {
        assert(s);

        return hashmap_size(s->jobs) + hashmap_size(s->recording);
}

void scheduler_state(Scheduler *s, SchedulerState *ret) {
        size_t n = hashmap_size(s->jobs);

        assert(s);
        assert(ret);

        *ret = (SchedulerState) {
                .workers = s->n_workers,
                .busy = s->n_running,
                .queued = n > s->n_running ? n - s->n_running : 0,
                .checked_ahead = s->n_prepared,
                .unrecorded = hashmap_size(s->recording),
        };
}

uint64_t job_running_since(const Job *j) {
        assert(j);

        return j->state == JOB_RUNNING ? j->running_since : 0;
}

int scheduler_foreach_job(Scheduler *s, int (*fn)(Job *j, void *userdata), void *userdata) {
        size_t state = 0, n = 0;
        Job **jobs, *j;
        int r = 0;

        assert(s);
        assert(fn);

        /* Each referenced first: fn may finish one, or start others. */
        jobs = calloc(hashmap_size(s->jobs) ?: 1, sizeof(Job *));
        if (!jobs)
                return -ENOMEM;
        while (hashmap_iterate(s->jobs, &state, NULL, (void **) &j))
                jobs[n++] = job_ref(j);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = fn(jobs[i], userdata);
        jobs_unref(jobs, n);
        return r < 0 ? r : 0;
}

void scheduler_set_load_alone(Scheduler *s, char *const *names) {
        assert(s);

        s->load_alone = names;
}

void scheduler_set_record(Scheduler *s, scheduler_record_t record, scheduler_started_t started,
                          scheduler_record_t recorded, void *userdata) {
        assert(s);

        s->record = record;
        s->started = started;
        s->recorded = recorded;
        s->record_userdata = userdata;
}

void scheduler_flush_denials(Scheduler *s) {
        assert(s);

        hashmap_clear(s->denials);
}

static void job_unref_void(void *j) {
        job_unref(j);
}

int scheduler_new(sd_event *e, const LoadContext *ctx, unsigned n_workers, Scheduler **ret) {
        _cleanup_(scheduler_freep) Scheduler *s = NULL;
        int r = 0;

        if (n_workers < 1 || n_workers > WORKERS_MAX)
                return -ERANGE;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->ctx = *ctx;
        s->n_workers = n_workers;
        s->n_cpus = (unsigned) MAX(1L, sysconf(_SC_NPROCESSORS_ONLN));
        s->done_fd = -EBADF;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);

        s->jobs = hashmap_new(job_unref_void);
        s->denials = hashmap_new(free);
        s->recording = hashmap_new(NULL);
        s->threads = calloc(n_workers + EXTRA_WORKERS_MAX, sizeof(pthread_t));
        if (!s->jobs || !s->denials || !s->recording || !s->threads)
                return -ENOMEM;

        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->done_fd < 0)
                return negative_errno();
        r = sd_event_add_io(e, &s->done_source, s->done_fd, EPOLLIN, on_jobs_done, s);
        if (r < 0)
                return r;

        while (s->n_threads < n_workers) {
                r = scheduler_spawn(s);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

Scheduler *scheduler_free(Scheduler *s) {
        size_t state = 0;
        Job *j;

        if (!s)
                return NULL;

        /* Loads in progress finish (finit_module cannot be interrupted); queued ones are dropped. */
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        for (unsigned i = 0; i < s->n_threads; i++)
                pthread_join(s->threads[i], NULL);

        /* What the kernel did is recorded and answered, even now; a check made ahead of a load that
         * will not happen decided nothing. */
        while ((j = queue_pop(&s->done)))
                if (j->state == JOB_RUNNING)
                        job_finish(j);
                else if (j->state == JOB_DONE)
                        job_recorded(j);
        /* Loads whose record waited for their .modinfo are recorded with it. */
        scheduler_dispatch_reads(s);
        while ((j = queue_pop(&s->read_after))) {
                loader_read_after(&j->prepared, j->result.alias_key);
                job_recorded(j);
        }

        /* Jobs that never ran hold their dependents, which hold them: let go of that first. */
        while (s->jobs && hashmap_iterate(s->jobs, &state, NULL, (void **) &j)) {
                job_release(j->dependents, j->n_dependents);
                j->dependents = NULL;
                j->n_dependents = 0;
        }

        sd_event_source_disable_unref(s->stuck_timer);
        hashmap_free(s->jobs);
        hashmap_free(s->denials);
        hashmap_free(s->recording);
        sd_event_source_disable_unref(s->done_source);
        safe_close(s->done_fd);
        sd_event_unref(s->event);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s->threads);
        free(s);
        return NULL;
}
