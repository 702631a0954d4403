/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "compression.h"
#include "manifest.h"
#include "modinfo.h"
#include "resolver.h"
#include "sha256.h"
#include "trust.h"

typedef enum Outcome {
        OUTCOME_LOADED,
        OUTCOME_ALREADY_LOADED,
        OUTCOME_BUILTIN,
        OUTCOME_FAILED,
        OUTCOME_DENIED,
        _OUTCOME_MAX,
} Outcome;

const char *outcome_to_string(Outcome o);

static inline bool outcome_is_success(Outcome o) {
        return o == OUTCOME_LOADED || o == OUTCOME_ALREADY_LOADED || o == OUTCOME_BUILTIN;
}

/* The decision on one module. name, path and parameters are set when the job is made; the rest by
 * the load. */
typedef struct ModuleResult {
        char *name;
        char *path;
        char *parameters;       /* handed to finit_module(); NULL for none */
        Role role;
        Outcome outcome;
        char *reason;           /* why it was not loaded; NULL when it was */
        char *command;          /* the modprobe.d install command that was refused, if that was why */
        char *alias_key;        /* requested through an alias: the request's key, which the file's alias
                                 * patterns are matched against (ModInfo.alias) */
        char *required_by;      /* the modules of the plan that need it, "vxlan, geneve"; NULL when none */
        char *options_source;   /* where the options in parameters were written: "FILE:LINE, ..." */
        int error;              /* positive errno of the failure, 0 if none */
        bool cached;            /* the outcome is a remembered denial */
        bool have_origin;       /* the file was opened and origin describes it */
        FileOrigin origin;
        char *backing;          /* what the file system is stored on, e.g. "loop0 <- /srv/tree.erofs" */
        bool trusted;           /* the origin check passed, with this evidence: */
        Evidence evidence;
        bool fsverity;          /* verity evidence: the file's own fs-verity, not its device's */
        char *dm_device;        /* the file system's device, when it is device-mapper: "dm-3" */
        uint64_t diskseq;       /* of the file system's block device; 0 when unknown */
        char *dm_target;        /* its table's first target type, as the kernel says */
        char *verity_root_hash; /* a verity target's root hash */
        char *fsverity_digest;  /* the file's fs-verity digest, "sha256:..." */
        Ima ima;                /* the file's security.ima */
        bool have_sha256;       /* the bytes were hashed: every regular file that was opened */
        uint8_t sha256[SHA256_DIGEST_SIZE];
        bool have_modinfo;      /* the file was read as a module (only once its origin passed): */
        ModInfo modinfo;        /* its name and its signature, as the file says */
        Compression compression;
        unsigned flags;         /* finit_module() flags used */
        uint64_t duration_usec; /* every check of the file (those made while it waited too) and its init */
        /* The stages of the request, for the record and modgatectl plot: from the job's making until
         * a worker began its load (what it needed, a free worker), the checks of the load itself, and
         * finit_module() until it returned. Each is 0 when that stage did not happen. */
        uint64_t wait_usec, check_usec, init_usec;
} ModuleResult;

void module_result_done(ModuleResult *r);
int module_result_set(ModuleResult *r, Outcome o, int error, const char *fmt, ...) _printf_(4, 5);
int module_result_setv(ModuleResult *r, Outcome o, int error, const char *fmt, va_list ap) _printf_(4, 0);

typedef struct LoadContext {
        TrustedRoot *const *roots;      /* each with what it accepts */
        size_t n_roots;
        Compression kernel_compression;
        char *const *cmdline_root_hashes; /* roothash= and usrhash= of the kernel command line */
        const char *probe_address;      /* where modgate-probe answers */
} LoadContext;

/* Checks a root just pinned against its identity recorded at its first pin (a TrustedRootVerify
 * for trusted_root_pin(), with the LoadContext as userdata). */
int loader_verify_root(TrustedRoot *r, void *userdata);

/* What a check of a module's file made before the modules it needs were live found: the SHA-256 of
 * its bytes then, and the module's name and signature read from them. */
typedef struct LoaderPrepared {
        bool checked;           /* every check passed, and this holds what they found */
        uint8_t sha256[SHA256_DIGEST_SIZE];
        ModInfo modinfo;
        uint64_t usec;          /* what the checks took */
} LoaderPrepared;

void loader_prepared_done(LoaderPrepared *p);

/* Every check of loader_load() without the load, on the file r->path names now; *ret holds what
 * they found when they all passed, and is left as it was otherwise. r is left as it was: nothing
 * here is a decision, the load checks again. Runs on a worker thread. Returns 0, or -ENOMEM. */
int loader_prepare(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ret);

/* Opens r->path beneath the trusted root, checks the open fd and hands that fd to finit_module().
 * With ahead (from loader_prepare(); may be NULL or not checked), every check is made all the
 * same, on the file opened now, but its name and signature are taken from ahead, not read again,
 * when its bytes hash the same as then (ahead's ModInfo is taken). Runs on a worker thread:
 * touches nothing but r, ahead and read-only ctx. Returns 0, or -ENOMEM. */
int loader_load(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ahead);

/* The same checks on the file as loader_load(), without loading it: for Explain. r has a reason when
 * one failed. Runs on any thread. Returns 0, or -ENOMEM. */
int loader_check(const LoadContext *ctx, ModuleResult *r);

uint64_t now_usec(void);
/* CLOCK_REALTIME in µs: when, for records and events. */
uint64_t realtime_usec(void);
