/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "reader-pool.h"
#include "varlink-errors.h"

/* Nice 19: a CPU that a load wants goes to the load (a weight of 15 against a load's 1024). Where a
 * seccomp filter forbids setpriority(2) (the unit's SystemCallFilter=~@resources) the threads stay at
 * the daemon's priority: there are two of them, and a uid has one. */
#define READER_NICE 19

typedef struct ReaderItem ReaderItem;
struct ReaderItem {
        ReaderItem *next;
        uid_t uid;
        reader_work_t work;
        reader_done_t done;
        void *userdata;
};

typedef struct ItemQueue {
        ReaderItem *head, *tail;
} ItemQueue;

struct ReaderPool {
        sd_event_source *done_source;

        /* Event loop thread only. */
        ItemQueue waiting;
        size_t n_pending;               /* waiting, and handed to the threads */
        uid_t running[READER_THREADS];  /* the uids of the items handed to the threads */
        unsigned n_running;

        /* Shared with the threads, under lock. */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        ItemQueue work;
        ItemQueue done;
        bool stopping;
        int done_fd;

        pthread_t threads[READER_THREADS];
        unsigned n_threads;
};

static void queue_push(ItemQueue *q, ReaderItem *i) {
        i->next = NULL;
        if (q->tail)
                q->tail->next = i;
        else
                q->head = i;
        q->tail = i;
}

static ReaderItem *queue_pop(ItemQueue *q) {
        ReaderItem *i = q->head;

        if (i) {
                q->head = i->next;
                if (!q->head)
                        q->tail = NULL;
                i->next = NULL;
        }
        return i;
}

static void queue_cancel(ItemQueue *q) {
        ReaderItem *i;

        while ((i = queue_pop(q))) {
                i->done(i->userdata, true);
                free(i);
        }
}

static void *reader_main(void *userdata) {
        ReaderPool *p = userdata;

        (void) setpriority(PRIO_PROCESS, (id_t) gettid(), READER_NICE);
        for (;;) {
                ReaderItem *i;

                pthread_mutex_lock(&p->lock);
                while (!p->work.head && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                i = p->stopping ? NULL : queue_pop(&p->work);
                pthread_mutex_unlock(&p->lock);
                if (!i)
                        return NULL;

                i->work(i->userdata);

                pthread_mutex_lock(&p->lock);
                queue_push(&p->done, i);
                pthread_mutex_unlock(&p->lock);
                (void) eventfd_write(p->done_fd, 1);
        }
}

static bool uid_running(const ReaderPool *p, uid_t uid) {
        for (unsigned k = 0; k < p->n_running; k++)
                if (p->running[k] == uid)
                        return true;
        return false;
}

/* Hands the oldest waiting item of a uid with none running to each free thread: a uid that queued
 * many waits for its own, never the others for it. */
static void reader_pool_dispatch(ReaderPool *p) {
        while (p->n_running < p->n_threads) {
                ReaderItem *prev = NULL, *i;

                for (i = p->waiting.head; i && uid_running(p, i->uid); i = i->next)
                        prev = i;
                if (!i)
                        return;
                if (prev)
                        prev->next = i->next;
                else
                        p->waiting.head = i->next;
                if (p->waiting.tail == i)
                        p->waiting.tail = prev;

                p->running[p->n_running++] = i->uid;
                pthread_mutex_lock(&p->lock);
                queue_push(&p->work, i);
                pthread_cond_signal(&p->cond);
                pthread_mutex_unlock(&p->lock);
        }
}

static void uid_stopped(ReaderPool *p, uid_t uid) {
        for (unsigned k = 0; k < p->n_running; k++)
                if (p->running[k] == uid) {
                        p->running[k] = p->running[--p->n_running];
                        return;
                }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ReaderPool *p = userdata;
        ItemQueue done;
        ReaderItem *i;
        eventfd_t v;

        (void) eventfd_read(fd, &v);
        pthread_mutex_lock(&p->lock);
        done = p->done;
        p->done = (ItemQueue) {};
        pthread_mutex_unlock(&p->lock);

        while ((i = queue_pop(&done))) {
                uid_stopped(p, i->uid);
                p->n_pending--;
                i->done(i->userdata, false);
                free(i);
        }
        reader_pool_dispatch(p);
        return 0;
}

ReaderPool *reader_pool_free(ReaderPool *p) {
        if (!p)
                return NULL;

        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (unsigned k = 0; k < p->n_threads; k++)
                (void) pthread_join(p->threads[k], NULL);

        queue_cancel(&p->done);
        queue_cancel(&p->work);
        queue_cancel(&p->waiting);
        sd_event_source_disable_unref(p->done_source);
        safe_close(p->done_fd);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

int reader_pool_new(sd_event *e, ReaderPool **ret) {
        _cleanup_(reader_pool_freep) ReaderPool *p = NULL;
        sigset_t all, saved;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->done_fd = -EBADF;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->done_fd < 0)
                return negative_errno();
        r = sd_event_add_io(e, &p->done_source, p->done_fd, EPOLLIN, on_done, p);
        if (r < 0)
                return r;

        /* The threads take no signals: the event loop handles them. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        for (r = 0; r >= 0 && p->n_threads < READER_THREADS; p->n_threads += r >= 0)
                r = -pthread_create(&p->threads[p->n_threads], NULL, reader_main, p);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(p);
        return 0;
}

int reader_pool_submit(ReaderPool *p, uid_t uid, reader_work_t work, reader_done_t done, void *userdata) {
        unsigned n = uid_running(p, uid);
        ReaderItem *i;

        for (i = p->waiting.head; i; i = i->next)
                n += i->uid == uid;
        if (n >= READER_PENDING_PER_UID || p->n_pending >= READER_PENDING_MAX)
                return -EBUSY;

        i = malloc(sizeof(*i));
        if (!i)
                return -ENOMEM;
        *i = (ReaderItem) { .uid = uid, .work = work, .done = done, .userdata = userdata };
        queue_push(&p->waiting, i);
        p->n_pending++;
        reader_pool_dispatch(p);
        return 0;
}

int reader_pool_submit_call(ReaderPool *p, sd_varlink *link, reader_work_t work, reader_done_t done,
                            void *userdata) {
        uid_t uid;
        int r;

        r = sd_varlink_get_peer_uid(link, &uid);
        if (r < 0)
                return r;
        r = reader_pool_submit(p, uid, work, done, userdata);
        if (r == -EBUSY)
                return sd_varlink_errorbo(link, MANAGER_ERROR_BUSY,
                                          SD_JSON_BUILD_PAIR_STRING("reason", READER_BUSY_REASON));
        return r < 0 ? r : 1;
}

void reader_reply(sd_varlink *link, int r, sd_json_variant *reply, const char *what) {
        if (r < 0) {
                log_error_errno(r, "Failed to %s: %m", what);
                (void) sd_varlink_error_errno(link, r);
                return;
        }
        (void) sd_varlink_reply(link, reply);
}

size_t reader_pool_pending(const ReaderPool *p) {
        return p ? p->n_pending : 0;
}
