/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>

#include "enforcement.h"
#include "log.h"
#include "method-status.h"
#include "reader-pool.h"
#include "root-identity.h"
#include "strv.h"
#include "time-util.h"

static int guard_build(const Guard *g, sd_json_variant **ret) {
        GuardState s;

        guard_state(g, &s);
        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_STRING("mode", guard_mode_to_string(s.mode)),
                        SD_JSON_BUILD_PAIR_STRING("configured", guard_mode_to_string(s.wanted)),
                        SD_JSON_BUILD_PAIR_STRING("configuredBy", s.from_cmdline ? "cmdline" : "config"),
                        SD_JSON_BUILD_PAIR_BOOLEAN("bpfLsm", s.lsm_active),
                        SD_JSON_BUILD_PAIR_BOOLEAN("attached", s.attached),
                        SD_JSON_BUILD_PAIR_CONDITION(s.attached, "attachedAt", SD_JSON_BUILD_UNSIGNED(s.attached_usec)),
                        SD_JSON_BUILD_PAIR_BOOLEAN("kept", s.stored),
                        SD_JSON_BUILD_PAIR_UNSIGNED("refusals", s.refusals),
                        SD_JSON_BUILD_PAIR_CONDITION(!!s.unavailable, "unavailable",
                                                     SD_JSON_BUILD_STRING(s.unavailable)));
}

static int root_evidence(const TrustedRoot *t, sd_json_variant **ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (Evidence e = 0; e < _EVIDENCE_MAX; e++)
                if (t->evidence & EVIDENCE_MASK(e) && strv_extend(&l, evidence_to_string(e)) < 0)
                        return -ENOMEM;
        return sd_json_variant_new_array_strv(ret, l);
}

/* What Status says of a root, read on the reader pool: its fd and changed are the pinning's, which a
 * worker may be doing now (under the root's lock, asking the prober); the rest is set at start. */
typedef struct RootSnapshot {
        const TrustedRoot *root;
        char *changed;
        bool pinned;
        bool have_id;
        RootIdentity id;
} RootSnapshot;

typedef struct StatusWork {
        Manager *m;
        sd_varlink *link;
        const char *probe_address;
        RootSnapshot *roots;
        size_t n_roots;
        int error;
} StatusWork;

static StatusWork *status_work_free(StatusWork *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_roots; i++)
                free(w->roots[i].changed);
        free(w->roots);
        sd_varlink_unref(w->link);
        free(w);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(StatusWork *, status_work_free);

/* A copy of the fd, so that a root unpinned meanwhile (its identity failed to verify) closes only its
 * own, and the number is never another file's. */
static int root_snapshot(RootSnapshot *rs, const char *probe_address) {
        TrustedRoot *t = (TrustedRoot *) rs->root;
        _cleanup_close_ int fd = -EBADF;
        int r = 0;

        pthread_mutex_lock(&t->lock);
        rs->pinned = t->fd >= 0;
        if (t->fd >= 0) {
                fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        r = negative_errno();
        }
        if (r >= 0)
                r = strdup_or_null(t->changed, &rs->changed);
        pthread_mutex_unlock(&t->lock);
        if (r == -ENOMEM)
                return r;
        if (fd >= 0 && root_identity_of(fd, probe_address, &rs->id) >= 0)
                rs->have_id = true;
        return 0;
}

/* On the reader pool: the identity of each root, which may ask the prober. */
static void status_read_roots(void *userdata) {
        StatusWork *w = userdata;

        for (size_t i = 0; w->error >= 0 && i < w->n_roots; i++)
                w->error = root_snapshot(w->roots + i, w->probe_address);
}

static int root_status(const RootSnapshot *rs, sd_json_variant **array) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *evidence = NULL;
        _cleanup_free_ char *manifest = NULL;
        const TrustedRoot *t = rs->root;
        char identity[256] = "";
        int r;

        r = root_evidence(t, &evidence);
        if (r < 0)
                return r;
        if (rs->have_id)
                root_identity_format(&rs->id, identity, sizeof(identity));
        if (t->manifest && asprintf(&manifest, "kernel %s", manifest_kernel(t->manifest)) < 0)
                return -ENOMEM;
        return sd_json_variant_append_arraybo(
                array, SD_JSON_BUILD_PAIR_STRING("path", t->path),
                SD_JSON_BUILD_PAIR_VARIANT("evidence", evidence),
                SD_JSON_BUILD_PAIR_STRING("state",
                                          rs->changed        ? "changed" :
                                                  rs->pinned ? "pinned" :
                                                               "not_there_yet"),
                SD_JSON_BUILD_PAIR_CONDITION(rs->have_id, "identity", SD_JSON_BUILD_STRING(identity)),
                SD_JSON_BUILD_PAIR_CONDITION(rs->have_id && rs->id.root_hash[0], "verityRootHash",
                                             SD_JSON_BUILD_STRING(rs->id.root_hash)),
                SD_JSON_BUILD_PAIR_CONDITION(!!manifest || !!t->manifest_error, "manifest",
                                             SD_JSON_BUILD_STRING(manifest ?: t->manifest_error)),
                SD_JSON_BUILD_PAIR_CONDITION(!!t->manifest, "manifestEntries",
                                             SD_JSON_BUILD_UNSIGNED(
                                                     t->manifest ? manifest_entries(t->manifest) : 0)));
}

static int counters_build(const Counters *c, sd_json_variant **ret) {
        return sd_json_buildo(ret,
                              SD_JSON_BUILD_PAIR_UNSIGNED("requests", c->requests),
                              SD_JSON_BUILD_PAIR_UNSIGNED("loads", c->loads),
                              SD_JSON_BUILD_PAIR_UNSIGNED("coalesced", c->coalesced),
                              SD_JSON_BUILD_PAIR_UNSIGNED("cached", c->cached),
                              SD_JSON_BUILD_PAIR_UNSIGNED("denied", c->denied),
                              SD_JSON_BUILD_PAIR_UNSIGNED("failed", c->failed),
                              SD_JSON_BUILD_PAIR_UNSIGNED("notFound", c->not_found),
                              SD_JSON_BUILD_PAIR_UNSIGNED("refusedCallers", c->refused_callers),
                              SD_JSON_BUILD_PAIR_UNSIGNED("outsideLoads", c->outside_loads),
                              SD_JSON_BUILD_PAIR_UNSIGNED("namesFromPath", c->names_from_path),
                              SD_JSON_BUILD_PAIR_UNSIGNED("namesFromModinfo", c->names_from_modinfo),
                              SD_JSON_BUILD_PAIR_UNSIGNED("namesFromManifest", c->names_from_manifest));
}

static int latency_build(const Latency *l, sd_json_variant **ret) {
        LatencySummary s;

        if (latency_summarize(l, &s) < 0) {
                *ret = NULL;
                return 0;
        }
        return sd_json_buildo(ret,
                              SD_JSON_BUILD_PAIR_UNSIGNED("samples", s.samples),
                              SD_JSON_BUILD_PAIR_UNSIGNED("p50USec", s.p50),
                              SD_JSON_BUILD_PAIR_UNSIGNED("p90USec", s.p90),
                              SD_JSON_BUILD_PAIR_UNSIGNED("p99USec", s.p99),
                              SD_JSON_BUILD_PAIR_UNSIGNED("maxUSec", s.max));
}

static int add_running(Job *j, void *userdata) {
        sd_json_variant **a = userdata;
        uint64_t now = now_usec(), since = job_running_since(j);

        if (since == 0)
                return 0;
        return sd_json_variant_append_arraybo(a, SD_JSON_BUILD_PAIR_STRING("module", job_result(j)->name),
                                              SD_JSON_BUILD_PAIR_UNSIGNED("forUSec",
                                                                          now > since ? now - since : 0));
}

/* The modules on a worker now, with how long each has been there: an init that hangs shows here. */
static int loading_build(Scheduler *s, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *a = NULL;
        int r;

        r = sd_json_variant_new_array(&a, NULL, 0);
        if (r >= 0)
                r = scheduler_foreach_job(s, add_running, &a);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

/* The rest is the event loop's, read when the roots' part is done: as it is at the reply. */
static int status_build(StatusWork *w, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *roots = NULL, *counters = NULL, *latency = NULL, *guard = NULL,
                *loading = NULL;
        _cleanup_free_ char *enforcement = NULL;
        Manager *m = w->m;
        SchedulerState st;
        Enforcement e;
        int r;

        r = sd_json_variant_new_array(&roots, NULL, 0);
        for (size_t i = 0; r >= 0 && i < w->n_roots; i++)
                r = root_status(w->roots + i, &roots);
        if (r >= 0)
                r = counters_build(&m->counters, &counters);
        if (r >= 0)
                r = latency_build(&m->latency, &latency);
        if (r >= 0)
                r = loading_build(m->scheduler, &loading);
        if (r >= 0)
                r = guard_build(m->guard, &guard);
        if (r < 0)
                return r;
        r = enforcement_describe("/", &e, &enforcement);
        if (r == -ENOMEM)
                return r;
        scheduler_state(m->scheduler, &st);

        return sd_json_buildo(
                ret, SD_JSON_BUILD_PAIR_STRING("version", PROJECT_VERSION),
                SD_JSON_BUILD_PAIR_STRING("mode", policy_mode_to_string(m->config.policy.mode)),
                SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest),
                SD_JSON_BUILD_PAIR_STRING("enforcement", r >= 0 ? enforcement : "unknown"),
                SD_JSON_BUILD_PAIR_BOOLEAN("sealed",
                                           m->seal.sealed ||
                                                   (r >= 0 && e.modules_disabled.value == PROBE_YES)),
                SD_JSON_BUILD_PAIR_VARIANT("guard", guard),
                SD_JSON_BUILD_PAIR_VARIANT("roots", roots),
                SD_JSON_BUILD_PAIR_UNSIGNED("uptimeUSec", now_usec() - m->started_usec),
                SD_JSON_BUILD_PAIR_VARIANT("counters", counters),
                SD_JSON_BUILD_PAIR_UNSIGNED("workers", st.workers),
                SD_JSON_BUILD_PAIR_UNSIGNED("busyWorkers", st.busy),
                SD_JSON_BUILD_PAIR_UNSIGNED("queuedJobs", st.queued),
                SD_JSON_BUILD_PAIR_UNSIGNED("checkedAheadJobs", st.checked_ahead),
                SD_JSON_BUILD_PAIR_UNSIGNED("unrecordedLoads", st.unrecorded),
                SD_JSON_BUILD_PAIR_VARIANT("loading", loading),
                SD_JSON_BUILD_PAIR_UNSIGNED("pendingRequests", m->n_requests),
                SD_JSON_BUILD_PAIR_UNSIGNED("connections",
                                            sd_varlink_server_current_connections(m->varlink_server)),
                SD_JSON_BUILD_PAIR_CONDITION(!!latency, "latency", SD_JSON_BUILD_VARIANT(latency)));
}

static void status_done(void *userdata, bool cancelled) {
        _cleanup_(status_work_freep) StatusWork *w = userdata;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *reply = NULL;
        int r;

        if (cancelled)
                return;
        r = w->error < 0 ? w->error : status_build(w, &reply);
        reader_reply(w->link, r, reply, "build the status");
}

int status_start(Manager *m, sd_varlink *link) {
        _cleanup_(status_work_freep) StatusWork *w = NULL;
        int r;

        assert(m);

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->roots = calloc(m->n_roots ?: 1, sizeof(RootSnapshot));
        if (!w->roots)
                return -ENOMEM;
        w->n_roots = m->n_roots;
        for (size_t i = 0; i < m->n_roots; i++)
                w->roots[i].root = m->roots[i];
        w->m = m;
        w->probe_address = m->load_context.probe_address;
        w->link = sd_varlink_ref(link);

        r = reader_pool_submit_call(m->readers, link, status_read_roots, status_done, w);
        if (r <= 0)
                return r;
        TAKE_PTR(w);
        return 0;
}
