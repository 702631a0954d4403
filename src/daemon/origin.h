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
        char *backing_path;     /* BACKING_LOOP, BACKING_FILE: the file, as the kernel names it */
        Origin *below;          /* its origin, or NULL when it could not be opened (below_error) */
        int below_error;        /* negative errno */
};

Origin *origin_free(Origin *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Origin *, origin_free);

/* Reads the identity of fd and of the mount it is on. */
int file_origin_from_fd(int fd, FileOrigin *ret);

/* Collects the whole stack below fd. Fails only for fd itself (its identity cannot be read) or for
 * lack of memory; what cannot be read further down is recorded in the layer where it stopped. */
int origin_collect(int fd, Origin **ret);
