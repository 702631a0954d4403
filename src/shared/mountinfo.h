/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>

/* One line of /proc/self/mountinfo (proc(5)). Used where statmount(2) is not available. */
typedef struct MountInfo {
        int mount_id;
        int parent_id;
        unsigned major;
        unsigned minor;
        char *mount_point;
        char *fstype;
        char *source;
        bool mount_ro;  /* the per-mount flag: a read-only bind mount sets it */
        bool sb_ro;     /* the superblock flag: the filesystem itself is read-only */
} MountInfo;

void mount_info_done(MountInfo *m);

/* Returns 0, or -EBADMSG when the line is not in mountinfo form, or -ENOMEM. */
int mount_info_parse_line(const char *line, MountInfo *ret);

/* Scans f for mount_id. Returns 0, -ENOENT when it is not there, or a parse error. */
int mount_info_find(FILE *f, int mount_id, MountInfo *ret);

/* Whether a comma-separated option string contains the option "ro". */
bool mount_options_read_only(const char *opts);
