/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"
#include "manifest.h"
#include "origin.h"
#include "signer.h"

/* What a fresh pin found about the root's identity (root_identity_verify()), kept until the main
 * thread records it: roots are pinned on worker threads too, and records are written by the main
 * thread alone. */
typedef struct TrustedRootPinned {
        char *identity;         /* as root_identity_format() writes it; NULL: nothing to record */
        char *recorded;         /* what its first pin this boot recorded, or "unreadable"; NULL: none */
        bool changed;           /* identity is not what was recorded: refused */
} TrustedRootPinned;

void trusted_root_pinned_done(TrustedRootPinned *p);

/* A directory the daemon loads modules from, pinned as an fd at start so that later renames or
 * mounts over the path do not change what is trusted; one that is not there at start is pinned when
 * a module beneath it is first loaded. With what it accepts as evidence. */
typedef struct TrustedRoot {
        char *path;
        pthread_mutex_t lock;   /* held while pinning: workers may ask at the same time */
        char *real_path;        /* where the pinned directory is, as the kernel names it */
        int fd;                 /* -EBADF until pinned */
        uint64_t mount_id;
        char *changed;          /* not what it was at its first pin this boot, and how: refused */
        TrustedRootPinned pinned; /* under lock, until trusted_root_take_pinned() */

        unsigned evidence;      /* EVIDENCE_MASK()s */
        char **root_hashes;     /* dm-verity root hashes allowed */
        char **fsverity_digests;
        bool require_ima;
        SignerRule signer;      /* RequireSignature=, AllowSigner= */
        Manifest *manifest;     /* when manifest evidence is accepted and it loaded */
        char *manifest_error;   /* otherwise why not */
} TrustedRoot;

typedef enum TrustVerdict {
        TRUST_OK,
        TRUST_NOT_REGULAR,
        TRUST_NOT_ROOT_OWNED,
        TRUST_WRITABLE_BY_OTHERS,
        _TRUST_VERDICT_MAX,
} TrustVerdict;

/* Pure: the checks on the file itself, which every kind of evidence needs: a regular file, owned by
 * root, not writable by group or others. */
TrustVerdict trust_check_file(const FileOrigin *o);
const char *trust_verdict_to_string(TrustVerdict v);

/* The kinds of evidence of origin a trusted root may accept, any one of which suffices. */
typedef enum Evidence {
        EVIDENCE_VERITY,        /* dm-verity with an allowlisted root hash, or fs-verity */
        EVIDENCE_READ_ONLY,     /* read-only all the way down */
        EVIDENCE_MANIFEST,      /* the bytes' SHA-256 is the one the module tree's manifest lists */
        EVIDENCE_OWNERSHIP,     /* the file checks alone: unverified */
        _EVIDENCE_MAX,
        _EVIDENCE_INVALID = -EINVAL,
} Evidence;

#define EVIDENCE_MASK(e) (1u << (e))
#define EVIDENCE_DEFAULT (EVIDENCE_MASK(EVIDENCE_VERITY) | EVIDENCE_MASK(EVIDENCE_READ_ONLY) | \
                          EVIDENCE_MASK(EVIDENCE_MANIFEST))

const char *evidence_to_string(Evidence e);
Evidence evidence_from_string(const char *s);   /* -EINVAL when unknown */
/* The kinds in mask, in the order of the enum, joined by sep ("" for none). */
int evidence_mask_to_string(unsigned mask, const char *sep, char **ret);

/* Pure: whether read-only evidence holds for the stack o: a file system type that is never network,
 * FUSE, memory or overlay, a read-only superblock on a read-only block device, and for a loop
 * device or a file-backed file system a backing file that passes the same checks in turn. Returns
 * 1, or 0 with *ret_reason saying what failed and the value seen, or -ENOMEM. */
int trust_read_only(const Origin *o, char **ret_reason);

/* Pure: whether manifest evidence may hold on a file system of this type: a local disk, or tmpfs,
 * where the bytes read from a fd are the bytes the kernel reads from it next, unless a writer of
 * the file changes them in between. */
bool trust_manifest_fstype(const char *fstype);

/* Loads the manifest at path (never through a symlink) as manifest_load_fd() does, when it is on a
 * file system trust_manifest_fstype() allows; otherwise -EPERM with *reterr_message naming the
 * type. An open that fails returns its -errno, with no message. */
int trust_manifest_load(const char *path, Manifest **ret, char **reterr_message);

/* What the loader found when it compared the file's bytes with the manifest. */
typedef enum ManifestMatch {
        MANIFEST_NOT_CHECKED,   /* not accepted, or another kind of evidence held first */
        MANIFEST_MATCH,
        MANIFEST_MISMATCH,
        MANIFEST_NO_ENTRY,
        MANIFEST_UNAVAILABLE,   /* no manifest (missing, refused, unreadable), or the bytes unreadable */
        _MANIFEST_MATCH_MAX,
} ManifestMatch;

typedef struct TrustInput {
        const Origin *origin;           /* with its dm table asked for, where it is device-mapper */
        unsigned accepted;              /* EVIDENCE_MASK()s */
        char *const *root_hashes;       /* dm-verity root hashes the root allows */
        char *const *cmdline_root_hashes; /* and those the kernel command line names */
        char *const *fsverity_digests;  /* fs-verity digests the root allows */
        bool require_ima;               /* the file must carry an IMA signature */
        ManifestMatch manifest;
        const char *manifest_detail;    /* the path in the manifest, or why there is none */
} TrustInput;

typedef struct TrustDecision {
        TrustVerdict verdict;           /* of the file checks; TRUST_OK when they passed */
        bool trusted;
        Evidence evidence;              /* what held, when trusted */
        bool fsverity;                  /* verity held by the file's fs-verity, not its device */
        bool needs_manifest;            /* not trusted yet: decide again with the manifest compared */
        char *reason;                   /* when not trusted: every accepted kind and why it failed */
} TrustDecision;

void trust_decision_done(TrustDecision *d);

/* Pure: the decision on the evidence collected for one file: the file checks, the IMA signature
 * when one is required, then verity, read-only, manifest and ownership, cheapest first. With
 * in->manifest MANIFEST_NOT_CHECKED, when only the manifest can still vouch, the decision is "not
 * trusted" with needs_manifest set: the caller hashes the bytes and decides again. Returns 0 (the
 * decision is in *ret) or -ENOMEM. */
int trust_decide(const TrustInput *in, TrustDecision *ret);

/* Pure: whether verity evidence holds for o (1), or not (0, with *ret_reason saying why for both
 * the device and the file's own fs-verity); -ENOMEM. ret_fsverity says which held. */
int trust_verity(const TrustInput *in, bool *ret_fsverity, char **ret_reason);

/* Pure: why the file system's device is not dm-verity with an allowed root hash, written to buf;
 * NULL when it is. */
const char *trust_dm_verity_failure(const TrustInput *in, char *buf, size_t size);

/* The root's path only; pinned by trusted_root_pin(). */
int trusted_root_new(const char *path, TrustedRoot **ret);
TrustedRoot *trusted_root_free(TrustedRoot *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(TrustedRoot *, trusted_root_free);

/* Checks a root that was just pinned (root_identity_verify()); returns 0 or -ENOMEM. */
typedef int (*TrustedRootVerify)(TrustedRoot *r, void *userdata);

/* Pins the root's directory, unless it is pinned already, and has verify (when not NULL) check it,
 * under the root's lock. Safe from several threads. Returns 0, or the negative errno of opening it
 * (-ENOENT: not there yet). */
int trusted_root_pin(TrustedRoot *r, TrustedRootVerify verify, void *userdata);

/* Takes what the last fresh pin found, under the root's lock: *ret is what is left to record (its
 * identity NULL when nothing is). Safe from several threads. */
void trusted_root_take_pinned(TrustedRoot *r, TrustedRootPinned *ret);

/* Opens relpath beneath the root with openat2(), never leaving it: -EXDEV when the path or a symlink
 * in it leads outside or across a mount, -ELOOP for magic links and loops, -ENOENT when missing. */
int trusted_root_open_file(const TrustedRoot *r, const char *relpath);

/* Why an open beneath the root failed, in words, for the errors trusted_root_open_file() names. */
const char *trust_open_error_to_string(int error);
