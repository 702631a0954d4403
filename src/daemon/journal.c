/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "journal.h"
#include "log.h"

#define FIELDS_MAX 32

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
                return LOG_INFO;
        }
}

static void record_message(Record *rec, const ModuleResult *r) {
        switch (r->outcome) {
        case OUTCOME_LOADED:
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
                record_add(rec, "MESSAGE=Failed to load module %s: %s.", r->name, r->reason ?: "unknown error");
        }
}

static void record_fallback(const Record *rec, int error) {
        char line[4096];
        size_t off = 0;

        for (size_t i = 0; i < rec->n && off < sizeof(line); i++)
                off += (size_t) snprintf(line + off, sizeof(line) - off, "%s%.*s", i > 0 ? " " : "",
                                         (int) rec->iov[i].iov_len, (const char *) rec->iov[i].iov_base);
        log_full_errno(LOG_WARNING, error, "Journal unavailable (%m), record follows: %s", line);
}

void journal_record_module(const Requester *who, const ModuleResult *r) {
        Record rec = {};
        int q;

        record_message(&rec, r);
        record_add(&rec, "MESSAGE_ID=%s", message_id(r->outcome));
        record_add(&rec, "PRIORITY=%d", priority(r->outcome));
        record_add(&rec, "MODGATE_MODULE=%s", r->name);
        record_add(&rec, "MODGATE_OUTCOME=%s", outcome_to_string(r->outcome));
        record_add(&rec, "MODGATE_REQUEST=%s", who->request);
        if (who->have_peer) {
                record_add(&rec, "MODGATE_PEER_PID=%d", (int) who->pid);
                record_add(&rec, "MODGATE_PEER_UID=%u", (unsigned) who->uid);
        }
        if (r->path)
                record_add(&rec, "MODGATE_PATH=%s", r->path);
        if (r->have_origin) {
                record_add(&rec, "MODGATE_DEVICE=%u:%u", major(r->origin.dev), minor(r->origin.dev));
                record_add(&rec, "MODGATE_INODE=%llu", (unsigned long long) r->origin.ino);
                record_add(&rec, "MODGATE_MOUNT_ID=%llu", (unsigned long long) r->origin.mount_id);
                record_add(&rec, "MODGATE_FSTYPE=%s", r->origin.fstype);
                record_add(&rec, "MODGATE_SUPERBLOCK_RO=%d", r->origin.sb_ro);
                record_add(&rec, "MODGATE_MOUNT_RO=%d", r->origin.mount_ro);
        }
        if (r->outcome == OUTCOME_LOADED) {
                record_add(&rec, "MODGATE_COMPRESSION=%s", compression_to_string(r->compression));
                record_add(&rec, "MODGATE_FINIT_FLAGS=%u", r->flags);
        }
        if (r->reason)
                record_add(&rec, "MODGATE_REASON=%s", r->reason);
        if (r->error != 0) {
                record_add(&rec, "MODGATE_ERRNO=%d", r->error);
                record_add(&rec, "MODGATE_ERRNO_NAME=%s", strerrorname_np(r->error) ?: "unknown");
        }
        record_add(&rec, "MODGATE_DURATION_USEC=%llu", (unsigned long long) r->duration_usec);

        if (rec.oom)
                log_oom();

        q = sd_journal_sendv(rec.iov, (int) rec.n);
        if (q < 0)
                record_fallback(&rec, q);

        record_done(&rec);
}
