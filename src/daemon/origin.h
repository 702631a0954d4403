/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"

/* Where an open file lives: the file, its mount and its superblock, read off the fd. */
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
        char source[256];       /* the mount's source: a device, a file, or a word such as "tmpfs" */
} FileOrigin;

/* What a filesystem is stored on. */
typedef enum Backing {
        BACKING_NONE,           /* no device at all: tmpfs, procfs, overlay, network file systems */
        BACKING_BLOCK,          /* a block device: a disk, a partition, a device-mapper device */
        BACKING_LOOP,           /* a loop device, which reads a file */
        BACKING_FILE,           /* a file itself (erofs mounted straight from a file) */
        _BACKING_MAX,
} Backing;

const char *backing_to_string(Backing b);

#define ORIGIN_DEPTH_MAX 8

/* What the kernel's device-mapper table says of a device (the prober reads it: it needs
 * CAP_SYS_ADMIN, which the daemon never has). The name and uuid are what userspace chose. */
typedef struct DmTable {
        int error;              /* 0, or the negative errno of asking (then only error_detail is set) */
        char *error_detail;     /* why the prober could not answer, in words */
        char name[128];
        char uuid[129];
        unsigned n_targets;
        char target[16];        /* the first target's type: "verity", "linear", "crypt", ... */
        /* A verity target: */
        char root_hash[129];    /* lowercase hex */
        char algorithm[32];
        char *options;          /* its optional arguments, space-separated; NULL for none */
        bool ignore_corruption; /* corrupt blocks are logged, not refused */
        bool corrupted;         /* the status says it has seen a corrupt block */
} DmTable;

void dm_table_done(DmTable *t);

/* A file's own fs-verity (FS_IOC_MEASURE_VERITY on the fd). */
typedef struct FsVerity {
        bool enabled;           /* the file has fs-verity, with this digest: */
        int error;              /* when not: -ENODATA (none), -EOPNOTSUPP (the fs cannot have it), ... */
        char digest[8 + 128 + 1]; /* "sha256:" and lowercase hex, as `fsverity measure` prints it */
} FsVerity;

/* A file's IMA extended attribute (security.ima), which the kernel verifies; recorded, not verified. */
typedef enum ImaType {
        IMA_NONE,               /* no security.ima */
        IMA_DIGEST,             /* a hash only (types 1 and 4): no signature */
        IMA_SIGNATURE,          /* a signature (type 3, version 2) */
        IMA_VERITY_SIGNATURE,   /* a signature of the fs-verity digest (type 6) */
        IMA_UNKNOWN,            /* something else, or malformed */
        _IMA_TYPE_MAX,
} ImaType;

typedef struct Ima {
        ImaType type;
        char hash_algorithm[16];
        uint32_t key_id;        /* of a signature: the last four bytes of the key's identifier */
} Ima;

const char *ima_type_to_string(ImaType t);
static inline bool ima_is_signature(ImaType t) {
        return t == IMA_SIGNATURE || t == IMA_VERITY_SIGNATURE;
}

/* Pure: security.ima's bytes (n of them) decoded. */
void ima_parse(const uint8_t *value, size_t n, Ima *ret);

/* The evidence of origin for a file, collected from its fd and from what lies below its filesystem,
 * layer by layer: a loop device's or a file-backed filesystem's backing file has an Origin of its
 * own, collected the same way from a fd opened on it. Collected by origin_collect(), judged by
 * trust.c, which does no I/O. */
typedef struct Origin Origin;
struct Origin {
        FileOrigin file;
        Backing backing;
        char device[32];        /* the block device's kernel name: "vda1", "loop0", "dm-3" */
        dev_t device_dev;
        bool device_ro;         /* the block device is read-only, and so is every device below it */
        char device_writable[32]; /* when not: the first writable device in the stack */
        uint64_t diskseq;       /* the block device's instance (0: unknown): a re-created one has another */
        bool device_mapper;     /* the block device is a device-mapper device; then: */
        DmTable dm;             /* filled in by the caller, who asks the prober */
        char *backing_path;     /* BACKING_LOOP, BACKING_FILE: the file, as the kernel names it */
        /* BACKING_LOOP: the loop device (the disk, for a partition of one) and the file it reads, by
         * device and inode as the kernel holds it; the path above is only a name to open it by. */
        dev_t loop_dev;
        uint64_t loop_diskseq;
        bool backing_known;
        dev_t backing_dev;
        ino_t backing_ino;
        char *backing_unknown;  /* when not known: why, in words */
        Origin *below;          /* its origin, or NULL when it could not be opened (below_error) */
        int below_error;        /* negative errno */
        char *below_detail;     /* why there is no below, in words where an errno does not say it */
        /* The file itself (the outermost layer only): */
        FsVerity fsverity;
        Ima ima;
};

Origin *origin_free(Origin *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Origin *, origin_free);

/* Reads the identity of fd and of the mount it is on. */
int file_origin_from_fd(int fd, FileOrigin *ret);

/* Collects the whole stack below fd. Fails only for fd itself (its identity cannot be read) or for
 * lack of memory; what cannot be read further down is recorded in the layer where it stopped. A loop
 * device's backing file is identified where the daemon may open the device; where it may not
 * (PrivateDevices=yes), backing_known stays false for the caller to ask the prober. */
int origin_collect(int fd, Origin **ret);

/* Keeps a loop device's backing file as evidence only when it is the file the loop device reads:
 * the file opened by path must have the device and inode the kernel holds. Otherwise below is
 * dropped, and below_detail says why. Returns 0 or -ENOMEM. */
/* Whether o is a loop device whose file the prober must name (this process could not open the
 * device): probe_loop_backing() asks for such layers. */
bool origin_loop_needs_probe(const Origin *o);
int origin_verify_backing(Origin *o);
