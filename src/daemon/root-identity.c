/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fdstore.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "origin.h"
#include "parse-util.h"
#include "probe-client.h"
#include "root-identity.h"

#define RECORD_MAX (256 * 1024)
/* A record can be neither changed nor replaced in place, by anyone holding its fd. */
#define RECORD_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* The records, "PATH\tIDENTITY" a line, in a sealed memfd of PID 1's fd store; each new record
 * replaces it with another. records_fd < 0: none yet. keep: there is a store. */
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;
static int records_fd = -EBADF;
static bool keep;

void root_identity_format(const RootIdentity *id, char *buf, size_t size) {
        assert(id);

        snprintf(buf, size, "dev=%u:%u diskseq=%llu fstype=%s%s%s", id->major, id->minor,
                 (unsigned long long) id->diskseq, id->fstype[0] ? id->fstype : "-",
                 id->root_hash[0] ? " roothash=" : "", id->root_hash);
}

int root_identity_parse(const char *s, RootIdentity *ret) {
        RootIdentity id = {};
        char fstype[32], hash[129];
        unsigned long long seq;
        int n = 0;

        assert(ret);

        if (sscanf(s, "dev=%u:%u diskseq=%llu fstype=%31s%n", &id.major, &id.minor, &seq, fstype, &n) != 4)
                return -EBADMSG;
        id.diskseq = seq;
        if (strcmp(fstype, "-") != 0)
                memcpy(id.fstype, fstype, sizeof(id.fstype));
        s += n;
        if (*s != '\0') {
                n = 0;
                if (sscanf(s, " roothash=%128[0-9a-f]%n", hash, &n) != 1 || s[n] != '\0')
                        return -EBADMSG;
                memcpy(id.root_hash, hash, sizeof(id.root_hash));
        }
        *ret = id;
        return 0;
}

bool root_identity_equal(const RootIdentity *a, const RootIdentity *b) {
        assert(a);

        return a->major == b->major && a->minor == b->minor && a->diskseq == b->diskseq &&
                strcmp(a->fstype, b->fstype) == 0 && !a->root_hash_unknown && !b->root_hash_unknown &&
                strcmp(a->root_hash, b->root_hash) == 0;
}

int root_identity_of(int dirfd, const char *probe_address, RootIdentity *ret) {
        _cleanup_(origin_freep) Origin *o = NULL;
        int r;

        assert(ret);

        r = origin_collect(dirfd, &o);
        if (r < 0)
                return r;
        *ret = (RootIdentity) {
                .major = major(o->file.dev),
                .minor = minor(o->file.dev),
                .diskseq = o->diskseq,
        };
        snprintf(ret->fstype, sizeof(ret->fstype), "%s", o->file.fstype);
        if (o->device_mapper) {
                r = probe_dm_table(probe_address, o);
                if (r < 0)
                        return r;
                if (o->dm.error < 0)
                        ret->root_hash_unknown = true;
                else if (strcmp(o->dm.target, "verity") == 0)
                        snprintf(ret->root_hash, sizeof(ret->root_hash), "%s", o->dm.root_hash);
        }
        return 0;
}

/* The record file's lines are "PATH\tIDENTITY". Paths come from the configuration, which has no
 * control characters in it. */
static int find_record(const char *text, const char *path, RootIdentity *ret) {
        size_t n = strlen(path);

        for (const char *p = text; *p; ) {
                const char *nl = strchrnul(p, '\n');

                if ((size_t) (nl - p) > n && strncmp(p, path, n) == 0 && p[n] == '\t') {
                        _cleanup_free_ char *line = strndup(p + n + 1, (size_t) (nl - p) - n - 1);

                        if (!line)
                                return -ENOMEM;
                        return root_identity_parse(line, ret) < 0 ? -EBADMSG : 1;
                }
                p = *nl ? nl + 1 : nl;
        }
        return 0;
}

static int read_records(char **ret) {
        if (records_fd < 0)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        return read_full_fd(records_fd, RECORD_MAX, ret, NULL);
}

static int append_record(const char *old, const char *path, const RootIdentity *id) {
        _cleanup_close_ int fd = -EBADF;
        char line[512];
        int r;

        root_identity_format(id, line, sizeof(line));
        fd = memfd_create("modgate-trusted-roots", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return negative_errno();
        if (dprintf(fd, "%s%s\t%s\n", old, path, line) < 0 || fcntl(fd, F_ADD_SEALS, RECORD_SEALS) < 0)
                return negative_errno();
        r = fdstore_put(fd, FDSTORE_ROOTS);
        if (r < 0)
                return r;
        safe_close(records_fd);
        records_fd = TAKE_FD(fd);
        return 0;
}

int root_identity_store_open(bool store) {
        _cleanup_close_ int fd = -EBADF;
        int seals;

        keep = store;
        if (!store)
                return 0;
        fd = fdstore_take(FDSTORE_ROOTS);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || (seals & RECORD_SEALS) != RECORD_SEALS)
                return -EBADFD;
        pthread_mutex_lock(&record_lock);
        safe_close(records_fd);
        records_fd = TAKE_FD(fd);
        pthread_mutex_unlock(&record_lock);
        return 0;
}

/* What the records say of path, with record_lock held: 1 (in *ret), 0 (nothing), or a negative
 * errno; and their text, for a record to be added. */
static int lookup_locked(const char *path, char **ret_text, RootIdentity *ret) {
        int r;

        r = read_records(ret_text);
        return r < 0 ? r : find_record(*ret_text, path, ret);
}

static int root_identity_find(const char *path, RootIdentity *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        pthread_mutex_lock(&record_lock);
        r = lookup_locked(path, &text, ret);
        pthread_mutex_unlock(&record_lock);
        return r;
}

int root_identity_check(const char *path, const RootIdentity *id, RootIdentity *ret_recorded) {
        _cleanup_free_ char *text = NULL;
        RootIdentity recorded;
        int r;

        assert(ret_recorded);

        pthread_mutex_lock(&record_lock);
        r = lookup_locked(path, &text, &recorded);
        if (r == 0)
                r = append_record(text, path, id);
        else if (r > 0 && root_identity_equal(&recorded, id))
                r = 1;
        else if (r > 0) {
                *ret_recorded = recorded;
                r = -ESTALE;
        }
        pthread_mutex_unlock(&record_lock);
        return r;
}

/* What the pin found, for the main thread to record (trusted_root_take_pinned()). */
static int root_pinned(TrustedRoot *r, const char *identity, const char *recorded, bool changed) {
        _cleanup_free_ char *i = NULL, *w = NULL;

        i = strdup(identity);
        if (!i)
                return -ENOMEM;
        if (recorded) {
                w = strdup(recorded);
                if (!w)
                        return -ENOMEM;
        }
        trusted_root_pinned_done(&r->pinned);
        r->pinned = (TrustedRootPinned) {
                .identity = TAKE_PTR(i),
                .recorded = TAKE_PTR(w),
                .changed = changed,
        };
        return 0;
}

int root_identity_verify(TrustedRoot *r, const char *probe_address) {
        char now[512], was[512];
        RootIdentity id, recorded;
        int q;

        assert(r);

        q = root_identity_of(r->fd, probe_address, &id);
        if (q == -ENOMEM)
                return q;
        if (q < 0) {
                log_warning_errno(
                        q, "Failed to identify trusted root %s, it is not checked against earlier pins: %m",
                        r->path);
                return 0;
        }
        root_identity_format(&id, now, sizeof(now));
        if (id.root_hash_unknown)
                strncat(now, " roothash=unknown", sizeof(now) - strlen(now) - 1);
        if (!keep) {
                /* Said once at start: nothing is kept without a store. */
                return root_pinned(r, now, NULL, false);
        }

        /* Nothing is recorded that is not known: a later pin that can read the table records it. */
        q = id.root_hash_unknown ? -ENODATA : root_identity_check(r->path, &id, &recorded);
        if (q == -ENODATA) {
                q = root_identity_find(r->path, &recorded);
                if (q == 0) {
                        log_warning("Trusted root %s is on a device-mapper device whose table cannot be "
                                    "read now: its "
                                    "identity is not recorded until it can be.",
                                    r->path);
                        return root_pinned(r, now, NULL, false);
                }
                if (q > 0)
                        q = -ESTALE;
        }
        if (q == -EBADMSG) {
                if (root_pinned(r, now, "unreadable", true) < 0)
                        return -ENOMEM;
                if (asprintf(&r->changed, "the record of its first pin this boot cannot be read") < 0)
                        return (r->changed = NULL), -ENOMEM;
                return 0;
        }
        if (q == -ENOMEM)
                return q;
        if (q == -ESTALE) {
                root_identity_format(&recorded, was, sizeof(was));
                if (root_pinned(r, now, was, true) < 0)
                        return -ENOMEM;
                if (asprintf(&r->changed, "recorded %s, now %s", was, now) < 0) {
                        r->changed = NULL;
                        return -ENOMEM;
                }
                return 0;
        }
        if (q < 0) {
                log_warning_errno(q,
                                  "Failed to check trusted root %s against the record of its first pin: %m",
                                  r->path);
                return 0;
        }
        return root_pinned(r, now, q == 0 ? NULL : now, false);
}
