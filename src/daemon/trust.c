/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "strv.h"
#include "trust.h"

static const char *const verdict_table[_TRUST_VERDICT_MAX] = {
        [TRUST_OK] = "trusted",
        [TRUST_NOT_REGULAR] = "not a regular file",
        [TRUST_NOT_ROOT_OWNED] = "file is not owned by root",
        [TRUST_WRITABLE_BY_OTHERS] = "file is writable by group or others",
};

const char *trust_verdict_to_string(TrustVerdict v) {
        return v >= 0 && v < _TRUST_VERDICT_MAX ? verdict_table[v] : NULL;
}

TrustVerdict trust_check_file(const FileOrigin *o) {
        assert(o);

        if (!S_ISREG(o->mode))
                return TRUST_NOT_REGULAR;
        if (o->uid != 0)
                return TRUST_NOT_ROOT_OWNED;
        if (o->mode & (S_IWGRP | S_IWOTH))
                return TRUST_WRITABLE_BY_OTHERS;
        return TRUST_OK;
}

static const char *const evidence_table[_EVIDENCE_MAX] = {
        [EVIDENCE_VERITY] = "verity",
        [EVIDENCE_READ_ONLY] = "read-only",
        [EVIDENCE_MANIFEST] = "manifest",
        [EVIDENCE_OWNERSHIP] = "ownership",
};

const char *evidence_to_string(Evidence e) {
        return e >= 0 && e < _EVIDENCE_MAX ? evidence_table[e] : NULL;
}

Evidence evidence_from_string(const char *s) {
        for (Evidence e = 0; e < _EVIDENCE_MAX; e++)
                if (strcmp(s, evidence_table[e]) == 0)
                        return e;
        return -EINVAL;
}

int evidence_mask_to_string(unsigned mask, const char *sep, char **ret) {
        char *s = strdup(""), *n;

        for (Evidence e = 0; s && e < _EVIDENCE_MAX; e++)
                if (mask & EVIDENCE_MASK(e)) {
                        if (asprintf(&n, "%s%s%s", s, *s ? sep : "", evidence_table[e]) < 0)
                                n = NULL;
                        free(s);
                        s = n;
                }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* Disk file systems whose read-only superblock on a read-only device means that the bytes cannot
 * change below the file. Not network file systems or FUSE (the bytes live elsewhere), not tmpfs or
 * ramfs (memory that anyone with write access to the mount changes), not overlayfs (its layers are
 * not followed). */
static const char *const read_only_fstypes[] = {
        "btrfs", "erofs", "ext2", "ext3", "ext4", "f2fs", "iso9660", "squashfs", "udf", "xfs",
};

static bool read_only_fstype(const char *fstype) {
        for (size_t i = 0; i < ELEMENTSOF(read_only_fstypes); i++)
                if (strcmp(fstype, read_only_fstypes[i]) == 0)
                        return true;
        return false;
}

/* Sets *ret to the formatted reason; returns 0 (not read-only: the answer) or -ENOMEM. */
static int not_read_only(char **ret, const char *fmt, ...) _printf_(2, 3);
static int not_read_only(char **ret, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int read_only_at(const Origin *o, unsigned depth, char **ret_reason) {
        _cleanup_free_ char *below = NULL;
        const FileOrigin *f = &o->file;
        const char *what = o->backing == BACKING_LOOP ? o->device : "the file system";
        TrustVerdict v;
        int r;

        /* A backing file must pass the file checks too: whoever may write it may change the bytes. */
        if (depth > 0 && (v = trust_check_file(f)) != TRUST_OK)
                return not_read_only(ret_reason, "%s", trust_verdict_to_string(v));
        if (!read_only_fstype(f->fstype))
                return not_read_only(ret_reason, "file system type %s is never read-only evidence",
                                     f->fstype[0] ? f->fstype : "(unknown)");
        /* A read-only mount of a writable file system (a bind mount, a ProtectSystem= sandbox) can
         * still be changed through another mount: only the superblock counts. */
        if (!f->sb_ro)
                return not_read_only(ret_reason, "the %s file system is writable (superblock not read-only)",
                                     f->fstype);
        switch (o->backing) {
        case BACKING_NONE:
                return not_read_only(ret_reason, "no block device below the %s file system", f->fstype);
        case BACKING_BLOCK:
        case BACKING_LOOP:
                if (!o->device_ro && strcmp(o->device, o->device_writable) == 0)
                        return not_read_only(ret_reason, "block device %s is writable", o->device);
                if (!o->device_ro)
                        return not_read_only(ret_reason, "%s is below block device %s and is writable or "
                                             "a loop device", o->device_writable, o->device);
                if (o->backing == BACKING_BLOCK)
                        return 1;
                break;
        case BACKING_FILE:
                break;
        default:
                return not_read_only(ret_reason, "unknown backing");
        }

        if (!o->below)
                return not_read_only(ret_reason, "%s's backing file %s cannot be checked: %s", what,
                                     o->backing_path, o->below_detail ?:
                                     strerrordesc_np(-o->below_error) ?: "unknown error");
        r = read_only_at(o->below, depth + 1, &below);
        if (r != 0)
                return r;
        return not_read_only(ret_reason, "%s's backing file %s: %s", what, o->backing_path, below);
}

int trust_read_only(const Origin *o, char **ret_reason) {
        *ret_reason = NULL;
        return read_only_at(o, 0, ret_reason);
}

/* File systems where the bytes hashed through a fd are the bytes the kernel reads through it next,
 * unless someone who may write the file writes it in between: local disks, and tmpfs, whose page
 * cache is the file itself (a writer changes it there as on ext4, no more). Not network file systems,
 * 9p, virtiofs or FUSE (a server outside the kernel answers each read, and may answer the kernel's
 * read with other bytes than ours), not overlayfs (its layers are not followed). vfat and the like
 * are left out: their owner and mode are mount options, and module trees do not live there. */
static const char *const manifest_fstypes[] = {
        "btrfs", "erofs", "ext2", "ext3", "ext4", "f2fs", "iso9660", "squashfs", "tmpfs", "udf", "xfs",
};

bool trust_manifest_fstype(const char *fstype) {
        for (size_t i = 0; i < ELEMENTSOF(manifest_fstypes); i++)
                if (strcmp(fstype, manifest_fstypes[i]) == 0)
                        return true;
        return false;
}

int trust_manifest_load(const char *path, Manifest **ret, char **reterr_message) {
        _cleanup_close_ int fd = -EBADF;
        FileOrigin o;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        r = file_origin_from_fd(fd, &o);
        if (r < 0)
                return r;
        if (!trust_manifest_fstype(o.fstype)) {
                if (asprintf(reterr_message,
                             "refusing a manifest on a %s file system: manifest evidence needs a "
                             "local disk file system",
                             o.fstype[0] ? o.fstype : "(unknown)") < 0) {
                        *reterr_message = NULL;
                        return -ENOMEM;
                }
                return -EPERM;
        }
        return manifest_load_fd(fd, ret, reterr_message);
}

static bool has_word(const char *list, const char *word) {
        size_t n = strlen(word);

        for (const char *p = list; p && (p = strstr(p, word)); p += n)
                if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
                        return true;
        return false;
}

/* Why the file system's device is not dm-verity with an allowed root hash; NULL when it is. */
const char *trust_dm_verity_failure(const TrustInput *in, char *buf, size_t size) {
        const Origin *o = in->origin;
        const DmTable *t = &o->dm;

        assert(in);

        if (o->backing == BACKING_NONE || o->backing == BACKING_FILE)
                snprintf(buf, size, "the %s file system is not on a block device", o->file.fstype);
        else if (!o->device_mapper)
                snprintf(buf, size, "%s is not a device-mapper device", o->device);
        else if (strv_length(in->root_hashes) == 0 && strv_length(in->cmdline_root_hashes) == 0)
                /* Its table is not read then (check_origin()). */
                snprintf(buf, size, "no RootHash= is set, and the kernel command line names none, for %s",
                         o->device);
        else if (t->error < 0)
                snprintf(buf, size, "%s's table cannot be read: %s", o->device,
                         t->error_detail ?: strerrordesc_np(-t->error) ?: "unknown error");
        else if (t->n_targets == 0)
                snprintf(buf, size, "%s has no table", o->device);
        else if (strcmp(t->target, "verity") != 0)
                snprintf(buf, size, "%s is %s, not verity", o->device, t->target);
        else if (t->n_targets > 1)
                snprintf(buf, size, "%s has %u targets, not one verity target", o->device, t->n_targets);
        else if (t->corrupted)
                snprintf(buf, size, "%s's verity target has found corrupted blocks", o->device);
        else if (t->ignore_corruption)
                snprintf(buf, size, "%s's verity target ignores corrupted blocks (ignore_corruption)",
                         o->device);
        else if (has_word(t->options, "check_at_most_once"))
                snprintf(buf, size,
                         "%s's verity target checks each block once only (check_at_most_once): a block "
                         "read again after the page cache dropped it is not verified",
                         o->device);
        else if (!strv_contains(in->root_hashes, t->root_hash) &&
                 !strv_contains(in->cmdline_root_hashes, t->root_hash))
                snprintf(buf, size, "%s's root hash %s is not allowed", o->device, t->root_hash);
        else
                return NULL;
        return buf;
}

static const char *fsverity_failure(const TrustInput *in, char *buf, size_t size) {
        const Origin *o = in->origin;

        if (!o->fsverity.enabled && o->fsverity.error == -EOPNOTSUPP)
                snprintf(buf, size, "the file has no fs-verity (%s has none)", o->file.fstype);
        else if (!o->fsverity.enabled && o->fsverity.error < 0 && o->fsverity.error != -ENODATA)
                snprintf(buf, size, "the file's fs-verity cannot be measured: %s",
                         strerrordesc_np(-o->fsverity.error) ?: "unknown error");
        else if (!o->fsverity.enabled)
                snprintf(buf, size, "the file has no fs-verity");
        else if (!strv_contains(in->fsverity_digests, o->fsverity.digest))
                snprintf(buf, size, "the file's fs-verity digest %s is not allowed", o->fsverity.digest);
        else
                return NULL;
        return buf;
}

int trust_verity(const TrustInput *in, bool *ret_fsverity, char **ret_reason) {
        char dm[512], fs[256];
        const char *a, *b;

        assert(ret_fsverity);

        *ret_reason = NULL;
        *ret_fsverity = false;
        a = trust_dm_verity_failure(in, dm, sizeof(dm));
        if (!a)
                return 1;
        b = fsverity_failure(in, fs, sizeof(fs));
        if (!b) {
                *ret_fsverity = true;
                return 1;
        }
        if (asprintf(ret_reason, "%s, and %s", a, b) < 0) {
                *ret_reason = NULL;
                return -ENOMEM;
        }
        return 0;
}

static const char *manifest_failure(ManifestMatch m) {
        switch (m) {
        case MANIFEST_MISMATCH:
                return "the file's SHA-256 is not the manifest's for";
        case MANIFEST_NO_ENTRY:
                return "the manifest has no entry for";
        case MANIFEST_UNAVAILABLE:
                return "no manifest to check against:";
        default:
                return "not checked:";
        }
}

void trust_decision_done(TrustDecision *d) {
        free(d->reason);
        *d = (TrustDecision) {};
}

/* Adds "what: why" to the list of reasons. */
static int add_reason(char **list, const char *what, const char *why) {
        char *n;

        if (asprintf(&n, "%s%s%s: %s", *list ?: "", *list ? "; " : "", what, why) < 0)
                return -ENOMEM;
        free(*list);
        *list = n;
        return 0;
}

static int trusted(TrustDecision *ret, Evidence e) {
        *ret = (TrustDecision) { .trusted = true, .evidence = e };
        return 0;
}

int trust_decide(const TrustInput *in, TrustDecision *ret) {
        _cleanup_free_ char *why = NULL, *ro = NULL, *manifest = NULL, *verity = NULL;
        TrustVerdict v;
        int r;

        assert(in);
        assert(ret);

        v = trust_check_file(&in->origin->file);
        if (v != TRUST_OK) {
                *ret = (TrustDecision) { .verdict = v, .reason = strdup(trust_verdict_to_string(v)) };
                return ret->reason ? 0 : -ENOMEM;
        }

        /* A requirement on top of the evidence, not a kind of it. */
        if (in->require_ima && !ima_is_signature(in->origin->ima.type)) {
                *ret = (TrustDecision) {};
                if (asprintf(&ret->reason,
                             "RequireIMASignature=yes: the file has no IMA signature (security.ima: %s)",
                             ima_type_to_string(in->origin->ima.type)) < 0) {
                        ret->reason = NULL;
                        return -ENOMEM;
                }
                return 0;
        }

        if (in->accepted & EVIDENCE_MASK(EVIDENCE_VERITY)) {
                bool fsverity;

                r = trust_verity(in, &fsverity, &verity);
                if (r < 0)
                        return r;
                if (r > 0) {
                        trusted(ret, EVIDENCE_VERITY);
                        ret->fsverity = fsverity;
                        return 0;
                }
                if (add_reason(&why, "verity", verity) < 0)
                        return -ENOMEM;
        }

        if (in->accepted & EVIDENCE_MASK(EVIDENCE_READ_ONLY)) {
                r = trust_read_only(in->origin, &ro);
                if (r < 0)
                        return r;
                if (r > 0)
                        return trusted(ret, EVIDENCE_READ_ONLY);
                if (add_reason(&why, "read-only", ro) < 0)
                        return -ENOMEM;
        }

        if (in->accepted & EVIDENCE_MASK(EVIDENCE_MANIFEST)) {
                const char *fstype = in->origin->file.fstype;

                /* Before any hashing: what a FUSE server or an NFS server hands us says nothing of what
                 * it hands the kernel. */
                if (!trust_manifest_fstype(fstype)) {
                        if (asprintf(&manifest,
                                     "file system type %s is not a local disk file system: the bytes "
                                     "hashed need not be the bytes the kernel reads",
                                     fstype[0] ? fstype : "(unknown)") < 0) {
                                manifest = NULL;
                                return -ENOMEM;
                        }
                } else if (in->manifest == MANIFEST_MATCH)
                        return trusted(ret, EVIDENCE_MANIFEST);
                else if (in->manifest == MANIFEST_NOT_CHECKED) {
                        *ret = (TrustDecision) { .needs_manifest = true };
                        return 0;
                } else if (asprintf(&manifest, "%s %s", manifest_failure(in->manifest),
                                    in->manifest_detail ?: "?") < 0) {
                        manifest = NULL;
                        return -ENOMEM;
                }
                if (add_reason(&why, "manifest", manifest) < 0)
                        return -ENOMEM;
        }

        if (in->accepted & EVIDENCE_MASK(EVIDENCE_OWNERSHIP))
                return trusted(ret, EVIDENCE_OWNERSHIP);

        *ret = (TrustDecision) { .verdict = TRUST_OK,
                                 .reason = why ? TAKE_PTR(why) : strdup("no evidence is accepted") };
        return ret->reason ? 0 : -ENOMEM;
}

const char *trust_open_error_to_string(int error) {
        switch (abs(error)) {
        case EXDEV:
                return "path leaves the trusted root (absolute or escaping symlink, '..', or a mount "
                       "crossing)";
        case ELOOP:
                return "path contains a magic link or a symlink loop";
        case ENXIO:
                /* What open() says of a socket, or of a device node with no driver behind it. */
                return verdict_table[TRUST_NOT_REGULAR];
        case ENOENT:
                return "module file is missing from the trusted root";
        case EACCES:
        case EPERM:
                return "module file cannot be opened (permission denied)";
        case ENOSYS:
                return "openat2() is not available: a kernel older than 5.6, or a seccomp filter (systemd's "
                       "RestrictSUIDSGID= blocks it)";
        default:
                return "module file cannot be opened";
        }
}


int trusted_root_new(const char *path, TrustedRoot **ret) {
        TrustedRoot *r;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        r->path = strdup(path);
        if (!r->path)
                return trusted_root_free(r), -ENOMEM;
        *ret = r;
        return 0;
}

static int pin_locked(TrustedRoot *r) {
        _cleanup_close_ int fd = -EBADF;
        char link[64], real[PATH_MAX];
        FileOrigin o;
        ssize_t n;
        int q;

        if (r->fd >= 0)
                return 0;

        fd = open(r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();

        q = file_origin_from_fd(fd, &o);
        if (q < 0)
                return q;

        /* The manifest's paths are below the directory itself, wherever the path led. */
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, real, sizeof(real) - 1);
        if (n < 0)
                return negative_errno();
        real[n] = '\0';
        free(r->real_path);
        r->real_path = strdup(real);
        if (!r->real_path)
                return -ENOMEM;

        r->mount_id = o.mount_id;
        r->fd = TAKE_FD(fd);
        return 0;
}

int trusted_root_pin(TrustedRoot *r, TrustedRootVerify verify, void *userdata) {
        bool fresh;
        int q;

        assert(r);

        pthread_mutex_lock(&r->lock);
        fresh = r->fd < 0;
        q = pin_locked(r);
        if (q >= 0 && fresh && verify) {
                q = verify(r, userdata);
                if (q < 0)      /* not checked: not pinned either, so the next load checks it */
                        r->fd = safe_close(r->fd);
        }
        pthread_mutex_unlock(&r->lock);
        return q;
}

void trusted_root_pinned_done(TrustedRootPinned *p) {
        free(p->identity);
        free(p->recorded);
        *p = (TrustedRootPinned) {};
}

void trusted_root_take_pinned(TrustedRoot *r, TrustedRootPinned *ret) {
        assert(r);
        assert(ret);

        pthread_mutex_lock(&r->lock);
        *ret = r->pinned;
        r->pinned = (TrustedRootPinned) {};
        pthread_mutex_unlock(&r->lock);
}

TrustedRoot *trusted_root_free(TrustedRoot *r) {
        if (!r)
                return NULL;
        safe_close(r->fd);
        pthread_mutex_destroy(&r->lock);
        free(r->path);
        free(r->real_path);
        free(r->changed);
        trusted_root_pinned_done(&r->pinned);
        strv_free(r->root_hashes);
        strv_free(r->fsverity_digests);
        signer_rule_done(&r->signer);
        manifest_free(r->manifest);
        free(r->manifest_error);
        free(r);
        return NULL;
}

int trusted_root_open_file(const TrustedRoot *r, const char *relpath) {
        assert(r);

        struct open_how how = {
                .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        long fd;

        fd = syscall(SYS_openat2, r->fd, relpath, &how, sizeof(how));
        if (fd < 0)
                return negative_errno();
        return (int) fd;
}
