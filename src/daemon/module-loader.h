/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "guard.h"
#include "module-result.h"
#include "resolver.h"
#include "trust.h"

typedef struct LoadContext {
        TrustedRoot *const *roots;      /* each with what it accepts */
        size_t n_roots;
        Compression kernel_compression;
        char *const *cmdline_root_hashes; /* roothash= and usrhash= of the kernel command line */
        const char *probe_address;      /* where modgate-probe answers */
        Guard *guard;                   /* approves each file for the kernel; NULL: none */
        const SignerRule *source_signers; /* [Source] signer rules, by RequestSource; NULL: none */
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
