/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "kernel.h"
#include "log.h"
#include "record-journal.h"
#include "strv.h"

#define FIELDS_MAX 112
#define BLACKLISTED_FIELDS_MAX 16

typedef struct Record {
        struct iovec iov[FIELDS_MAX];
        size_t n;
        bool oom;
} Record;

static void record_add(Record *rec, const char *fmt, ...) _printf_(2, 3);
static void record_add(Record *rec, const char *fmt, ...) {
        va_list ap;
        char *s;
        int n;

        if (rec->n >= FIELDS_MAX) {
                rec->oom = true;
                return;
        }

        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0) {
                rec->oom = true;
                return;
        }
        rec->iov[rec->n++] = (struct iovec) { .iov_base = s, .iov_len = (size_t) n };
}

static void record_done(Record *rec) {
        for (size_t i = 0; i < rec->n; i++)
                free(rec->iov[i].iov_base);
}

static const char *message_id(Outcome o) {
        switch (o) {
        case OUTCOME_LOADED:
                return MODGATE_MESSAGE_MODULE_LOADED;
        case OUTCOME_DENIED:
                return MODGATE_MESSAGE_MODULE_DENIED;
        case OUTCOME_FAILED:
                return MODGATE_MESSAGE_MODULE_FAILED;
        default:
                return MODGATE_MESSAGE_MODULE_PRESENT;
        }
}

static int priority(Outcome o) {
        switch (o) {
        case OUTCOME_LOADED:
                return LOG_NOTICE;
        case OUTCOME_DENIED:
                return LOG_WARNING;
        case OUTCOME_FAILED:
                return LOG_ERR;
        default:
                /* Nothing happened; a coldplug asks for the same modules hundreds of times. */
                return LOG_DEBUG;
        }
}

static void record_message(Record *rec, const ModuleResult *r) {
        switch (r->outcome) {
        case OUTCOME_LOADED:
                if (r->after_load)
                        record_add(rec, "MESSAGE=Loaded module %s from %s, and then found %s.", r->name,
                                   r->path, r->after_load);
                else
                        record_add(rec, "MESSAGE=Loaded module %s from %s.", r->name, r->path);
                break;
        case OUTCOME_ALREADY_LOADED:
                record_add(rec, "MESSAGE=Module %s is already loaded.", r->name);
                break;
        case OUTCOME_BUILTIN:
                record_add(rec, "MESSAGE=Module %s is built into the kernel.", r->name);
                break;
        case OUTCOME_DENIED:
                record_add(rec, "MESSAGE=Refused to load module %s from %s: %s.", r->name,
                           r->path ?: "(no file)", r->reason ?: "untrusted origin");
                break;
        default:
                record_add(rec, "MESSAGE=Failed to load module %s: %s.", r->name,
                           r->reason ?: "unknown error");
        }
}

static void record_fallback(const Record *rec, int error) {
        char line[4096] = "";
        size_t off = 0;

        for (size_t i = 0; i < rec->n && off < sizeof(line); i++)
                off += (size_t) snprintf(line + off, sizeof(line) - off, "%s%.*s", i > 0 ? " " : "",
                                         (int) rec->iov[i].iov_len, (const char *) rec->iov[i].iov_base);
        log_full_errno(LOG_WARNING, error, "Journal unavailable (%m), record follows: %s", line);
}

int requester_copy(const Requester *from, Requester *to) {
        assert(from);
        assert(to);

        *to = *from;
        to->name = to->modalias = to->path = to->devpath = to->subsystem = to->action = to->file = to->unit =
                NULL;
        to->cgroup = to->comm = to->vendor = to->model = NULL;
        if (strdup_or_null(from->name, &to->name) < 0 || strdup_or_null(from->modalias, &to->modalias) < 0 ||
            strdup_or_null(from->unit, &to->unit) < 0 || strdup_or_null(from->cgroup, &to->cgroup) < 0 ||
            strdup_or_null(from->comm, &to->comm) < 0 || strdup_or_null(from->vendor, &to->vendor) < 0 ||
            strdup_or_null(from->model, &to->model) < 0 ||
            strdup_or_null(from->path, &to->path) < 0 || strdup_or_null(from->devpath, &to->devpath) < 0 ||
            strdup_or_null(from->subsystem, &to->subsystem) < 0 ||
            strdup_or_null(from->action, &to->action) < 0 || strdup_or_null(from->file, &to->file) < 0) {
                requester_done(to);
                return -ENOMEM;
        }
        return 0;
}

void requester_done(Requester *r) {
        free(r->name);
        free(r->modalias);
        free(r->path);
        free(r->devpath);
        free(r->subsystem);
        free(r->action);
        free(r->file);
        free(r->unit);
        free(r->cgroup);
        free(r->comm);
        free(r->vendor);
        free(r->model);
        *r = (Requester) {};
}

static void record_requester(Record *rec, const Requester *who) {
        record_add(rec, "MODGATE_SOURCE=%s", request_source_to_string(who->source));
        if (who->name)
                record_add(rec, "MODGATE_REQUEST_NAME=%s", who->name);
        if (who->modalias)
                record_add(rec, "MODGATE_MODALIAS=%s", who->modalias);
        if (who->path)
                record_add(rec, "MODGATE_REQUEST_PATH=%s", who->path);
        if (who->devpath)
                record_add(rec, "MODGATE_DEVPATH=%s", who->devpath);
        if (who->subsystem)
                record_add(rec, "MODGATE_SUBSYSTEM=%s", who->subsystem);
        if (who->action)
                record_add(rec, "MODGATE_ACTION=%s", who->action);
        if (who->seqnum >= 0)
                record_add(rec, "MODGATE_SEQNUM=%lld", (long long) who->seqnum);
        if (who->file)
                record_add(rec, "MODGATE_LIST_FILE=%s", who->file);
        if (who->vendor)
                record_add(rec, "MODGATE_DEVICE_VENDOR=%s", who->vendor);
        if (who->model)
                record_add(rec, "MODGATE_DEVICE_MODEL=%s", who->model);
        if (who->have_peer) {
                record_add(rec, "MODGATE_PEER_PID=%d", (int) who->pid);
                record_add(rec, "MODGATE_PEER_UID=%u", (unsigned) who->uid);
                if (who->unit)
                        record_add(rec, "MODGATE_PEER_UNIT=%s", who->unit);
                if (who->comm && who->comm[0])
                        record_add(rec, "MODGATE_PEER_COMM=%s", who->comm);
                if (who->cgroup)
                        record_add(rec, "MODGATE_PEER_CGROUP=%s", who->cgroup);
        }
}

/* What the file says of itself. MODGATE_SIGNATURE=none when it was read and has no signature: no
 * signature field at all is a file not read as a module. */
static void record_modinfo(Record *rec, const ModInfo *m) {
        if (m->name)
                record_add(rec, "MODGATE_FILE_MODULE=%s", m->name);
        if (!m->is_signed) {
                record_add(rec, "MODGATE_SIGNATURE=none");
                return;
        }
        if (m->signature_type)
                record_add(rec, "MODGATE_SIGNATURE_TYPE=%s", m->signature_type);
        if (m->signer)
                record_add(rec, "MODGATE_SIGNER=%s", m->signer);
        if (m->signature_key)
                record_add(rec, "MODGATE_SIGNATURE_KEY=%s", m->signature_key);
        if (m->signature_hash)
                record_add(rec, "MODGATE_SIGNATURE_HASH=%s", m->signature_hash);
}

static void record_origin(Record *rec, const ModuleResult *r) {
        if (r->path)
                record_add(rec, "MODGATE_PATH=%s", r->path);
        if (!r->have_origin)
                return;
        record_add(rec, "MODGATE_DEVICE=%u:%u", major(r->origin.dev), minor(r->origin.dev));
        record_add(rec, "MODGATE_INODE=%llu", (unsigned long long) r->origin.ino);
        record_add(rec, "MODGATE_MOUNT_ID=%llu", (unsigned long long) r->origin.mount_id);
        record_add(rec, "MODGATE_FSTYPE=%s", r->origin.fstype);
        record_add(rec, "MODGATE_SUPERBLOCK_RO=%d", r->origin.sb_ro);
        record_add(rec, "MODGATE_MOUNT_RO=%d", r->origin.mount_ro);
        if (r->backing)
                record_add(rec, "MODGATE_BACKING=%s", r->backing);
        if (r->trusted)
                record_add(rec, "MODGATE_EVIDENCE=%s", evidence_to_string(r->evidence));
        if (r->have_sha256) {
                char hex[SHA256_HEX_SIZE];

                sha256_to_hex(r->sha256, hex);
                record_add(rec, "MODGATE_SHA256=%s", hex);
        }
        if (r->have_modinfo)
                record_modinfo(rec, &r->modinfo);
        if (r->have_modinfo && r->modinfo.alias)
                record_add(rec, "MODGATE_ALIAS=%s", r->modinfo.alias);
        if (r->modinfo_from_manifest)
                record_add(rec, "MODGATE_NAME_CHECK=manifest");
        else if (r->name_from_path)
                record_add(rec, "MODGATE_NAME_CHECK=path");
        else if (r->have_modinfo)
                record_add(rec, "MODGATE_NAME_CHECK=modinfo");
        if (r->after_load)
                record_add(rec, "MODGATE_AFTER_LOAD=%s", r->after_load);
        if (r->diskseq != 0)
                record_add(rec, "MODGATE_DISKSEQ=%llu", (unsigned long long) r->diskseq);
        if (r->dm_device)
                record_add(rec, "MODGATE_DM_DEVICE=%s", r->dm_device);
        if (r->dm_target)
                record_add(rec, "MODGATE_DM_TARGET=%s", r->dm_target);
        if (r->verity_root_hash)
                record_add(rec, "MODGATE_VERITY_ROOT_HASH=%s", r->verity_root_hash);
        if (r->fsverity_digest)
                record_add(rec, "MODGATE_FSVERITY_DIGEST=%s", r->fsverity_digest);
        if (r->trusted && r->evidence == EVIDENCE_VERITY)
                record_add(rec, "MODGATE_VERITY=%s", r->fsverity ? "fs-verity" : "dm-verity");
        if (r->ima.type != IMA_NONE) {
                record_add(rec, "MODGATE_IMA=%s", ima_type_to_string(r->ima.type));
                if (r->ima.hash_algorithm[0])
                        record_add(rec, "MODGATE_IMA_HASH_ALGORITHM=%s", r->ima.hash_algorithm);
                if (ima_is_signature(r->ima.type))
                        record_add(rec, "MODGATE_IMA_KEY_ID=%08x", (unsigned) r->ima.key_id);
        }
}

static void record_send(Record *rec) {
        int q;

        if (rec->oom)
                (void) log_oom();
        q = sd_journal_sendv(rec->iov, (int) rec->n);
        if (q < 0)
                record_fallback(rec, q);
        record_done(rec);
}

/* A request that joined a load, in one field: "source=udev request=KEY pid=N uid=N unit=U devpath=D". */
static void record_joined(Record *rec, const Requester *who) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&text, &size);
        if (!f) {
                rec->oom = true;
                return;
        }
        fprintf(f, "source=%s", request_source_to_string(who->source));
        if (who->name || who->modalias || who->path)
                fprintf(f, " request=%s", who->name ?: who->modalias ?: who->path);
        if (who->have_peer)
                fprintf(f, " pid=%d uid=%u", (int) who->pid, (unsigned) who->uid);
        if (who->have_peer && who->unit)
                fprintf(f, " unit=%s", who->unit);
        if (who->devpath)
                fprintf(f, " devpath=%s", who->devpath);
        if (who->seqnum >= 0)
                fprintf(f, " seqnum=%lld", (long long) who->seqnum);
        if (fclose(f) != 0) {
                rec->oom = true;
                return;
        }
        record_add(rec, "MODGATE_JOINED=%s", text);
}

void journal_record_module(const Requesters *all, const ModuleResult *r) {
        const Requester *who = all->first;
        unsigned n_requesters = all->n;
        Record rec = {};

        assert(r);

        record_message(&rec, r);
        record_add(&rec, "MESSAGE_ID=%s", message_id(r->outcome));
        /* The kernel loaded another module than the record names, or one that names none. */
        record_add(&rec, "PRIORITY=%d", r->after_load ? LOG_ERR : priority(r->outcome));
        record_add(&rec, "MODGATE_MODULE=%s", r->name);
        record_add(&rec, "MODGATE_OUTCOME=%s", outcome_to_string(r->outcome));
        record_add(&rec, "MODGATE_ROLE=%s", role_to_string(r->role));
        record_add(&rec, "MODGATE_REQUESTERS=%u", n_requesters);
        record_requester(&rec, who);
        for (size_t i = 0; i < all->n_joined; i++)
                record_joined(&rec, all->joined + i);
        if (n_requesters > all->n_joined + 1)
                record_add(&rec, "MODGATE_JOINED_NOT_LISTED=%u",
                           n_requesters - 1 - (unsigned) all->n_joined);
        record_origin(&rec, r);
        if (r->parameters)
                record_add(&rec, "MODGATE_PARAMETERS=%s", r->parameters);
        if (r->options_source)
                record_add(&rec, "MODGATE_OPTIONS_SOURCE=%s", r->options_source);
        if (r->required_by)
                record_add(&rec, "MODGATE_REQUIRED_BY=%s", r->required_by);
        if (r->outcome == OUTCOME_LOADED) {
                record_add(&rec, "MODGATE_COMPRESSION=%s", compression_to_string(r->compression));
                record_add(&rec, "MODGATE_FINIT_FLAGS=%u", r->flags);
        }
        if (r->reason)
                record_add(&rec, "MODGATE_REASON=%s", r->reason);
        if (r->outcome == OUTCOME_DENIED)
                record_add(&rec, "MODGATE_VERDICT=origin");
        if (r->command)
                record_add(&rec, "MODGATE_REFUSED_COMMAND=%s", r->command);
        if (r->cached)
                record_add(&rec, "MODGATE_CACHED=1");
        if (r->error != 0) {
                record_add(&rec, "MODGATE_ERRNO=%d", r->error);
                record_add(&rec, "MODGATE_ERRNO_NAME=%s", strerrorname_np(r->error) ?: "unknown");
                if (r->outcome == OUTCOME_FAILED)
                        record_add(&rec, "MODGATE_ERRNO_CLASS=%s", kernel_error_class(r->error));
        }
        record_add(&rec, "MODGATE_DURATION_USEC=%llu", (unsigned long long) r->duration_usec);
        record_add(&rec, "MODGATE_WAIT_USEC=%llu", (unsigned long long) r->wait_usec);
        record_add(&rec, "MODGATE_CHECK_USEC=%llu", (unsigned long long) r->check_usec);
        record_add(&rec, "MODGATE_INIT_USEC=%llu", (unsigned long long) r->init_usec);
        if (r->check_usec > 0) {
                record_add(&rec, "MODGATE_OPEN_USEC=%llu", (unsigned long long) r->open_usec);
                record_add(&rec, "MODGATE_ORIGIN_USEC=%llu", (unsigned long long) r->origin_usec);
                record_add(&rec, "MODGATE_PROBE_USEC=%llu", (unsigned long long) r->probe_usec);
                record_add(&rec, "MODGATE_HASH_USEC=%llu", (unsigned long long) r->hash_usec);
                record_add(&rec, "MODGATE_NAME_USEC=%llu", (unsigned long long) r->name_usec);
        }
        record_send(&rec);
}

void journal_record_not_found(const Requester *who, char *const *blacklisted) {
        const char *key = who->name ?: who->modalias ?: who->path ?: "";
        Record rec = {};

        record_add(&rec, "MESSAGE=No module matches %s%s.", key,
                   blacklisted && *blacklisted ? " (only blacklisted modules do)" : "");
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_NOT_FOUND);
        record_add(&rec, "PRIORITY=%d", LOG_INFO);
        record_add(&rec, "MODGATE_OUTCOME=not_found");
        record_requester(&rec, who);
        /* A field per module, a few at most: a modalias that matches more is listed in the reply. */
        for (size_t i = 0; blacklisted && blacklisted[i] && i < BLACKLISTED_FIELDS_MAX; i++)
                record_add(&rec, "MODGATE_BLACKLISTED=%s", blacklisted[i]);
        record_send(&rec);
}

void journal_record_policy(const Requester *who, const PolicyRecord *pr) {
        const char *what = pr->module ? "module" : "request";
        const char *key = pr->module ?: who->name ?: who->modalias ?: "";
        Record rec = {};

        assert(who);
        assert(pr);

        if (pr->would)
                record_add(&rec,
                           "MESSAGE=Policy would deny %s %s, loading it as the mode is permissive: %s.",
                           what, key, pr->reason);
        else
                record_add(&rec, "MESSAGE=Policy denied %s %s: %s.", what, key, pr->reason);
        record_add(&rec, "MESSAGE_ID=%s",
                   pr->would ? MODGATE_MESSAGE_WOULD_DENY : MODGATE_MESSAGE_MODULE_DENIED);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_OUTCOME=%s", pr->would ? "would_deny" : "denied");
        record_add(&rec, "MODGATE_VERDICT=policy");
        if (pr->module) {
                record_add(&rec, "MODGATE_MODULE=%s", pr->module);
                record_add(&rec, "MODGATE_ROLE=%s", role_to_string(pr->role));
        }
        record_requester(&rec, who);
        record_add(&rec, "MODGATE_REASON=%s", pr->reason);
        if (pr->rule)
                record_add(&rec, "MODGATE_RULE=%s", pr->rule);
        if (pr->parameter)
                record_add(&rec, "MODGATE_PARAMETER=%s", pr->parameter);
        record_add(&rec, "MODGATE_MODE=%s", pr->would ? "permissive" : "enforce");
        record_send(&rec);
}

void journal_record_unload(const Requester *who, const char *module, int error, const char *reason) {
        Record rec = {};

        if (error == 0)
                record_add(&rec, "MESSAGE=Unloaded module %s.", module);
        else
                record_add(&rec, "MESSAGE=Did not unload module %s: %s.", module, reason ?: strerror(error));
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_MODULE_UNLOADED);
        record_add(&rec, "PRIORITY=%d", error == 0 ? LOG_NOTICE : LOG_WARNING);
        record_add(&rec, "MODGATE_MODULE=%s", module);
        record_add(&rec, "MODGATE_OUTCOME=%s", error == 0 ? "unloaded" : "kept");
        record_requester(&rec, who);
        if (reason)
                record_add(&rec, "MODGATE_REASON=%s", reason);
        if (error != 0) {
                record_add(&rec, "MODGATE_ERRNO=%d", error);
                record_add(&rec, "MODGATE_ERRNO_NAME=%s", strerrorname_np(error) ?: "unknown");
        }
        record_send(&rec);
}

void journal_record_root(const char *path, const char *identity, const char *recorded, bool changed) {
        Record rec = {};

        assert(path);

        if (changed)
                record_add(
                        &rec,
                        "MESSAGE=Trusted root %s is not what it was when first pinned this boot: recorded "
                        "%s, now %s. Nothing beneath it is loaded.",
                        path, recorded, identity);
        else
                record_add(&rec, "MESSAGE=Pinned trusted root %s (%s)%s.", path, identity,
                           recorded ? ", as at its first pin this boot" : "");
        record_add(&rec, "MESSAGE_ID=%s",
                   changed ? MODGATE_MESSAGE_ROOT_CHANGED : MODGATE_MESSAGE_ROOT_PINNED);
        record_add(&rec, "PRIORITY=%d", changed ? LOG_ERR : LOG_INFO);
        record_add(&rec, "MODGATE_ROOT=%s", path);
        record_add(&rec, "MODGATE_ROOT_IDENTITY=%s", identity);
        if (recorded)
                record_add(&rec, "MODGATE_ROOT_RECORDED=%s", recorded);
        record_send(&rec);
}

void journal_record_root_pins(TrustedRoot *const *roots, size_t n_roots) {
        for (size_t i = 0; i < n_roots; i++) {
                TrustedRootPinned p;

                trusted_root_take_pinned(roots[i], &p);
                if (p.identity)
                        journal_record_root(roots[i]->path, p.identity, p.recorded, p.changed);
                trusted_root_pinned_done(&p);
        }
}

void journal_record_refused_caller(const Requester *who, const char *method, const char *reason) {
        const char *key = who->name ?: who->modalias ?: who->path ?: "";
        Record rec = {};

        record_add(&rec, "MESSAGE=Refused %s%s%s from pid %d: %s.", method, *key ? " of " : "", key,
                   who->have_peer ? (int) who->pid : -1, reason);
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_CALLER_REFUSED);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_OUTCOME=refused_caller");
        record_add(&rec, "MODGATE_METHOD=%s", method);
        record_add(&rec, "MODGATE_REASON=%s", reason);
        /* What the peer claimed, marked as a claim: it is not provenance. */
        if (who->source_given)
                record_add(&rec, "MODGATE_CLAIMED_SOURCE=%s", request_source_to_string(who->source));
        if (who->name)
                record_add(&rec, "MODGATE_REQUEST_NAME=%s", who->name);
        if (who->modalias)
                record_add(&rec, "MODGATE_MODALIAS=%s", who->modalias);
        if (who->path)
                record_add(&rec, "MODGATE_REQUEST_PATH=%s", who->path);
        if (who->devpath)
                record_add(&rec, "MODGATE_CLAIMED_DEVPATH=%s", who->devpath);
        if (who->have_peer) {
                record_add(&rec, "MODGATE_PEER_PID=%d", (int) who->pid);
                record_add(&rec, "MODGATE_PEER_UID=%u", (unsigned) who->uid);
                if (who->unit)
                        record_add(&rec, "MODGATE_PEER_UNIT=%s", who->unit);
        }
        record_send(&rec);
}

static const char *const summary_outcome[_CHATTER_KIND_MAX] = {
        [CHATTER_NOT_FOUND] = "not_found",
        [CHATTER_PRESENT] = "already_loaded",
        [CHATTER_SEALED] = "refused_sealed",
        [CHATTER_DENIED] = "denied",
        [CHATTER_WOULD_DENY] = "would_deny",
        [CHATTER_REFUSED_CALLER] = "refused_caller",
        [CHATTER_FAILED] = "failed",
        [CHATTER_GUARD] = "refused_guard",
};

static const char *const summary_what[_CHATTER_KIND_MAX] = {
        [CHATTER_NOT_FOUND] = "matched no module",
        [CHATTER_PRESENT] = "were for modules already loaded or builtin",
        [CHATTER_SEALED] = "were refused because the kernel is sealed (METHOD:SOURCE:KEY)",
        [CHATTER_DENIED] = "were denied (SOURCE:MODULE or SOURCE:KEY)",
        [CHATTER_WOULD_DENY] =
                "would have been denied but for the permissive mode (SOURCE:MODULE or SOURCE:KEY)",
        [CHATTER_REFUSED_CALLER] = "were refused because of who asked (METHOD:SOURCE:KEY)",
        [CHATTER_FAILED] = "failed to load (SOURCE:MODULE)",
        [CHATTER_GUARD] = "were module loads by other processes that the guard refused, or would refuse in its "
                          "permissive mode (COMM:SYSCALL:REASON)",
};

/* A list of counts as one field: "KEY=N KEY=N". NULL when empty or out of memory. */
static char *counts_text(const ChatterCount *counts, size_t n) {
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (n == 0)
                return NULL;
        f = open_memstream(&text, &size);
        for (size_t i = 0; f && i < n; i++)
                fprintf(f, "%s%s=%lu", i > 0 ? " " : "", counts[i].key, counts[i].n);
        if (!f || fclose(f) != 0)
                return mfree(text);
        return text;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n > k && strcmp(s + n - k, suffix) == 0;
}

/* A peer is counted by its unit, or as "uid:N" in none. */
static bool is_unit(const char *peer) {
        return peer && (has_suffix(peer, ".service") || has_suffix(peer, ".scope"));
}

void journal_record_summary(const ChatterSummary *s, unsigned window_sec) {
        _cleanup_free_ char *top = counts_text(s->top, s->n_top), *peers = counts_text(s->peers, s->n_peers);
        bool refusal = s->kind >= CHATTER_DENIED;
        Record rec = {};

        assert(s);

        if (s->peer)
                record_add(&rec, "MESSAGE=%lu more requests from %s in the last %us %s, for %zu keys: %s.",
                           s->total, s->peer, window_sec, summary_what[s->kind], s->n_keys,
                           top ?: "(none remembered)");
        else
                record_add(&rec, "MESSAGE=%lu more requests from %zu more peers in the last %us %s: %s.",
                           s->total, s->n_peers, window_sec, summary_what[s->kind], peers ?: "?");
        record_add(&rec, "MESSAGE_ID=%s",
                   refusal ? MODGATE_MESSAGE_REFUSALS_COUNTED : MODGATE_MESSAGE_SUMMARY);
        record_add(&rec, "PRIORITY=%d", refusal ? LOG_WARNING : LOG_INFO);
        record_add(&rec, "MODGATE_OUTCOME=%s", summary_outcome[s->kind]);
        if (s->peer)
                record_add(&rec, "MODGATE_PEER=%s", s->peer);
        if (is_unit(s->peer))
                record_add(&rec, "MODGATE_PEER_UNIT=%s", s->peer);
        record_add(&rec, "MODGATE_COUNT=%lu", s->total);
        record_add(&rec, "MODGATE_KEYS=%zu", s->n_keys);
        if (s->folded > 0)
                record_add(&rec, "MODGATE_FOLDED=%lu", s->folded);
        record_add(&rec, "MODGATE_WINDOW_SEC=%u", window_sec);
        if (top)
                record_add(&rec, "MODGATE_TOP=%s", top);
        if (!s->peer) {
                record_add(&rec, "MODGATE_PEERS_FOLDED=%zu", s->n_peers);
                if (peers)
                        record_add(&rec, "MODGATE_PEERS=%s", peers);
        }
        record_send(&rec);
}

void journal_record_started(const char *version, const char *policy_digest, const char *mode,
                            const char *enforcement, const char *tree, bool sealed) {
        Record rec = {};

        record_add(&rec, "MESSAGE=modgated %s started: policy %.12s (%s), module tree %s; kernel: %s%s.",
                   version, policy_digest, mode, tree, enforcement,
                   sealed ? "; the kernel is sealed, every Load, Unload and Seal is refused" : "");
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_STARTED);
        record_add(&rec, "PRIORITY=%d", LOG_INFO);
        record_add(&rec, "MODGATE_VERSION=%s", version);
        record_add(&rec, "MODGATE_POLICY_DIGEST=%s", policy_digest);
        record_add(&rec, "MODGATE_MODE=%s", mode);
        record_add(&rec, "MODGATE_ENFORCEMENT=%s", enforcement);
        record_add(&rec, "MODGATE_TREE=%s", tree);
        record_add(&rec, "MODGATE_SEALED=%d", sealed);
        record_send(&rec);
}

/* A list of module names as one field: "a b c". */
static void record_names(Record *rec, const char *field, char *const *names) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (!names || !names[0])
                return;
        f = open_memstream(&text, &size);
        for (size_t i = 0; f && names[i]; i++)
                fprintf(f, "%s%s", i > 0 ? " " : "", names[i]);
        if (!f || fclose(f) != 0) {
                rec->oom = true;
                return;
        }
        record_add(rec, "%s=%s", field, text);
}

void journal_record_sealed(const Requester *who, char *const *load, char *const *pending) {
        Record rec = {};

        if (who)
                record_add(
                        &rec,
                        "MESSAGE=Sealed the kernel (kernel.modules_disabled=1): no module can be loaded or "
                        "unloaded until reboot.");
        else
                record_add(&rec,
                           "MESSAGE=The kernel was sealed outside modgate (kernel.modules_disabled=1): no "
                           "module can be loaded or unloaded until reboot.");
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_SEALED);
        record_add(&rec, "PRIORITY=%d", LOG_NOTICE);
        record_add(&rec, "MODGATE_OUTCOME=sealed");
        if (who) {
                record_add(&rec, "MODGATE_METHOD=Seal");
                record_requester(&rec, who);
        } else
                record_add(&rec,
                           "MODGATE_REASON=kernel.modules_disabled reads 1, and modgate did not write it");
        record_names(&rec, "MODGATE_SEAL_LOAD", load);
        record_names(&rec, "MODGATE_SEAL_PENDING", pending);
        record_send(&rec);
}

void journal_record_sealed_refusal(const Requester *who, const char *method, bool sealing) {
        const char *key = who->name ?: who->modalias ?: who->path ?: "";
        const char *why =
                sealing ? "the kernel is being sealed" : "the kernel is sealed (kernel.modules_disabled=1)";
        Record rec = {};

        record_add(&rec, "MESSAGE=Refused %s%s%s: %s.", method, *key ? " of " : "", key, why);
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_SEALED_REFUSED);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_OUTCOME=refused_sealed");
        record_add(&rec, "MODGATE_METHOD=%s", method);
        record_add(&rec, "MODGATE_REASON=%s", why);
        record_requester(&rec, who);
        record_send(&rec);
}

void journal_record_outside(const char *module, const char *taint, const char *how, bool gone) {
        Record rec = {};

        if (gone)
                record_add(&rec, "MESSAGE=Module %s was unloaded outside modgate (%s).", module, how);
        else
                record_add(&rec, "MESSAGE=Module %s was loaded outside modgate (%s)%s%s.", module, how,
                           taint && *taint ? "; taint " : "", taint && *taint ? taint : "");
        record_add(&rec, "MESSAGE_ID=%s", gone ? MODGATE_MESSAGE_GONE : MODGATE_MESSAGE_OUTSIDE);
        record_add(&rec, "PRIORITY=%d", LOG_NOTICE);
        record_add(&rec, "MODGATE_MODULE=%s", module);
        record_add(&rec, "MODGATE_OUTCOME=%s", gone ? "unloaded_outside" : "loaded_outside");
        record_add(&rec, "MODGATE_REASON=%s", how);
        if (taint && *taint)
                record_add(&rec, "MODGATE_TAINT=%s", taint);
        record_send(&rec);
}

void journal_record_input_ignored(const char *input, char *const *files) {
        size_t n = strv_length(files);
        Record rec = {};

        if (n == 0)
                return;
        record_add(&rec,
                   "MESSAGE=Ignoring %zu %s file%s in /run (%s%s): only /etc and /usr may steer modgate, "
                   "and a process denied module loading can usually still write /run.",
                   n, input, n > 1 ? "s" : "", files[0], n > 1 ? ", ..." : "");
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_INPUT_IGNORED);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_INPUT=%s", input);
        record_names(&rec, "MODGATE_IGNORED_FILES", files);
        record_send(&rec);
}

void journal_record_signal_ignored(const char *signal, pid_t pid, uid_t uid, const char *comm,
                                   const char *unit) {
        Record rec = {};

        record_add(&rec, "MESSAGE=Ignoring %s from pid %d (uid %u, %s, %s): only PID 1 reloads modgated "
                   "(systemctl reload modgated), or a Reload call by a caller with CAP_SYS_MODULE.", signal,
                   (int) pid, (unsigned) uid, comm ?: "command unknown", unit ?: "no unit");
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_SIGNAL_IGNORED);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_SIGNAL=%s", signal);
        record_add(&rec, "MODGATE_SENDER_PID=%d", (int) pid);
        record_add(&rec, "MODGATE_SENDER_UID=%u", (unsigned) uid);
        if (comm)
                record_add(&rec, "MODGATE_SENDER_COMM=%s", comm);
        if (unit)
                record_add(&rec, "MODGATE_SENDER_UNIT=%s", unit);
        record_send(&rec);
}

void journal_record_uevents_lost(uint64_t seqnum, int rcvbuf) {
        Record rec = {};

        record_add(&rec,
                   "MESSAGE=The kernel's uevents overflowed modgated's receive buffer (%d bytes): udevd's "
                   "requests for events up to %llu are checked against sysfs, and one for a device gone by "
                   "then "
                   "is refused.",
                   rcvbuf, (unsigned long long) seqnum);
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_UEVENTS_LOST);
        record_add(&rec, "PRIORITY=%d", LOG_WARNING);
        record_add(&rec, "MODGATE_SEQNUM=%llu", (unsigned long long) seqnum);
        record_send(&rec);
}

/* A cgroup named as a unit is one: its leaf cgroup, for a service or a scope without children. */
static bool is_unit_name(const char *s) {
        return has_suffix(s, ".service") || has_suffix(s, ".scope");
}

void journal_record_guard(const struct guard_event *e, const char *message) {
        char comm[sizeof(e->comm) + 1], exe[sizeof(e->exe_name) + 1], cgroup[sizeof(e->cgroup) + 1];
        bool refused = e->mode != GUARD_MODE_PERMISSIVE;
        Record rec = {};

        guard_printable(e->comm, sizeof(e->comm), comm);
        guard_printable(e->exe_name, sizeof(e->exe_name), exe);
        guard_printable(e->cgroup, sizeof(e->cgroup), cgroup);
        record_add(&rec, "MESSAGE=%s", message);
        record_add(&rec, "MESSAGE_ID=%s", MODGATE_MESSAGE_GUARD);
        record_add(&rec, "PRIORITY=%d", refused ? LOG_WARNING : LOG_NOTICE);
        record_add(&rec, "MODGATE_OUTCOME=%s", refused ? "refused_guard" : "would_refuse_guard");
        record_add(&rec, "MODGATE_GUARD_MODE=%s", guard_mode_to_string(e->mode) ?: "?");
        record_add(&rec, "MODGATE_GUARD_REASON=%s", guard_why_to_name(e->why) ?: "?");
        record_add(&rec, "MODGATE_SYSCALL=%s", guard_hook_to_string(e->hook) ?: "?");
        record_add(&rec, "MODGATE_CALLER_PID=%u", e->tgid);
        if (e->pid != e->tgid)
                record_add(&rec, "MODGATE_CALLER_TID=%u", e->pid);
        record_add(&rec, "MODGATE_CALLER_UID=%u", e->uid);
        record_add(&rec, "MODGATE_CALLER_COMM=%s", comm);
        if (exe[0])
                record_add(&rec, "MODGATE_CALLER_EXE=%s", exe);
        if (e->exe_ino != 0)
                record_add(&rec, "MODGATE_CALLER_EXE_INODE=%u:%u:%llu", major(guard_user_dev(e->exe_dev)),
                           minor(guard_user_dev(e->exe_dev)), (unsigned long long) e->exe_ino);
        if (cgroup[0])
                record_add(&rec, "MODGATE_CALLER_CGROUP=%s", cgroup);
        if (is_unit_name(cgroup))
                record_add(&rec, "MODGATE_CALLER_UNIT=%s", cgroup);
        record_add(&rec, "MODGATE_CALLER_CGROUP_ID=%llu", (unsigned long long) e->cgroup_id);
        if (e->hook == GUARD_HOOK_READ_FILE) {
                record_add(&rec, "MODGATE_DEVICE=%u:%u", major(guard_user_dev(e->dev)), minor(guard_user_dev(e->dev)));
                record_add(&rec, "MODGATE_INODE=%llu", (unsigned long long) e->ino);
        }
        record_send(&rec);
}
