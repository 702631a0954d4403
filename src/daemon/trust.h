/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"

/* A directory the daemon loads modules from, pinned as an fd at start so that later renames or
 * mounts over the path do not change what is trusted. */
typedef struct TrustedRoot {
        char *path;
        int fd;
        uint64_t mount_id;
} TrustedRoot;

/* Where an open module file lives: everything the trust decision and the journal record need. */
typedef struct FileOrigin {
        dev_t dev;
        ino_t ino;
        uid_t uid;
        mode_t mode;
        uint64_t mount_id;      /* unique mount id where the kernel has one, else the mountinfo id */
        bool mount_id_unique;
        char fstype[32];
        bool mount_ro;
        bool sb_ro;
} FileOrigin;

typedef enum TrustVerdict {
        TRUST_OK,
        TRUST_NOT_REGULAR,
        TRUST_NOT_ROOT_OWNED,
        TRUST_WRITABLE_BY_OTHERS,
        TRUST_WRITABLE_SUPERBLOCK,
        _TRUST_VERDICT_MAX,
} TrustVerdict;

/* Pure: the decision on an origin that has already been read off an open fd. */
TrustVerdict trust_evaluate(const FileOrigin *o, bool require_superblock_ro);
const char *trust_verdict_to_string(TrustVerdict v);

int trusted_root_new(const char *path, TrustedRoot **ret);
TrustedRoot *trusted_root_free(TrustedRoot *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(TrustedRoot *, trusted_root_free);

/* Opens relpath beneath the root with openat2(), never leaving it: -EXDEV when the path or a symlink
 * in it leads outside or across a mount, -ELOOP for magic links and loops, -ENOENT when missing. */
int trusted_root_open_file(const TrustedRoot *r, const char *relpath);

/* Reads the identity of fd and of the mount it is on. */
int file_origin_from_fd(int fd, FileOrigin *ret);

/* Why an open beneath the root failed, in words, for the errors trusted_root_open_file() names. */
const char *trust_open_error_to_string(int error);
