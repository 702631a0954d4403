/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The decision on one module and what its checks found: made by the loader, recorded by the journal,
 * answered by Load and Seal. Plain data, so that what records and answers it needs no loader. */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-json.h>

#include "compression.h"
#include "macro.h"
#include "modinfo.h"
#include "origin.h"
#include "resolver.h"
#include "request.h"
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
        RequestSource source;   /* whose request made the load: its [Source] signer rule applies */
        Outcome outcome;
        char *reason;           /* why it was not loaded; NULL when it was */
        char *command;          /* the modprobe.d install command that was refused, if that was why */
        char *alias_key;        /* requested through an alias: the request's key, which the file's alias
                                 * patterns are matched against (ModInfo.alias) */
        char *required_by;      /* the modules of the plan that need it, "vxlan, geneve"; NULL when none */
        char *options_source;   /* where the options in parameters were written: "FILE:LINE, ..." */
        int error;              /* positive errno of the failure, 0 if none */
        bool cached;            /* the outcome is a remembered denial */
        bool by_source;         /* denied by the request source's rule: no verdict on the file alone */
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
        bool name_from_path;    /* the name was checked against the file's name, which the evidence binds
                                 * to its bytes (modinfo_needed_before_load()): the .modinfo is read after
                                 * the load, and the journal record waits for it */
        bool modinfo_pending;   /* loaded, and that read is not done yet */
        bool modinfo_from_manifest; /* modinfo is what the root's manifest lists for these bytes (their
                                     * digest), read from them when the manifest was written */
        char *after_load;       /* what that read found wrong (another name, none, unreadable): an error
                                 * for the record, the load having happened */
        Compression compression;
        unsigned flags;         /* finit_module() flags used */
        uint64_t duration_usec; /* every check of the file (those made while it waited too) and its init */
        /* The stages of the request, for the record and modgatectl plot: from the job's making until
         * a worker began its load (what it needed, a free worker), the checks of the load itself, and
         * finit_module() until it returned. Each is 0 when that stage did not happen. */
        uint64_t wait_usec, check_usec, init_usec;
        /* The check stage divided (docs/journal.md): the trusted root and the open, the origin (the file
         * system and its devices), the prober's answers within it, the SHA-256 of the bytes, and the
         * rest (format, name and signer). They add up to about check_usec. */
        uint64_t open_usec, origin_usec, probe_usec, hash_usec, name_usec;
} ModuleResult;

void module_result_done(ModuleResult *r);
/* What the checks and the load found, freed; what the job set is left. */
void module_result_free_found(ModuleResult *r);
int module_result_set(ModuleResult *r, Outcome o, int error, const char *fmt, ...) _printf_(4, 5);
int module_result_setv(ModuleResult *r, Outcome o, int error, const char *fmt, va_list ap) _printf_(4, 0);

/* Appends one module's result to a reply's modules array, as Load gives it. */
int module_result_build_json(const ModuleResult *r, sd_json_variant **array);
