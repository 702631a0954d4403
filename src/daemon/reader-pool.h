/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "macro.h"

/* The file and prober work of the read-only methods (Explain's checks of module files, Status's root
 * identities), on threads of its own: never on the event loop, which every load waits for, and never on the
 * scheduler's workers, which are the loads'. Its threads lower their CPU priority where the sandbox lets
 * them (nice 19), so that a reader's checks take only what the loads leave. What one uid may have here is
 * bounded: one item running at a time (the next waits, so another uid's item goes first),
 * READER_PENDING_PER_UID in all; READER_PENDING_MAX for everyone. */

#define READER_THREADS 2U
#define READER_PENDING_PER_UID 4U
#define READER_PENDING_MAX 256U

/* The reason of the Busy reply to a call that reader_pool_submit() refused. */
#define READER_BUSY_REASON "too many Explain and Status calls of this user in progress"

typedef struct ReaderPool ReaderPool;

/* work runs on a pool thread, and must touch only what userdata owns and what stays read-only while
 * the daemon runs. done runs on the event loop thread afterwards, and owns userdata from then on;
 * with cancelled when the pool is freed first (work may not have run). */
typedef void (*reader_work_t)(void *userdata);
typedef void (*reader_done_t)(void *userdata, bool cancelled);

int reader_pool_new(sd_event *e, ReaderPool **ret);
/* Waits for the items on a thread; the others are done with cancelled. */
ReaderPool *reader_pool_free(ReaderPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ReaderPool *, reader_pool_free);

/* Queues work for uid. Returns 0; -EBUSY when uid has READER_PENDING_PER_UID items already, or the
 * pool READER_PENDING_MAX (nothing is queued: done is not called); -ENOMEM. */
int reader_pool_submit(ReaderPool *p, uid_t uid, reader_work_t work, reader_done_t done, void *userdata);

/* reader_pool_submit() for the caller on link, by its uid, answering io.modgate.Manager.Busy itself
 * when that refuses. Returns 1 when queued (done answers later), else the result of the Busy reply or
 * -errno (done is not called). */
int reader_pool_submit_call(ReaderPool *p, sd_varlink *link, reader_work_t work, reader_done_t done,
                            void *userdata);

/* done's answer to link: reply, or the error r, logged as "Failed to WHAT". */
void reader_reply(sd_varlink *link, int r, sd_json_variant *reply, const char *what);

/* Items queued or on a thread: the daemon is not idle while a reply is being made. */
size_t reader_pool_pending(const ReaderPool *p);
