/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"
#include "origin.h"

/* A directory the daemon loads modules from, pinned as an fd at start so that later renames or
 * mounts over the path do not change what is trusted. */
typedef struct TrustedRoot {
        char *path;
        char *real_path;        /* where the pinned directory is, as the kernel names it */
        int fd;
        uint64_t mount_id;
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
        const Origin *origin;
        unsigned accepted;              /* EVIDENCE_MASK()s */
        ManifestMatch manifest;
        const char *manifest_detail;    /* the path in the manifest, or why there is none */
} TrustInput;

typedef struct TrustDecision {
        TrustVerdict verdict;           /* of the file checks; TRUST_OK when they passed */
        bool trusted;
        Evidence evidence;              /* what held, when trusted */
        char *reason;                   /* when not trusted: every accepted kind and why it failed */
} TrustDecision;

void trust_decision_done(TrustDecision *d);

/* Pure: the decision on the evidence collected for one file. Returns 0 (the decision is in *ret)
 * or -ENOMEM. */
int trust_decide(const TrustInput *in, TrustDecision *ret);

/* Whether the caller must compare the bytes with the manifest: manifest evidence is accepted, the
 * file checks pass and neither verity nor read-only evidence holds. */
bool trust_needs_manifest(const Origin *o, unsigned accepted);

int trusted_root_new(const char *path, TrustedRoot **ret);
TrustedRoot *trusted_root_free(TrustedRoot *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(TrustedRoot *, trusted_root_free);

/* Opens relpath beneath the root with openat2(), never leaving it: -EXDEV when the path or a symlink
 * in it leads outside or across a mount, -ELOOP for magic links and loops, -ENOENT when missing. */
int trusted_root_open_file(const TrustedRoot *r, const char *relpath);

/* Why an open beneath the root failed, in words, for the errors trusted_root_open_file() names. */
const char *trust_open_error_to_string(int error);
