/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-json.h>

#include "fileio.h"
#include "kernel.h"
#include "log.h"
#include "manager.h"
#include "method-load.h"
#include "method-seal.h"
#include "module-result.h"
#include "parse-util.h"
#include "record.h"
#include "strv.h"
#include "time-util.h"
#include "varlink-errors.h"

/* An accepted Seal: its final list loading, and every other load in flight, waited for. */
struct SealRequest {
        Manager *manager;
        sd_varlink *link;               /* NULL: nobody to answer (a oneway call) */
        Requester who;
        char **load;                    /* the final list, as asked */
        char **pending;                 /* what was loading when the Seal came */
        Job **jobs;                     /* the final list's, in order, for the reply */
        size_t n_jobs;
        size_t n_watched;               /* jobs still to finish before the next look */
        sd_event_source *again;         /* looks again once they did, off the scheduler's stack */
        bool cancelled;
};

static SealRequest *seal_request_free(SealRequest *req) {
        if (!req)
                return NULL;
        sd_event_source_disable_unref(req->again);
        sd_varlink_unref(req->link);
        requester_done(&req->who);
        strv_free(req->load);
        strv_free(req->pending);
        jobs_unref(req->jobs, req->n_jobs);
        free(req);
        return NULL;
}

/* When a Seal of this boot sealed the kernel, kept in the runtime directory (gone at reboot, as the
 * seal is) for the instances that come after the one that sealed. */
#define SEALED_FILE "sealed"

static void seal_save_time(Manager *m) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        char buf[32];
        int n;

        if (!m->runtime_dir)
                return;
        dir = open(m->runtime_dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
        if (dir >= 0)
                fd = openat(dir, SEALED_FILE,
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", m->seal.sealed_usec);
        if (fd < 0 || write(fd, buf, (size_t) n) != n)
                log_warning_errno(
                        errno,
                        "Failed to write %s/%s, a later instance will not know when the kernel was "
                        "sealed: %m",
                        m->runtime_dir, SEALED_FILE);
}

static void seal_load_time(Manager *m) {
        _cleanup_close_ int dir = -EBADF;
        char buf[32];
        uint64_t t;

        if (!m->runtime_dir)
                return;
        dir = open(m->runtime_dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
        if (dir < 0 || read_small_file_at(dir, SEALED_FILE, buf, sizeof(buf)) < 0)
                return;
        buf[strcspn(buf, "\n")] = '\0';
        if (parse_uint64(buf, &t) < 0 || t == 0 || t > realtime_usec())
                return log_warning("Ignoring %s/%s, which does not hold a time of this boot: %s",
                                   m->runtime_dir, SEALED_FILE, buf);
        m->seal.sealed_usec = t;
}

/* The sysctl as it reads now. A kernel without module support has none, and cannot gain one while it
 * runs (CONFIG_MODULES is built in or not): nothing to read then, ever. */
static int seal_read_sysctl(Manager *m) {
        if (m->seal.sysctl_fd >= 0)
                return kernel_modules_disabled_at(m->seal.sysctl_fd);
        if (m->seal.sysctl_fd == -ENOENT)
                return 0;
        return kernel_modules_disabled();
}

bool seal_startup(Manager *m) {
        int r;

        assert(m);

        /* Kept open: a Load reads it then with one pread() instead of an open, a read and a close. */
        m->seal.sysctl_fd = kernel_modules_disabled_open();
        r = seal_read_sysctl(m);
        if (r < 0)
                log_warning_errno(
                        r, "Failed to read kernel.modules_disabled, taking the kernel as not sealed: %m");
        m->seal.sealed = r > 0;
        if (m->seal.sealed) {
                seal_load_time(m);
                log_notice(
                        "The kernel is sealed (kernel.modules_disabled=1): every Load, Unload and Seal is "
                        "refused until reboot.");
        }
        return m->seal.sealed;
}

bool seal_refuses(Manager *m) {
        int r;

        if (m->seal.sealed || m->seal.request)
                return true;
        r = seal_read_sysctl(m);
        if (r < 0)
                log_debug_errno(
                        r, "Failed to read kernel.modules_disabled, taking the kernel as not sealed: %m");
        if (r <= 0)
                return false;
        m->seal.sealed = true;
        journal_record_sealed(NULL, NULL, NULL);
        manager_emit(m, "sealed", NULL, NULL);
        return true;
}

KernelSeal seal_kernel(Manager *m) {
        assert(m);

        if (!seal_refuses(m))
                return KERNEL_UNSEALED;
        return m->seal.request ? KERNEL_SEALING : KERNEL_SEALED;
}

int seal_refuse(Manager *m, sd_varlink *link, const Requester *who, const char *method) {
        const char *key = who->name ?: who->modalias ?: who->path ?: "";

        assert(m);

        /* After a seal the kernel goes on asking for modules (any user can make it), and each ask is
         * refused: the first refusal of a method, source and key from a peer is journaled, the repeats
         * are counted into the summary, so that they cannot crowd out the records that matter. */
        if (manager_chatter_first(m, CHATTER_SEALED, who, method, key))
                journal_record_sealed_refusal(who, method, !m->seal.sealed);
        return sd_varlink_errorbo(link, MANAGER_ERROR_SEALED,
                                  SD_JSON_BUILD_PAIR_CONDITION(m->seal.sealed_usec > 0, "sealedAt",
                                                               SD_JSON_BUILD_UNSIGNED(m->seal.sealed_usec)));
}

/* The final list's modules, each once, as Load lists them. */
static int seal_reply(SealRequest *req) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *modules = NULL;
        _cleanup_strv_free_ char **seen = NULL;
        int r;

        r = sd_json_variant_new_array(&modules, NULL, 0);
        for (size_t i = 0; r >= 0 && i < req->n_jobs; i++) {
                const ModuleResult *res = job_result(req->jobs[i]);

                if (strv_contains(seen, res->name))
                        continue;
                r = strv_extend(&seen, res->name);
                if (r >= 0)
                        r = module_result_build_json(res, &modules);
        }
        if (r < 0)
                return r;
        return sd_varlink_replybo(req->link,
                                  SD_JSON_BUILD_PAIR_CONDITION(!!req->load, "modules",
                                                               SD_JSON_BUILD_VARIANT(modules)),
                                  SD_JSON_BUILD_PAIR_STRV("pending", req->pending));
}

/* Nothing loads any more: the sysctl, the record, the reply. */
static void seal_finish(SealRequest *req) {
        Manager *m = req->manager;
        int r;

        m->seal.request = NULL;
        r = kernel_disable_modules();
        if (r < 0) {
                log_error_errno(r, "Failed to seal the kernel (kernel.modules_disabled=1): %m");
                if (req->link)
                        (void) sd_varlink_error_errno(req->link, r);
        } else {
                m->seal.sealed = true;
                (void) sd_event_now(m->event, CLOCK_REALTIME, &m->seal.sealed_usec);
                seal_save_time(m);
                journal_record_sealed(&req->who, req->load, req->pending);
                manager_emit(m, "sealed", NULL, NULL);
                r = req->link ? seal_reply(req) : 0;
                if (r < 0 && r != -EBADR)
                        log_debug_errno(r, "Failed to answer Seal, client gone? %m");
        }
        seal_request_free(req);
}

static void on_job_done(Job *j, void *userdata) {
        SealRequest *req = userdata;

        if (--req->n_watched == 0 && !req->cancelled)
                (void) sd_event_source_set_enabled(req->again, SD_EVENT_ONESHOT);
}

static int watch_job(Job *j, void *userdata) {
        SealRequest *req = userdata;
        int r;

        r = job_watch(j, on_job_done, req);
        if (r >= 0)
                req->n_watched++;
        return r;
}

/* Waits for every job in flight, then looks again: what they started is waited for too. */
static int seal_wait(SealRequest *req) {
        int r;

        r = scheduler_foreach_job(req->manager->scheduler, watch_job, req);
        if (r < 0)
                return r;
        if (req->n_watched == 0)
                seal_finish(req);
        return 0;
}

static int on_again(sd_event_source *s, void *userdata) {
        SealRequest *req = userdata;
        int r;

        r = seal_wait(req);
        if (r < 0) {
                /* A job's watcher could not be added: look again at the next one to finish, or at once. */
                log_oom();
                return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int seal_submit(SealRequest *req, sd_varlink *link, Plan *const *plans, size_t n_plans) {
        Manager *m = req->manager;

        for (size_t i = 0; i < n_plans; i++) {
                const char *conflict = NULL;
                Job **jobs, **a;
                int r;

                r = scheduler_submit(m->scheduler, plans[i], NULL, &req->who, &jobs, &conflict);
                if (r == -EBUSY)
                        return load_reply_busy(link, conflict);
                if (r < 0)
                        return r;
                a = reallocarray(req->jobs, (req->n_jobs + plans[i]->n_specs) ?: 1, sizeof(Job *));
                if (!a) {
                        jobs_unref(jobs, plans[i]->n_specs);
                        return -ENOMEM;
                }
                memcpy(a + req->n_jobs, jobs, plans[i]->n_specs * sizeof(Job *));
                req->jobs = a;
                req->n_jobs += plans[i]->n_specs;
                free(jobs);
        }
        return 1;
}

static int add_job_name(Job *j, void *userdata) {
        return strv_extend(userdata, job_result(j)->name);
}

static int pending_names(Scheduler *s, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        r = scheduler_foreach_job(s, add_job_name, &names);
        if (r < 0)
                return r;
        /* Always an array: the reply lists none as []. */
        if (!names && !(names = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(names);
        return 0;
}

int seal_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const Requester *who,
               char *const *names, Plan *const *plans, size_t n_plans) {
        SealRequest *req;
        int r;

        assert(m);

        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->manager = m;
        r = requester_copy(who, &req->who);
        if (r >= 0 && names && !(req->load = strv_copy_n(names, strv_length(names))))
                r = -ENOMEM;
        if (r >= 0)
                r = pending_names(m->scheduler, &req->pending);
        if (r >= 0)
                r = sd_event_add_defer(m->event, &req->again, on_again, req);
        if (r >= 0)
                r = sd_event_source_set_enabled(req->again, SD_EVENT_OFF);
        if (r >= 0)
                r = seal_submit(req, link, plans, n_plans);
        if (r <= 0) {
                seal_request_free(req);
                return r;
        }

        /* A oneway call wants no reply: the kernel is sealed all the same. */
        if (!(flags & SD_VARLINK_METHOD_ONEWAY))
                req->link = sd_varlink_ref(link);
        m->seal.request = req;
        log_info("Sealing the kernel once %zu loads in flight and %zu of the final list are done.",
                 strv_length(req->pending), strv_length(req->load));
        r = seal_wait(req);
        if (r < 0) {
                /* Accepted already: the next job to finish, or the loop, looks again. */
                log_oom();
                (void) sd_event_source_set_enabled(req->again, SD_EVENT_ONESHOT);
        }
        return 0;
}

void seal_cancel(Manager *m) {
        assert(m);

        if (m->seal.request)
                m->seal.request->cancelled = true;
}

void seal_done(Manager *m) {
        m->seal.request = seal_request_free(m->seal.request);
        m->seal.sysctl_fd = safe_close(m->seal.sysctl_fd);
}
