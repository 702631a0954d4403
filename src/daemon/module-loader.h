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

/* What the checks made off a load's path found. Ahead of it, while the modules it needs were not
 * live: the SHA-256 of its bytes then, and the module's name and signature read from them. After it,
 * where the name was checked against the file's name (ModuleResult.name_from_path): the loaded file,
 * whose .modinfo loader_read_after() reads for the record. */
typedef struct LoaderPrepared {
        bool checked;           /* every check passed, and this holds what they found */
        uint8_t sha256[SHA256_DIGEST_SIZE];
        ModInfo modinfo;
        uint64_t usec;          /* what the checks took */

        bool read_after;        /* after_fd is the file handed to finit_module(), still to be read */
        int after_fd;
        bool have_after;        /* read: after (or after_error) holds what it said */
        ModInfo after;
        int after_error;
} LoaderPrepared;

void loader_prepared_done(LoaderPrepared *p);

/* Reads the .modinfo of the file loader_load() left in p (read_after), and closes it. alias_key as
 * for modinfo_from_fd(). Touches nothing but p: runs on a worker while the event loop reads the
 * job's result. */
void loader_read_after(LoaderPrepared *p, const char *alias_key);

/* What loader_read_after() found, into r: its name and signature for the record, and in
 * r->after_load what is wrong, when the file is another module than r->name or says none; clears
 * r->modinfo_pending. Returns 0 or -ENOMEM. */
int loader_apply_after(ModuleResult *r, LoaderPrepared *p);

/* Every check of loader_load() without the load, on the file r->path names now; *ret holds what
 * they found when they all passed, and is left as it was otherwise. r is left as it was: nothing
 * here is a decision, the load checks again. Runs on a worker thread. Returns 0, or -ENOMEM. */
int loader_prepare(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ret);

/* Opens r->path beneath the trusted root, checks the open fd and hands that fd to finit_module().
 * With ahead (from loader_prepare(); may be NULL or not checked), every check is made all the
 * same, on the file opened now, but its name and signature are taken from ahead, not read again,
 * when its bytes hash the same as then (ahead's ModInfo is taken). Where the name was checked
 * against the file's name (r->name_from_path), the fd of a module loaded is left in ahead (read_after,
 * and r->modinfo_pending set) for loader_read_after(); otherwise it is read before returning. Runs on
 * a worker thread: touches nothing but r, ahead and read-only ctx. Returns 0, or -ENOMEM. */
int loader_load(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ahead);

/* The same checks on the file as loader_load(), without loading it: for Explain. r has a reason when
 * one failed; the .modinfo that a load would read after it is read here too. Runs on any thread.
 * Returns 0, or -ENOMEM. */
int loader_check(const LoadContext *ctx, ModuleResult *r);
