/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Every decision, wherever it is made, goes the same way: a journal record, this boot's history, the
 * counters that Status reports, and an event for each Monitor subscriber. */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "log.h"
#include "manager.h"
#include "method-describe.h"
#include "module-name.h"
#include "record.h"
#include "strv.h"
#include "time-util.h"

static void write_summary(const ChatterSummary *s, void *userdata) {
        journal_record_summary(s, *(unsigned *) userdata);
}

void manager_write_summaries(Manager *m) {
        uint64_t now = now_usec();
        unsigned sec = (unsigned) ((now - m->summary_since_usec + USEC_PER_SEC / 2) / USEC_PER_SEC);
        int r;

        assert(m);

        if (m->chatter) {
                r = chatter_flush(m->chatter, write_summary, &sec);
                if (r < 0)
                        log_warning_errno(r,
                                          "Failed to list the peers of a summary, their total is in it: %m");
        }
        m->summary_since_usec = now;
}

/* Whom an answer is counted for: the peer's unit, or its uid when it is in none (the kernel's own
 * requests come through its usermode helper, in the root cgroup). A user's processes are all in
 * user@UID.service or a session scope, so one user is a few peers, not as many as it likes. */
static const char *peer_label(const Requester *who, char *buf, size_t size) {
        if (!who->have_peer)
                return "-";
        if (who->unit)
                return who->unit;
        snprintf(buf, size, "uid:%u", (unsigned) who->uid);
        return buf;
}

bool manager_chatter_first(Manager *m, ChatterKind kind, const Requester *who, const char *method,
                           const char *key) {
        _cleanup_free_ char *k = NULL;
        char buf[32];

        assert(m);

        if (!m->chatter)
                return true;
        if (asprintf(&k, "%s%s%s:%s", method ?: "", method ? ":" : "", request_source_to_string(who->source),
                     key ?: "") < 0)
                return true;
        return chatter_note(m->chatter, kind, peer_label(who, buf, sizeof(buf)), k) != 0;
}

void manager_emit(Manager *m, const char *type, const char *module, sd_json_variant *fields) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;
        int r;

        assert(m);

        if (!monitors_active(m->monitors))
                return;
        r = sd_json_buildo(&e, SD_JSON_BUILD_PAIR_STRING("type", type),
                           SD_JSON_BUILD_PAIR_UNSIGNED("time", realtime_usec()),
                           SD_JSON_BUILD_PAIR_CONDITION(!!module, "module", SD_JSON_BUILD_STRING(module)));
        if (r >= 0 && fields)
                r = sd_json_variant_merge_object(&e, fields);
        if (r < 0) {
                log_warning_errno(r, "Failed to build a Monitor event: %m");
                return;
        }
        monitors_send(m->monitors, module, e);
}

/* A decision's event carries its history entry as its record. */
static void emit_decision(Manager *m, const char *type, const char *module, sd_json_variant *entry) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;

        if (!monitors_active(m->monitors) || !entry)
                return;
        if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_VARIANT("record", entry)) >= 0)
                manager_emit(m, type, module, f);
}

static const char *entry_module_name(sd_json_variant *e) {
        sd_json_variant *n = sd_json_variant_by_key(e, "module");

        return n && sd_json_variant_is_string(n) ? sd_json_variant_string(n) : "";
}

static const char *entry_outcome(sd_json_variant *e) {
        sd_json_variant *o = e ? sd_json_variant_by_key(e, "outcome") : NULL;

        return o && sd_json_variant_is_string(o) ? sd_json_variant_string(o) : "";
}

static bool entry_is_loaded(sd_json_variant *e) {
        const char *s = entry_outcome(e);

        return strcmp(s, "loaded") == 0 || strcmp(s, "loaded_outside") == 0;
}

/* Whether an entry says where the module is now: loaded or unloaded, by modgate or by someone else.
 * A refusal or a failure leaves the module where it was. */
static bool entry_moves(sd_json_variant *e) {
        const char *s = entry_outcome(e);

        return entry_is_loaded(e) || strcmp(s, "unloaded") == 0 || strcmp(s, "unloaded_outside") == 0;
}

void manager_keep(Manager *m, sd_json_variant *entry) {
        int r;

        assert(m);

        if (!m->history || !entry)
                return;
        /* A module that is loaded stays the history's "loaded" whatever is refused for it later (a
         * Deny= added since, a copy of it by path, a failed load of the same name): List and
         * Describe answer why it is in the kernel, and a reconciliation must not take it for a
         * module loaded by someone else. The refusal is in the journal. */
        if (!entry_moves(entry) && entry_is_loaded(history_get(m->history, entry_module_name(entry))))
                return;
        r = history_add(m->history, entry);
        if (r < 0)
                log_warning_errno(r, "Failed to keep a decision in the history: %m");
}

/* Journaled, kept, and sent to the monitors: what happened to a module outside a job. */
static void record_simple(Manager *m, const char *module, const char *outcome, const char *reason,
                          const char *rule, const char *taint, bool keep) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;

        if (history_entry_simple(module, outcome, reason, rule, taint, &e) < 0)
                return (void) log_oom();
        if (keep)
                manager_keep(m, e);
        emit_decision(m, outcome, module, e);
}

void manager_record_outside(Manager *m, const char *module, const char *how) {
        char taint[32] = "";

        assert(m);

        (void) kernel_module_taint(module, taint, sizeof(taint));
        journal_record_outside(module, taint, how, false);
        m->counters.outside_loads++;
        record_simple(m, module, "loaded_outside", how, NULL, taint[0] ? taint : NULL, true);
}

static void record_outside_gone(Manager *m, const char *module, const char *how) {
        journal_record_outside(module, NULL, how, true);
        record_simple(m, module, "unloaded_outside", how, NULL, NULL, true);
}

static void count_module(Counters *c, unsigned n, const ModuleResult *r) {
        c->coalesced += n > 1 ? n - 1 : 0;
        if (r->cached || r->outcome == OUTCOME_ALREADY_LOADED || r->outcome == OUTCOME_BUILTIN)
                c->cached++;
        if (r->outcome == OUTCOME_LOADED)
                c->loads++;
        else if (r->outcome == OUTCOME_DENIED)
                c->denied++;
        else if (r->outcome == OUTCOME_FAILED)
                c->failed++;
        if (r->modinfo_from_manifest)
                c->names_from_manifest++;
        else if (r->name_from_path)
                c->names_from_path++;
        else if (r->have_modinfo)
                c->names_from_modinfo++;
}

/* who, with the device its modalias names as udev's hardware database has it: looked up only for a
 * record that is written, never for a repeated answer. The strings are the caller's to free. */
static const Requester *with_device(Manager *m, const Requester *who, Requester *tmp, char **vendor,
                                    char **model) {
        if (!who->modalias || who->vendor ||
            device_info_lookup(m->device_info, who->modalias, vendor, model) < 0 || (!*vendor && !*model))
                return who;
        *tmp = *who;
        tmp->vendor = *vendor;
        tmp->model = *model;
        return tmp;
}

static int chatter_kind(Outcome o) {
        switch (o) {
        case OUTCOME_ALREADY_LOADED:
        case OUTCOME_BUILTIN:
                return CHATTER_PRESENT;
        case OUTCOME_DENIED:
                return CHATTER_DENIED;
        case OUTCOME_FAILED:
                return CHATTER_FAILED;
        default:
                return -1;      /* a load: never counted instead of journaled */
        }
}

/* A decision is journaled and kept, the first of its kind from its peer in a window (a load always);
 * the repeats are counted. One that the history does not know was loaded by someone else while this
 * instance ran. */
void manager_record_module(const Requesters *requesters, const ModuleResult *r, void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;
        _cleanup_free_ char *vendor = NULL, *model = NULL;
        Manager *m = userdata;
        bool present = r->outcome == OUTCOME_ALREADY_LOADED || r->outcome == OUTCOME_BUILTIN;
        int kind = chatter_kind(r->outcome);
        Requesters who = *requesters;
        Requester tmp;
        bool first;

        assert(requesters);

        count_module(&m->counters, who.n, r);
        if (r->outcome == OUTCOME_ALREADY_LOADED && m->history &&
            !entry_is_loaded(history_get(m->history, r->name)))
                manager_record_outside(m, r->name, "found loaded when asked for");
        first = kind < 0 || manager_chatter_first(m, kind, who.first, NULL, r->name);
        if (present && !first)
                return;
        if (first) {
                who.first = with_device(m, who.first, &tmp, &vendor, &model);
                /* A load whose file's .modinfo is read after it: its one record, whole, once that is
                 * read (manager_record_modinfo()). */
                if (!r->modinfo_pending)
                        journal_record_module(&who, r);
        }
        if (present || history_entry_module(&who, r, &e) < 0)
                return;
        if (first)
                manager_keep(m, e);
        emit_decision(m, outcome_to_string(r->outcome), r->name, e);
}

void manager_record_modinfo(const Requesters *requesters, const ModuleResult *r, void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;
        _cleanup_free_ char *vendor = NULL, *model = NULL;
        Manager *m = userdata;
        Requesters who = *requesters;
        sd_json_variant *kept, *pending, *time;
        Requester tmp;

        assert(requesters);

        who.first = with_device(m, who.first, &tmp, &vendor, &model);
        journal_record_module(&who, r);

        /* The entry kept at the load, completed; unless the module moved since (an unload). */
        kept = m->history ? history_get(m->history, r->name) : NULL;
        pending = kept ? sd_json_variant_by_key(kept, "modinfoPending") : NULL;
        time = kept ? sd_json_variant_by_key(kept, "time") : NULL;
        if (pending && sd_json_variant_boolean(pending) && time && history_entry_module(&who, r, &e) >= 0 &&
            sd_json_variant_set_field_unsigned(&e, "time", sd_json_variant_unsigned(time)) >= 0)
                manager_keep(m, e);
        manager_describe_recorded(m, r->name);
}

void manager_record_started(const Requester *who, const ModuleResult *r, void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;
        Manager *m = userdata;

        if (!monitors_active(m->monitors))
                return;
        if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_STRING("role", role_to_string(r->role)),
                           SD_JSON_BUILD_PAIR_CONDITION(!!r->path, "path", SD_JSON_BUILD_STRING(r->path))) >=
            0)
                manager_emit(m, "started", r->name, f);
}

/* A module added or removed while this instance runs. Our own load has a job in flight until its
 * record is kept, and our own unload is kept before the loop reads the event: neither is outside. */
void manager_on_module_event(const char *module, bool added, void *userdata) {
        Manager *m = userdata;
        bool known = entry_is_loaded(history_get(m->history, module));
        ModuleState state;

        if (added) {
                if (known || scheduler_has_job(m->scheduler, module) ||
                    kernel_module_state(module, &state) < 0 ||
                    (state != MODULE_STATE_LIVE && state != MODULE_STATE_COMING))
                        return;
                manager_record_outside(m, module, "loaded while modgated ran (the kernel's module uevent)");
                return;
        }
        if (known)
                record_outside_gone(m, module, "unloaded while modgated ran (the kernel's module uevent)");
}

/* What the kernel has against what this boot's history says: every module loaded while no modgated
 * ran (the initrd, PID 1's own loads, insmod) is recorded once; one the history has as loaded and the
 * kernel no longer has was unloaded by someone else. */
int manager_reconcile(Manager *m) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *all = NULL;
        _cleanup_strv_free_ char **loaded = NULL;
        int r;

        assert(m);

        r = kernel_loaded_modules(&loaded);
        if (r < 0)
                return log_warning_errno(r, "Failed to list the modules in the kernel, not reconciling: %m");
        for (char **n = loaded; n && *n; n++)
                if (!entry_is_loaded(history_get(m->history, *n)))
                        manager_record_outside(m, *n, "in the kernel when modgated started");

        r = history_list(m->history, &all);
        if (r < 0)
                return log_oom();
        for (size_t i = 0; i < sd_json_variant_elements(all); i++) {
                sd_json_variant *x = sd_json_variant_by_index(all, i);
                const char *name = sd_json_variant_string(sd_json_variant_by_key(x, "module"));

                if (entry_is_loaded(x) && !strv_contains(loaded, name))
                        record_outside_gone(m, name, "no longer in the kernel when modgated started");
        }
        return 0;
}

void manager_record_request(Manager *m, const char *method, const Requester *who) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;
        const char *key = who->name ?: who->modalias ?: who->path;
        _cleanup_free_ char *module = NULL;

        assert(m);

        if (strcmp(method, "Load") == 0)
                m->counters.requests++;
        if (!monitors_active(m->monitors))
                return;
        /* A filtered monitor sees a request that names its module. */
        if (who->name) {
                module = strdup(who->name);
                if (!module)
                        return (void) log_oom();
                module_name_normalize(module);
        }
        if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_STRING("method", method),
                           SD_JSON_BUILD_PAIR_CONDITION(!!key, "request", SD_JSON_BUILD_STRING(key)),
                           SD_JSON_BUILD_PAIR_STRING("source", request_source_to_string(who->source)),
                           SD_JSON_BUILD_PAIR_CONDITION(!!who->devpath, "devpath",
                                                        SD_JSON_BUILD_STRING(who->devpath)),
                           SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerPid",
                                                        SD_JSON_BUILD_INTEGER(who->pid)),
                           SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerUid",
                                                        SD_JSON_BUILD_UNSIGNED(who->uid))) >= 0)
                manager_emit(m, "request", module, f);
}

/* A request that matched nothing is journaled the first time for its key, then counted. */
void manager_record_not_found(Manager *m, const Requester *who, char *const *blacklisted) {
        const char *key = who->name ?: who->modalias ?: who->path;

        assert(m);

        m->counters.not_found++;
        if (key && !manager_chatter_first(m, CHATTER_NOT_FOUND, who, NULL, key))
                return;
        journal_record_not_found(who, blacklisted);
}

void manager_record_policy(Manager *m, const Requester *requester, const PolicyRecord *pr, bool keep) {
        _cleanup_free_ char *vendor = NULL, *model = NULL;
        const char *outcome = pr->would ? "would_deny" : "denied";
        const char *key = pr->module ?: requester->name ?: requester->modalias;
        const Requester *who = requester;
        Requester tmp;
        bool first;

        assert(m);

        if (!pr->would)
                m->counters.denied++;
        first = manager_chatter_first(m, pr->would ? CHATTER_WOULD_DENY : CHATTER_DENIED, requester, NULL,
                                      key);
        if (first) {
                who = with_device(m, requester, &tmp, &vendor, &model);
                journal_record_policy(who, pr);
        }
        if (pr->module)
                record_simple(m, pr->module, outcome, pr->reason, pr->rule, NULL, keep && first);
        else if (monitors_active(m->monitors)) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;

                if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_STRING("request", key ?: ""),
                                   SD_JSON_BUILD_PAIR_STRING("reason", pr->reason)) >= 0)
                        manager_emit(m, outcome, NULL, f);
        }
}

void manager_record_refused_caller(Manager *m, const Requester *who, const char *method,
                                   const char *reason) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;
        const char *key = who->name ?: who->modalias ?: who->path ?: "";
        _cleanup_free_ char *with_devpath = NULL;

        assert(m);

        m->counters.refused_callers++;
        /* Whether a claimed device announced what is asked depends on the device: each is a key. */
        if (who->devpath && asprintf(&with_devpath, "%s@%s", key, who->devpath) >= 0)
                key = with_devpath;
        if (manager_chatter_first(m, CHATTER_REFUSED_CALLER, who, method, key))
                journal_record_refused_caller(who, method, reason);
        if (!monitors_active(m->monitors))
                return;
        if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_STRING("method", method),
                           SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerPid",
                                                        SD_JSON_BUILD_INTEGER(who->pid)),
                           SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerUid",
                                                        SD_JSON_BUILD_UNSIGNED(who->uid)),
                           SD_JSON_BUILD_PAIR_STRING("reason", reason)) >= 0)
                manager_emit(m, "refused_caller", NULL, f);
}

void manager_record_unload(Manager *m, const Requester *who, const char *name, int error,
                           const char *reason) {
        journal_record_unload(who, name, error, reason);
        if (error == 0)
                record_simple(m, name, "unloaded", NULL, NULL, NULL, true);
}

void manager_record_guard(const struct guard_event *e, void *userdata) {
        _cleanup_free_ char *message = NULL;
        char key[64], cgroup[sizeof(e->cgroup) + 1], peer[32];
        Manager *m = userdata;

        /* Counted per caller's cgroup (its unit), by command, syscall and reason: a loop of insmod in
         * one unit does not hide another unit's first refusal. */
        guard_printable(e->cgroup, sizeof(e->cgroup), cgroup);
        snprintf(peer, sizeof(peer), "uid:%u", e->uid);
        if (m->chatter && guard_event_key(e, key, sizeof(key)) >= 0 &&
            chatter_note(m->chatter, CHATTER_GUARD, cgroup[0] ? cgroup : peer, key) == 0)
                return;
        if (guard_event_message(e, &message) < 0)
                return (void) log_oom();
        journal_record_guard(e, message);
}
