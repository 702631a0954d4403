/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "macro.h"
#include "mountinfo.h"
#include "trust.h"

/* The superblock flag statmount() reports, the same bit as MS_RDONLY. */
#ifndef SB_RDONLY
#define SB_RDONLY 1
#endif

static const char *const verdict_table[_TRUST_VERDICT_MAX] = {
        [TRUST_OK] = "trusted",
        [TRUST_NOT_REGULAR] = "not a regular file",
        [TRUST_NOT_ROOT_OWNED] = "file is not owned by root",
        [TRUST_WRITABLE_BY_OTHERS] = "file is writable by group or others",
        [TRUST_WRITABLE_SUPERBLOCK] = "filesystem is writable (superblock not read-only)",
};

const char *trust_verdict_to_string(TrustVerdict v) {
        return v >= 0 && v < _TRUST_VERDICT_MAX ? verdict_table[v] : NULL;
}

TrustVerdict trust_evaluate(const FileOrigin *o, bool require_superblock_ro) {
        if (!S_ISREG(o->mode))
                return TRUST_NOT_REGULAR;
        if (o->uid != 0)
                return TRUST_NOT_ROOT_OWNED;
        if (o->mode & (S_IWGRP | S_IWOTH))
                return TRUST_WRITABLE_BY_OTHERS;
        /* A read-only mount of a writable filesystem (a bind mount, a ProtectSystem= sandbox) can
         * still be changed through another mount: only the superblock flag counts. */
        if (require_superblock_ro && !o->sb_ro)
                return TRUST_WRITABLE_SUPERBLOCK;
        return TRUST_OK;
}

const char *trust_open_error_to_string(int error) {
        switch (abs(error)) {
        case EXDEV:
                return "path leaves the trusted root (absolute or escaping symlink, '..', or a mount crossing)";
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

static int statmount_origin(uint64_t mount_id, FileOrigin *o) {
        struct mnt_id_req req = {
                .size = sizeof(req),
                .mnt_id = mount_id,
                .param = STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC | STATMOUNT_FS_TYPE,
        };
        _Alignas(struct statmount) char buf[4096];
        struct statmount *sm = (struct statmount *) buf;

        if (syscall(SYS_statmount, &req, sm, sizeof(buf), 0) < 0)
                return negative_errno();

        if (!(sm->mask & STATMOUNT_SB_BASIC) || !(sm->mask & STATMOUNT_MNT_BASIC))
                return -EOPNOTSUPP;

        o->sb_ro = sm->sb_flags & SB_RDONLY;
        o->mount_ro = sm->mnt_attr & MOUNT_ATTR_RDONLY;
        if (sm->mask & STATMOUNT_FS_TYPE && sm->fs_type < sizeof(buf) - sizeof(*sm))
                snprintf(o->fstype, sizeof(o->fstype), "%s", sm->str + sm->fs_type);
        return 0;
}

static int mountinfo_origin(int mount_id, FileOrigin *o) {
        _cleanup_(mount_info_done) MountInfo m = {};
        _cleanup_(fclosep) FILE *f = NULL;
        int r;

        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return negative_errno();
        r = mount_info_find(f, mount_id, &m);
        if (r < 0)
                return r;

        o->sb_ro = m.sb_ro;
        o->mount_ro = m.mount_ro;
        snprintf(o->fstype, sizeof(o->fstype), "%s", m.fstype);
        return 0;
}

int file_origin_from_fd(int fd, FileOrigin *ret) {
        struct statx sx;
        FileOrigin o = {};
        int r;

        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO | STATX_MNT_ID_UNIQUE, &sx) < 0)
                return negative_errno();

        o.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        o.ino = sx.stx_ino;
        o.uid = sx.stx_uid;
        o.mode = sx.stx_mode;

        if (sx.stx_mask & STATX_MNT_ID_UNIQUE) {
                o.mount_id = sx.stx_mnt_id;
                o.mount_id_unique = true;
                r = statmount_origin(o.mount_id, &o);
                if (r >= 0) {
                        *ret = o;
                        return 0;
                }
                if (r != -ENOSYS && r != -EOPNOTSUPP)
                        return r;
        }

        /* Older kernels: the reusable mount id, looked up in mountinfo. */
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &sx) < 0)
                return negative_errno();
        if (!(sx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        o.mount_id = sx.stx_mnt_id;
        o.mount_id_unique = false;
        r = mountinfo_origin((int) sx.stx_mnt_id, &o);
        if (r < 0)
                return r;

        *ret = o;
        return 0;
}

int trusted_root_new(const char *path, TrustedRoot **ret) {
        _cleanup_(trusted_root_freep) TrustedRoot *r = NULL;
        FileOrigin o;
        int q;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = -EBADF;

        r->path = strdup(path);
        if (!r->path)
                return -ENOMEM;

        r->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->fd < 0)
                return negative_errno();

        q = file_origin_from_fd(r->fd, &o);
        if (q < 0)
                return q;
        r->mount_id = o.mount_id;

        *ret = TAKE_PTR(r);
        return 0;
}

TrustedRoot *trusted_root_free(TrustedRoot *r) {
        if (!r)
                return NULL;
        safe_close(r->fd);
        free(r->path);
        free(r);
        return NULL;
}

int trusted_root_open_file(const TrustedRoot *r, const char *relpath) {
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
