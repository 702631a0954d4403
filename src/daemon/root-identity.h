/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "trust.h"

/* What a trusted root is: its file system's device, that device's instance (diskseq: a device made again
 * under the same number has another), the file system type, and the verity root hash when the device is
 * dm-verity. Recorded when the root is first pinned in a boot, in a sealed memfd kept in PID 1's fd store
 * (not in /run, which processes without CAP_SYS_MODULE can write), and checked at each later pin (after an
 * idle exit or a restart): a mount over the path, another image on the same loop device, or another verity
 * table all change it. */
typedef struct RootIdentity {
        unsigned major, minor;
        uint64_t diskseq;       /* 0: the device has none (tmpfs, an old kernel) */
        char fstype[32];
        char root_hash[129];    /* "": not dm-verity */
        bool root_hash_unknown; /* a device-mapper device whose table the prober could not give */
} RootIdentity;

/* Pure. "dev=254:0 diskseq=5 fstype=erofs roothash=HEX", as recorded (roothash only when known). */
void root_identity_format(const RootIdentity *id, char *buf, size_t size);
/* Pure. Returns 0 or -EBADMSG. */
int root_identity_parse(const char *s, RootIdentity *ret);
/* Pure. The same root: device, instance, type and root hash equal, and both known. */
bool root_identity_equal(const RootIdentity *a, const RootIdentity *b);

/* The identity of the pinned directory dirfd (asking the prober at probe_address for a
 * device-mapper device). Returns 0 or a negative errno. */
int root_identity_of(int dirfd, const char *probe_address, RootIdentity *ret);

/* Takes the records kept in the fd store, when store (there is one); without one nothing is kept
 * across restarts. Returns 0, -EBADFD (what is stored is not a sealed record: nothing is taken),
 * -errno. Called at start, before any pin. */
int root_identity_store_open(bool store);

/* Compares id with what the records say for path, and records id when nothing is recorded. Returns
 * 0 (recorded now), 1 (as recorded), -ESTALE (changed: *ret_recorded is what was recorded; the record
 * is kept), or another negative errno (the records cannot be read or written). Safe from several
 * threads. */
int root_identity_check(const char *path, const RootIdentity *id, RootIdentity *ret_recorded);

/* Everything above for a root that was just pinned: its identity is found, checked and recorded, and left in
 * r->pinned for the main thread to journal (journal_record_root_pins()); when it changed, r->changed says
 * how, and nothing beneath it is loaded. Without a store, nothing is kept across restarts (said once, at
 * start). Returns 0 or -ENOMEM. */
int root_identity_verify(TrustedRoot *r, const char *probe_address);
