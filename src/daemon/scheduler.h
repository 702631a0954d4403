/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "module-loader.h"
#include "record-journal.h"
#include "resolver.h"

/* One job per module name, however many ask: a request for a module that is already being loaded
 * joins that job and gets its result. A job starts as soon as the modules it needs are live; a
 * bounded pool of worker threads runs finit_module(), so the event loop keeps answering while a probe
 * takes seconds. Everything but the workers' load runs on the event loop thread. */

typedef struct Scheduler Scheduler;
typedef struct Job Job;
typedef void (*job_done_t)(Job *j, void *userdata);

#define WORKERS_MAX 64U
/* Loads beyond Workers=: the kernel's own requests (a module's init asking for another, which waits
 * for it), and a pool that grows while every worker has been inside a load for STUCK_USEC. The
 * kernel runs at most 50 usermode modprobe helpers at once; so many loads blocked in an init is
 * already a machine in trouble. */
#define EXTRA_WORKERS_MAX 48U
#define STUCK_USEC (2U * 1000000U)
/* Checks ahead kept (what a module file's bytes said), for jobs that wait for what they need. */
#define PREPARED_MAX 64U

int scheduler_new(sd_event *e, const LoadContext *ctx, unsigned n_workers, Scheduler **ret);
Scheduler *scheduler_free(Scheduler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Scheduler *, scheduler_free);

/* Modules that must load while nothing else loads (drivers known to race). Names are canonical; the
 * array is borrowed and must stay valid. */
void scheduler_set_load_alone(Scheduler *s, char *const *names);

/* Called on the event loop thread with each job's decision, to record it (without one, each is
 * journaled as it is); when not NULL, with each job as it is handed to a worker; and with a load
 * whose decision had r->modinfo_pending once its file's .modinfo was read after it (recorded: its
 * journal record is due now, with what that read found). */
typedef void (*scheduler_record_t)(const Requesters *who, const ModuleResult *r, void *userdata);
typedef void (*scheduler_started_t)(const Requester *who, const ModuleResult *r, void *userdata);
void scheduler_set_record(Scheduler *s, scheduler_record_t record, scheduler_started_t started,
                          scheduler_record_t recorded, void *userdata);

/* What the workers are doing now. */
typedef struct SchedulerState {
        unsigned workers;
        unsigned busy;          /* inside loader_load(): opening, checking, finit_module() */
        size_t queued; /* jobs in flight not on a worker: waiting for a worker or for what they need */
        unsigned checked_ahead; /* of those, the ones whose file was checked while they wait */
        size_t unrecorded;      /* loads done whose journal record waits for their file's .modinfo */
} SchedulerState;
void scheduler_state(Scheduler *s, SchedulerState *ret);

/* Forgets remembered denials, when the index or the policy changed. */
void scheduler_flush_denials(Scheduler *s);

/* Turns a plan into jobs, joining jobs in flight. parameters are the request's own, for the modules
 * it names. Returns an array of referenced jobs, one per plan entry, in plan order. A module the
 * request names that is already loading from another file or with other parameters cannot be
 * joined: -EBUSY, with its name in ret_conflict, and nothing is done. */
int scheduler_submit(Scheduler *s, const Plan *plan, const char *parameters, const Requester *who,
                     Job ***ret_jobs, const char **ret_conflict);

/* Whether a job for this module is in flight. */
bool scheduler_has_job(Scheduler *s, const char *name);
/* Whether a load of this module is done and its journal record waits for its file's .modinfo. */
bool scheduler_has_unrecorded(Scheduler *s, const char *name);
/* Jobs in flight, and loads whose record waits: the daemon is idle only at zero. */
size_t scheduler_n_jobs(Scheduler *s);
/* Calls fn for each job in flight, as they were at the call (fn may start or finish jobs), until fn
 * returns < 0. Returns that, -ENOMEM, or 0. */
int scheduler_foreach_job(Scheduler *s, int (*fn)(Job *j, void *userdata), void *userdata);

Job *job_ref(Job *j);
Job *job_unref(Job *j);
void jobs_unref(Job **jobs, size_t n);

bool job_is_done(const Job *j);
const ModuleResult *job_result(const Job *j);
/* When the job went onto a worker (CLOCK_MONOTONIC, µs), or 0 while it is not on one: a module
 * whose init hangs is on a worker for ever. */
uint64_t job_running_since(const Job *j);

/* Calls cb once, on the event loop thread, when the job is done. Returns 0 or -ENOMEM. */
int job_watch(Job *j, job_done_t cb, void *userdata);

/* The scheduler's rules, pure: what the workers are doing, as plain data. */
typedef struct WorkerLanes {
        unsigned running;       /* jobs on a worker */
        unsigned preparing;     /* checks ahead on a worker */
        unsigned prepared;      /* jobs waiting with a check ahead kept */
        unsigned workers;       /* Workers= */
        unsigned extra;         /* added while every worker was stuck, until the pool drains */
        unsigned cpus;
        bool alone_running;     /* a LoadAlone= module is on a worker */
} WorkerLanes;

/* Whether a job may go onto a worker now. The kernel's lane: what request_module() asks for never
 * waits behind other loads (a module's init may be waiting for it), up to EXTRA_WORKERS_MAX beyond
 * Workers=. Otherwise within Workers= and the workers added while stuck, never beside a LoadAlone=
 * module, and a LoadAlone= module only when nothing else runs. */
bool lanes_may_start(const WorkerLanes *l, bool kernel, bool alone);

/* Whether a waiting job's file may be checked ahead on an idle worker: within Workers=, not more at
 * once than there are CPUs, nor more kept than PREPARED_MAX. */
bool lanes_may_prepare(const WorkerLanes *l);

/* The growth rule: jobs are ready and every worker is busy, with room for one more beyond Workers=.
 * Once that has lasted STUCK_USEC for the worker that started last, a worker is added. */
bool lanes_stuck(const WorkerLanes *l, bool ready);

/* Joins: a request for a module in flight joins its job only when it would have done the same: the
 * same file, and the same parameters (the module's options, then the request's). Returns 1, 0 for a
 * conflict, or -ENOMEM. */
int job_joinable(const char *job_path, const char *job_parameters, const ModuleSpec *spec,
                 const char *parameters);

/* A and b joined by a space, either may be NULL; NULL when both are. Returns 0 or -ENOMEM. */
int join_parameters(const char *a, const char *b, char **ret);

/* Whether a job that a request of source joins moves to the kernel's lane (it was not on it). */
bool join_takes_kernel_lane(bool kernel, RequestSource source);
