/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A dm-verity target's table line, as the kernel reports it (DM_TABLE_STATUS with
 * DM_STATUS_TABLE_FLAG), without the target type:
 *   VERSION DATA_DEV HASH_DEV DATA_BLOCK_SIZE HASH_BLOCK_SIZE DATA_BLOCKS HASH_START ALGORITHM
 *   ROOT_HASH SALT [N_OPTIONAL OPTIONAL...]
 * Devices are "MAJOR:MINOR", sizes and counts decimal, the salt "-" for none. */
typedef struct DmVerityTable {
        unsigned version;
        char data_device[32];
        char hash_device[32];
        char algorithm[32];
        char root_hash[129];    /* lowercase hex */
        char *options;          /* the optional arguments, space-separated; NULL for none */
        bool ignore_corruption;
} DmVerityTable;

void dm_verity_table_done(DmVerityTable *t);

/* A root hash as the kernel writes it: 2 to 128 lowercase hex digits, whole bytes. */
bool dm_verity_root_hash_is_valid(const char *s);

/* Returns 0, -EBADMSG for a line that is not of this form, or -ENOMEM. */
int dm_verity_table_parse(const char *line, DmVerityTable *ret);

/* A verity target's status line: 'V' (verified so far) or 'C' (a corrupt block was seen), perhaps
 * followed by more. Returns 1 for corrupted, 0 for not, -EBADMSG otherwise. */
int dm_verity_status_corrupted(const char *line);

/* The kernel's encoding of a device number in struct dm_ioctl's dev field. */
unsigned long long dm_encode_dev(unsigned major, unsigned minor);
