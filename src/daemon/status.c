/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>

#include "enforcement.h"
#include "root-identity.h"
#include "status.h"
#include "strv.h"

static int root_evidence(const TrustedRoot *t, sd_json_variant **ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (Evidence e = 0; e < _EVIDENCE_MAX; e++)
                if (t->evidence & EVIDENCE_MASK(e) && strv_extend(&l, evidence_to_string(e)) < 0)
                        return -ENOMEM;
        return sd_json_variant_new_array_strv(ret, l);
}

static int root_status(Manager *m, const TrustedRoot *t, sd_json_variant **array) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *evidence = NULL;
        _cleanup_free_ char *manifest = NULL;
        char identity[256] = "";
        RootIdentity id = {};
        bool have_id = false;
        int r;

        r = root_evidence(t, &evidence);
        if (r < 0)
                return r;
        if (t->fd >= 0 && root_identity_of(t->fd, m->load_context.probe_address, &id) >= 0) {
                root_identity_format(&id, identity, sizeof(identity));
                have_id = true;
        }
        if (t->manifest && asprintf(&manifest, "kernel %s", manifest_kernel(t->manifest)) < 0)
                return -ENOMEM;
        return sd_json_variant_append_arraybo(
                        array,
                        SD_JSON_BUILD_PAIR_STRING("path", t->path),
                        SD_JSON_BUILD_PAIR_VARIANT("evidence", evidence),
                        SD_JSON_BUILD_PAIR_STRING("state", t->changed ? "changed" : t->fd >= 0 ? "pinned" :
                                                  "not_there_yet"),
                        SD_JSON_BUILD_PAIR_CONDITION(have_id, "identity", SD_JSON_BUILD_STRING(identity)),
                        SD_JSON_BUILD_PAIR_CONDITION(have_id && id.root_hash[0], "verityRootHash",
                                                     SD_JSON_BUILD_STRING(id.root_hash)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!manifest || !!t->manifest_error, "manifest",
                                                     SD_JSON_BUILD_STRING(manifest ?: t->manifest_error)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!t->manifest, "manifestEntries",
                                                     SD_JSON_BUILD_UNSIGNED(t->manifest ?
                                                                            manifest_entries(t->manifest) : 0)));
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
                              SD_JSON_BUILD_PAIR_UNSIGNED("outsideLoads", c->outside_loads));
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

/* The modules on a worker now, with how long each has been there: an init that hangs shows here. */
static int loading_build(Scheduler *s, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *a = NULL;
        uint64_t now = now_usec();
        Job **jobs = NULL;
        size_t n = 0;
        int r;

        r = sd_json_variant_new_array(&a, NULL, 0);
        if (r >= 0)
                r = scheduler_jobs(s, &jobs, &n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint64_t since = job_running_since(jobs[i]);

                if (since > 0)
                        r = sd_json_variant_append_arraybo(
                                        &a,
                                        SD_JSON_BUILD_PAIR_STRING("module", job_result(jobs[i])->name),
                                        SD_JSON_BUILD_PAIR_UNSIGNED("forUSec", now > since ? now - since : 0));
        }
        jobs_unref(jobs, n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

int manager_status(Manager *m, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *roots = NULL, *counters = NULL, *latency = NULL,
                *loading = NULL;
        _cleanup_free_ char *enforcement = NULL;
        SchedulerState st;
        Enforcement e;
        int r;

        r = sd_json_variant_new_array(&roots, NULL, 0);
        for (size_t i = 0; r >= 0 && i < m->n_roots; i++)
                r = root_status(m, m->roots[i], &roots);
        if (r >= 0)
                r = counters_build(&m->counters, &counters);
        if (r >= 0)
                r = latency_build(&m->latency, &latency);
        if (r >= 0)
                r = loading_build(m->scheduler, &loading);
        if (r < 0)
                return r;
        r = enforcement_describe("/", &e, &enforcement);
        if (r == -ENOMEM)
                return r;
        scheduler_state(m->scheduler, &st);

        return sd_json_buildo(
                        ret,
                        SD_JSON_BUILD_PAIR_STRING("version", PROJECT_VERSION),
                        SD_JSON_BUILD_PAIR_STRING("mode", policy_mode_to_string(m->config.policy.mode)),
                        SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest),
                        SD_JSON_BUILD_PAIR_STRING("enforcement", r >= 0 ? enforcement : "unknown"),
                        SD_JSON_BUILD_PAIR_BOOLEAN("sealed", m->seal.sealed ||
                                                   (r >= 0 && e.modules_disabled.value == PROBE_YES)),
                        SD_JSON_BUILD_PAIR_VARIANT("roots", roots),
                        SD_JSON_BUILD_PAIR_UNSIGNED("uptimeUSec", now_usec() - m->started_usec),
                        SD_JSON_BUILD_PAIR_VARIANT("counters", counters),
                        SD_JSON_BUILD_PAIR_UNSIGNED("workers", st.workers),
                        SD_JSON_BUILD_PAIR_UNSIGNED("busyWorkers", st.busy),
                        SD_JSON_BUILD_PAIR_UNSIGNED("queuedJobs", st.queued),
                        SD_JSON_BUILD_PAIR_UNSIGNED("checkedAheadJobs", st.checked_ahead),
                        SD_JSON_BUILD_PAIR_VARIANT("loading", loading),
                        SD_JSON_BUILD_PAIR_UNSIGNED("pendingRequests", m->n_requests),
                        SD_JSON_BUILD_PAIR_UNSIGNED("connections",
                                                    sd_varlink_server_current_connections(m->varlink_server)),
                        SD_JSON_BUILD_PAIR_CONDITION(!!latency, "latency", SD_JSON_BUILD_VARIANT(latency)));
}
