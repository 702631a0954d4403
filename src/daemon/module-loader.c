/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <linux/module.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decide.h"
#include "kernel.h"
#include "modinfo-kmod.h"
#include "module-loader.h"
#include "module-name.h"
#include "probe-client.h"
#include "root-identity.h"
#include "strv.h"
#include "time-util.h"

int loader_verify_root(TrustedRoot *r, void *userdata) {
        const LoadContext *ctx = userdata;

        return root_identity_verify(r, ctx->probe_address);
}

/* The part of path below root, or NULL. Trailing slashes of the root do not count, so "/" works. */
static const char *relative_to_root(const TrustedRoot *root, const char *path, size_t *ret_len) {
        size_t n = strlen(root->path);

        while (n > 0 && root->path[n - 1] == '/')
                n--;
        if (strncmp(path, root->path, n) != 0 || path[n] != '/')
                return NULL;
        *ret_len = n;
        path += n;
        while (*path == '/')
                path++;
        return *path ? path : NULL;
}

/* The innermost trusted root holding path: nested roots are separate mounts, which openat2() from an
 * outer root would refuse to cross. */
static TrustedRoot *find_root(const LoadContext *ctx, const char *path, const char **ret_rel) {
        TrustedRoot *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < ctx->n_roots; i++) {
                const char *rel;
                size_t n;

                rel = relative_to_root(ctx->roots[i], path, &n);
                if (rel && (!best || n > best_len)) {
                        best = ctx->roots[i];
                        best_len = n;
                        *ret_rel = rel;
                }
        }
        return best;
}

static const char *finit_error_to_string(int error) {
        switch (abs(error)) {
        case ENOEXEC:
                return "the kernel rejected the module format (built for another kernel, bad ELF or bad "
                       "compression)";
        case EPERM:
                return "the kernel refused the load (lockdown, module_blacklist= on the command line, or a "
                       "security module such as modgate's guard, whose record says why, LoadPin or IPE)";
        case EACCES:
                return "a security module refused the kernel's read of the file (IMA appraisal, SELinux)";
        case EKEYREJECTED:
        case ENOKEY:
        case EBADMSG:
                return "the module signature was rejected or is missing while signatures are enforced";
        case EKEYEXPIRED:
        case ENOPKG:
                return "the module signature cannot be checked (expired key, or a hash algorithm the kernel "
                       "lacks)";
        case ETXTBSY:
                return "the file is open for writing";
        case EFBIG:
                return "the file is larger than the kernel reads";
        case EOPNOTSUPP:
                return "the kernel cannot decompress the module";
        case ENOMEM:
        case ENOSPC:
                return "the kernel has no memory left for the module";
        case ETIMEDOUT:
                return "the kernel gave up waiting for a module this one needs";
        case EINTR:
                return "interrupted while waiting for another load of this module";
        case EBADF:
        case EFAULT:
                return "modgate handed the kernel an invalid file descriptor or parameter string (a bug in "
                       "modgate)";
        case EBUSY:
                /* Linux 6.2 and later: a concurrent load of the same name failed, or it is going. */
                return "another load of this module failed meanwhile, or the module is being removed";
        case ENOENT:
                return "the module refers to a symbol or firmware that does not exist";
        case ENODEV:
                return "the module found no device to drive";
        case ENOSYS:
                return "this kernel cannot load modules";
        case EINVAL:
                return "the kernel rejected the module or its parameters";
        default:
                return "the module's init failed";
        }
}

static int check_compression(const LoadContext *ctx, int fd, ModuleResult *r) {
        uint8_t magic[COMPRESSION_MAGIC_MAX] = {};
        ssize_t n;

        n = pread(fd, magic, sizeof(magic), 0);
        if (n < 0)
                return module_result_set(r, OUTCOME_FAILED, errno, "cannot read module file: %s",
                                         strerrordesc_np(errno));
        r->compression = compression_from_magic(magic, (size_t) n);
        if (r->compression == COMPRESSION_UNKNOWN)
                return module_result_set(r, OUTCOME_FAILED, ENOEXEC,
                                         "not an ELF object or a known compressed file");
        if (r->compression == COMPRESSION_NONE)
                return 0;
        if (r->compression != ctx->kernel_compression)
                return module_result_set(r, OUTCOME_FAILED, ENOEXEC,
                                         "file is %s-compressed, the kernel decompresses %s",
                                         compression_to_string(r->compression),
                                         ctx->kernel_compression == COMPRESSION_NONE ?
                                                 "nothing" :
                                                 compression_to_string(ctx->kernel_compression));
        r->flags |= MODULE_INIT_COMPRESSED_FILE;
        return 0;
}

#define DELETED_SUFFIX " (deleted)"

/* The file's path below its root as the root's manifest lists it: the file itself, with the symlinks
 * inside the tree resolved (the fd knows where it is). NULL when it is not below the root's
 * directory. */
static int manifest_relpath(const TrustedRoot *root, int fd, char **ret) {
        const size_t deleted = strlen(DELETED_SUFFIX);
        char link[64], path[PATH_MAX];
        struct stat st;
        const char *rel;
        size_t n;
        ssize_t k;

        *ret = NULL;
        if (!root->real_path)
                return 0;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        k = readlink(link, path, sizeof(path) - 1);
        if (k < 0)
                return negative_errno();
        path[k] = '\0';
        /* A file replaced by rename after it was opened (a package upgrade) is unlinked: the kernel
         * names it "PATH (deleted)". The fd still holds the bytes that were at PATH, and those are
         * checked against PATH's entry, not reported as a file the manifest does not list. */
        if ((size_t) k > deleted && strcmp(path + k - deleted, DELETED_SUFFIX) == 0 && fstat(fd, &st) >= 0 &&
            st.st_nlink == 0)
                path[k - deleted] = '\0';
        n = strlen(root->real_path);
        if (strcmp(root->real_path, "/") == 0)
                n = 0;
        if (strncmp(path, root->real_path, n) != 0 || path[n] != '/')
                return 0;
        rel = path + n + 1;
        *ret = strdup(rel);
        return *ret ? 0 : -ENOMEM;
}

static uint64_t usec_sub(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

/* The SHA-256 of the file's bytes into r, its time counted in the hash stage. */
static int hash_timed(int fd, ModuleResult *r) {
        uint64_t start = now_usec();
        int q;

        q = sha256_fd(fd, r->sha256);
        r->hash_usec += now_usec() - start;
        return q;
}

static void check_manifest(const TrustedRoot *root, int fd, ModuleResult *r, TrustInput *in, char **detail) {
        _cleanup_free_ char *rel = NULL;
        const uint8_t *want;
        int q;

        if (!root->manifest) {
                in->manifest = MANIFEST_UNAVAILABLE;
                in->manifest_detail = root->manifest_error ?: "the root has no Manifest=";
                return;
        }
        q = manifest_relpath(root, fd, &rel);
        if (q < 0 || !rel) {
                in->manifest = MANIFEST_UNAVAILABLE;
                in->manifest_detail = q < 0 ? "the file's path cannot be read" :
                                              "the file is not below the root's directory";
                return;
        }
        q = hash_timed(fd, r);
        if (q < 0) {
                in->manifest = MANIFEST_UNAVAILABLE;
                in->manifest_detail = "the file cannot be read";
                return;
        }
        r->have_sha256 = true;
        want = manifest_lookup(root->manifest, rel);
        in->manifest = !want ? MANIFEST_NO_ENTRY :
                       memcmp(want, r->sha256, SHA256_DIGEST_SIZE) == 0 ? MANIFEST_MATCH : MANIFEST_MISMATCH;
        *detail = TAKE_PTR(rel);
        in->manifest_detail = *detail;
}

static int describe_backing(const Origin *o, char **ret) {
        _cleanup_free_ char *below = NULL;
        int q;

        if (o->below) {
                q = describe_backing(o->below, &below);
                if (q < 0)
                        return q;
        }
        q = asprintf(ret, "%s%s%s%s%s%s", o->backing == BACKING_NONE ? o->file.fstype : "",
                     o->device, o->backing_path ? " <- " : "", o->backing_path ?: "",
                     below ? " on " : "", below ?: "");
        if (q < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* A mount that is unmounted lazily stays readable through the fds open on it, but is in no mount
 * namespace any more: neither statmount() nor mountinfo knows it. */
static bool root_detached(const TrustedRoot *root) {
        FileOrigin o;

        return file_origin_from_fd(root->fd, &o) == -ENOENT;
}

static int strdup_nonempty(const char *s, char **ret) {
        if (!s || !*s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* What the record says of the device and the file, whatever the decision. */
static int record_origin(const Origin *o, ModuleResult *r) {
        r->origin = o->file;
        r->have_origin = true;
        r->diskseq = o->diskseq;
        r->ima = o->ima;
        if (describe_backing(o, &r->backing) < 0)
                return -ENOMEM;
        if (o->fsverity.enabled && strdup_nonempty(o->fsverity.digest, &r->fsverity_digest) < 0)
                return -ENOMEM;
        if (!o->device_mapper)
                return 0;
        if (strdup_nonempty(o->device, &r->dm_device) < 0 ||
            strdup_nonempty(o->dm.target, &r->dm_target) < 0 ||
            strdup_nonempty(o->dm.root_hash, &r->verity_root_hash) < 0)
                return -ENOMEM;
        return 0;
}

static bool loop_needs_probe(const Origin *o) {
        for (; o; o = o->below)
                if (origin_loop_needs_probe(o))
                        return true;
        return false;
}

/* The origin check: the evidence of where the bytes come from, decided by trust_decide(). */
static int check_origin(const LoadContext *ctx, const TrustedRoot *root, int fd, ModuleResult *r) {
        _cleanup_(origin_freep) Origin *o = NULL;
        _cleanup_(trust_decision_done) TrustDecision d = {};
        _cleanup_free_ char *detail = NULL;
        TrustInput in = {
                .accepted = root->evidence,
                .root_hashes = root->root_hashes,
                .cmdline_root_hashes = ctx->cmdline_root_hashes,
                .fsverity_digests = root->fsverity_digests,
                .require_ima = root->require_ima,
        };
        uint64_t start;
        int q;

        /* A failure to look is not a verdict on the file: failed, not denied (denials are remembered). */
        q = origin_collect(fd, &o);
        if (q == -ENOENT && root_detached(root))
                return module_result_set(
                        r, OUTCOME_FAILED, q,
                        "trusted root %s is a detached mount (unmounted "
                        "since it was pinned): its file system cannot be identified; restart "
                        "modgated to pin what is there now",
                        root->path);
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "cannot identify the file's origin: %s",
                                         strerrordesc_np(-q));
        /* The table of the file system's own device, asked for each load: a device-mapper table
         * can be replaced under a mounted file system, and a device made again under the same number
         * is another instance (the prober checks diskseq). Only where a root hash is allowed: without
         * one no table can vouch (an LVM or LUKS root is device-mapper too), and the prober would be
         * asked on every load for nothing but the record's MODGATE_DM_TARGET. */
        if (root->evidence & EVIDENCE_MASK(EVIDENCE_VERITY) && o->device_mapper &&
            (strv_length(root->root_hashes) > 0 || strv_length(ctx->cmdline_root_hashes) > 0)) {
                start = now_usec();
                q = probe_dm_table(ctx->probe_address, o);
                r->probe_usec += now_usec() - start;
                if (q < 0)
                        return -ENOMEM;
        }
        /* A loop device's backing file, opened by a path, is evidence only if it is the file the
         * device reads; asked each load too, as a loop device can be given another file. */
        if (root->evidence & EVIDENCE_MASK(EVIDENCE_READ_ONLY) && loop_needs_probe(o)) {
                start = now_usec();
                q = probe_loop_backing(ctx->probe_address, o);
                r->probe_usec += now_usec() - start;
                if (q < 0)
                        return -ENOMEM;
        }
        if (origin_verify_backing(o) < 0)
                return -ENOMEM;
        if (record_origin(o, r) < 0)
                return -ENOMEM;

        in.origin = o;
        q = trust_decide(&in, &d);
        if (q >= 0 && d.needs_manifest) {
                check_manifest(root, fd, r, &in, &detail);
                trust_decision_done(&d);
                q = trust_decide(&in, &d);
        }
        if (q < 0)
                return q;
        if (!d.trusted)
                return module_result_set(r, OUTCOME_DENIED, EPERM, "%s", d.reason);
        r->trusted = true;
        r->evidence = d.evidence;
        r->fsverity = d.fsverity;
        return 0;
}

/* The name in r->modinfo against the one the index resolved. */
static int check_modinfo_name(ModuleResult *r) {
        /* Without name= the kernel takes the name from the module's own struct, which modgate
         * does not read: nothing would say which module the file is. Every kernel modgate runs on
         * (5.x and later) writes it. */
        if (!r->modinfo.name)
                return module_result_set(r, OUTCOME_DENIED, EPERM,
                                         "the file's .modinfo has no name=: which module "
                                         "it is cannot be checked against %s",
                                         r->name);
        if (!module_name_equal(r->modinfo.name, r->name))
                return module_result_set(r, OUTCOME_DENIED, EPERM, "the file is module %s, not %s%s",
                                         r->modinfo.name, r->name,
                                         r->modinfo_from_manifest ? " (as the manifest lists its bytes)" :
                                                                    "");
        return 0;
}

/* The kernel loads a module under the name in its file, whatever the file is called: it must be
 * the name the index resolved, or the record would say one module and the kernel load another.
 * The signature for the record comes with it, from the same decompression; or from known, what
 * the same bytes said when they were read before (taken). */
static int check_name(int fd, ModuleResult *r, ModInfo *known) {
        int q;

        if (known) {
                r->modinfo = *known;
                *known = (ModInfo) {};
        } else {
                q = modinfo_from_fd(fd, r->alias_key, NULL, &r->modinfo);
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        return module_result_set(r, OUTCOME_FAILED, ENOEXEC,
                                                 "cannot read the module's information: %s",
                                                 strerrordesc_np(-q));
        }
        r->have_modinfo = true;
        return check_modinfo_name(r);
}

/* The signer rule of the request's source, or NULL. */
static const SignerRule *source_signer(const LoadContext *ctx, const ModuleResult *r) {
        if (!ctx->source_signers || r->source < 0 || r->source >= _SOURCE_MAX)
                return NULL;
        return &ctx->source_signers[r->source];
}

/* The signer rules of the root and of the request's source (docs/guard.md), on the signature the
 * name check read with the name: before the load, and the guard lets the kernel read only these
 * bytes. */
static int check_signer(const LoadContext *ctx, const TrustedRoot *root, ModuleResult *r) {
        const SignerSeen seen = {
                .is_signed = r->modinfo.is_signed,
                .signer = r->modinfo.signer,
                .key = r->modinfo.signature_key,
        };
        const SignerRule *source = source_signer(ctx, r);
        _cleanup_free_ char *what = NULL, *reason = NULL;
        int q = 1;

        if (signer_rule_active(&root->signer)) {
                if (asprintf(&what, "trusted root %s", root->path) < 0)
                        return -ENOMEM;
                q = signer_rule_check(&root->signer, what, &seen, &reason);
        }
        if (q > 0 && signer_rule_active(source)) {
                what = mfree(what);
                if (asprintf(&what, "[Source] %s", request_source_to_string(r->source)) < 0)
                        return -ENOMEM;
                q = signer_rule_check(source, what, &seen, &reason);
                /* The root's rule is about the file, for every request; a source's about this one. */
                r->by_source = q == 0;
        }
        if (q < 0)
                return q;
        if (q == 0)
                return module_result_set(r, OUTCOME_DENIED, EPERM, "%s", reason);
        return 0;
}

/* Whether a signer rule applies to the load: it needs the file's signature before the load. */
static bool signer_rule_applies(const LoadContext *ctx, const TrustedRoot *root, const ModuleResult *r) {
        return signer_rule_active(&root->signer) || signer_rule_active(source_signer(ctx, r));
}

/* The name check where the evidence binds each path to its bytes (modinfo_needed_before_load()): the
 * file's name, as the fd knows it (symlinks in the tree resolved, as the manifest was matched),
 * against the name the index resolved. Returns 1 when that decided (r has the reason when it
 * refused), 0 when the file's path cannot be read (the caller reads .modinfo instead), or -ENOMEM. */
static int check_name_from_path(const TrustedRoot *root, int fd, ModuleResult *r) {
        _cleanup_free_ char *rel = NULL, *name = NULL;
        int q;

        q = manifest_relpath(root, fd, &rel);
        if (q == -ENOMEM)
                return q;
        if (q < 0 || !rel)
                return 0;
        name = module_name_from_path(rel);
        if (!name)
                return -ENOMEM;
        r->name_from_path = true;
        if (!module_name_equal(name, r->name)) {
                q = module_result_set(r, OUTCOME_DENIED, EPERM,
                                      "the file is %s, not module %s: with %s evidence the file's name is "
                                      "the module's",
                                      rel, r->name, evidence_to_string(r->evidence));
                if (q < 0)
                        return q;
        }
        return 1;
}

/* Where manifest evidence held, the .modinfo of these bytes as the manifest lists it with their
 * digest (version 2: written by modgate-manifest from the same bytes), instead of the file's name and
 * a read after the load: the manifest that binds these bytes to this path says what they are, so
 * nothing decompresses them. Only under manifest evidence and without a signer rule
 * (modinfo_needed_before_load()): under other evidence the manifest vouched for nothing, and a
 * signer rule decides on the signature the bytes carry, never on what a file in /var says of it.
 * Returns 1 when that decided (r has the reason when it refused), 0 when the manifest has no line
 * for these bytes, or -ENOMEM. */
static int check_name_from_manifest(const TrustedRoot *root, int fd, ModuleResult *r) {
        _cleanup_free_ char *rel = NULL;
        int q;

        if (r->evidence != EVIDENCE_MANIFEST || !root->manifest || !r->have_sha256 ||
            manifest_version(root->manifest) < 2)
                return 0;
        q = manifest_relpath(root, fd, &rel);
        if (q == -ENOMEM)
                return q;
        if (q < 0 || !rel)
                return 0;
        q = manifest_lookup_modinfo(root->manifest, rel, r->sha256, r->alias_key, &r->modinfo);
        if (q <= 0)
                return q;
        r->have_modinfo = r->modinfo_from_manifest = true;
        q = check_modinfo_name(r);
        return q < 0 ? q : 1;
}

static int hash_file(int fd, ModuleResult *r);

/* check_file()'s checks after the origin's. The bytes are hashed before the name is read from them:
 * with ahead (a check of the same path made while the module's dependencies loaded), its name and
 * signature are taken instead of decompressing the file again when the bytes hash the same as then. */
static int check_name_and_signer(const LoadContext *ctx, const TrustedRoot *root, int fd, ModuleResult *r,
                                 LoaderPrepared *ahead) {
        bool same;
        int q;

        q = check_compression(ctx, fd, r);
        if (q < 0 || r->reason)
                return q;

        q = hash_file(fd, r);
        if (q < 0 || r->reason)
                return q;

        if (!modinfo_needed_before_load(r->evidence, r->fsverity, signer_rule_applies(ctx, root, r))) {
                q = check_name_from_manifest(root, fd, r);
                if (q == 0)
                        q = check_name_from_path(root, fd, r);
                if (q != 0)
                        return MIN(q, 0);
        }

        same = ahead && ahead->checked && r->have_sha256 &&
                memcmp(r->sha256, ahead->sha256, SHA256_DIGEST_SIZE) == 0;
        q = check_name(fd, r, same ? &ahead->modinfo : NULL);
        if (q < 0 || r->reason)
                return q;

        return check_signer(ctx, root, r);
}

/* The checks on the open file, in order; the first that fails leaves its reason in r, and the time of
 * each stage. */
static int check_file(const LoadContext *ctx, const TrustedRoot *root, int fd, ModuleResult *r,
                      LoaderPrepared *ahead) {
        uint64_t start = now_usec(), hashed;
        int q;

        q = check_origin(ctx, root, fd, r);
        r->origin_usec = usec_sub(now_usec() - start, r->probe_usec + r->hash_usec);
        if (q < 0 || r->reason)
                return q;

        start = now_usec();
        hashed = r->hash_usec;
        q = check_name_and_signer(ctx, root, fd, r, ahead);
        r->name_usec = usec_sub(now_usec() - start, r->hash_usec - hashed);
        return q;
}

/* Every record of an opened file says which bytes it was, whatever the decision: hashed here from the
 * fd that goes to finit_module(), unless the manifest check hashed it already. Only a regular file (a
 * device node in a writable tree could be read for ever); one that would be loaded is not loaded
 * unrecorded. */
static int hash_file(int fd, ModuleResult *r) {
        int q;

        if (r->have_sha256 || !r->have_origin || !S_ISREG(r->origin.mode))
                return 0;
        q = hash_timed(fd, r);
        if (q == -ENOMEM)
                return q;
        if (q < 0 && !r->reason)
                return module_result_set(r, OUTCOME_FAILED, q, "cannot read module file: %s",
                                         strerrordesc_np(-q));
        r->have_sha256 = q >= 0;
        return 0;
}

/* The trusted root r->path lies beneath, pinned and unchanged; else r has the reason. */
static int pinned_root(const LoadContext *ctx, ModuleResult *r, TrustedRoot **ret_root,
                       const char **ret_rel) {
        TrustedRoot *root;
        int q;

        r->outcome = OUTCOME_FAILED;
        root = find_root(ctx, r->path, ret_rel);
        if (!root)
                return module_result_set(r, OUTCOME_DENIED, EXDEV, "file is not beneath a trusted root");
        q = trusted_root_pin(root, loader_verify_root, (void *) ctx);
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "trusted root %s cannot be pinned: %s",
                                         root->path, strerrordesc_np(-q) ?: "unknown error");
        if (root->changed)
                return module_result_set(r, OUTCOME_DENIED, ESTALE,
                                         "trusted root %s is not what it was when first "
                                         "pinned this boot (%s)",
                                         root->path, root->changed);
        *ret_root = root;
        return 0;
}

/* Every check of loader_load(); *ret_fd the checked file when r has no reason after. */
static int open_checked(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ahead, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        TrustedRoot *root = NULL;
        const char *rel = NULL;
        uint64_t start = now_usec();
        int q;

        q = pinned_root(ctx, r, &root, &rel);
        if (q < 0 || r->reason) {
                r->open_usec = now_usec() - start;
                return q;
        }

        /* Leaving the root, and a socket (ENXIO), are verdicts on the file; anything else is not. */
        fd = trusted_root_open_file(root, rel);
        r->open_usec = now_usec() - start;
        if (fd < 0)
                return module_result_set(r, fd == -EXDEV || fd == -ELOOP || fd == -ENXIO ? OUTCOME_DENIED :
                                         OUTCOME_FAILED, fd, "%s", trust_open_error_to_string(fd));

        q = check_file(ctx, root, fd, r, ahead);
        if (q >= 0)
                q = hash_file(fd, r);
        if (q < 0 || r->reason)
                return q;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The .modinfo a load whose name was checked from the path reads after it, read now. */
static int read_now(int *fd, ModuleResult *r) {
        _cleanup_(loader_prepared_done) LoaderPrepared p = {
                .read_after = true,
                .after_fd = TAKE_FD(*fd),
        };

        loader_read_after(&p, r->alias_key);
        return loader_apply_after(r, &p);
}

int loader_check(const LoadContext *ctx, ModuleResult *r) {
        _cleanup_close_ int fd = -EBADF;
        int q;

        assert(ctx);
        assert(r);

        q = open_checked(ctx, r, NULL, &fd);
        if (q < 0 || r->reason || !r->name_from_path)
                return q;
        return read_now(&fd, r);
}

void loader_prepared_done(LoaderPrepared *p) {
        modinfo_done(&p->modinfo);
        if (p->read_after)
                safe_close(p->after_fd);
        modinfo_done(&p->after);
        *p = (LoaderPrepared) {};
}

void loader_read_after(LoaderPrepared *p, const char *alias_key) {
        assert(p);

        if (!p->read_after)
                return;
        p->after_error = modinfo_from_fd(p->after_fd, alias_key, NULL, &p->after);
        p->after_fd = safe_close(p->after_fd);
        p->read_after = false;
        p->have_after = true;
}

static int after_load_set(ModuleResult *r, const char *fmt, ...) _printf_(2, 3);
static int after_load_set(ModuleResult *r, const char *fmt, ...) {
        va_list ap;
        int q;

        va_start(ap, fmt);
        q = vasprintf(&r->after_load, fmt, ap);
        va_end(ap);
        if (q < 0) {
                r->after_load = NULL;
                return -ENOMEM;
        }
        return 0;
}

int loader_apply_after(ModuleResult *r, LoaderPrepared *p) {
        assert(r);
        assert(p);

        if (!p->have_after)
                return 0;
        p->have_after = false;
        r->modinfo_pending = false;
        r->after_load = mfree(r->after_load);
        if (p->after_error == -ENOMEM)
                return -ENOMEM;
        if (p->after_error < 0)
                return after_load_set(r, "cannot read the module's information after the load: %s",
                                      strerrordesc_np(-p->after_error));
        modinfo_done(&r->modinfo);
        r->modinfo = p->after;
        p->after = (ModInfo) {};
        r->have_modinfo = true;
        if (!r->modinfo.name)
                return after_load_set(r, "the file's .modinfo has no name=: which module it is cannot be "
                                      "checked against %s", r->name);
        if (!module_name_equal(r->modinfo.name, r->name))
                return after_load_set(r, "the file is module %s, not %s", r->modinfo.name, r->name);
        return 0;
}

/* Back to what the job set: everything a check found is found again at the load. What the job set
 * (name, path, parameters...) is not touched: the event loop reads it while the job is on a worker. */
static void module_result_forget_checks(ModuleResult *r) {
        module_result_free_found(r);
        r->outcome = OUTCOME_LOADED;
        r->error = 0;
        r->cached = r->by_source = r->have_origin = r->trusted = r->fsverity = r->have_sha256 = r->have_modinfo =
                false;
        r->name_from_path = r->modinfo_pending = r->modinfo_from_manifest = false;
        r->origin = (FileOrigin) {};
        r->evidence = 0;
        r->diskseq = 0;
        r->ima = (Ima) {};
        memset(r->sha256, 0, sizeof(r->sha256));
        r->compression = 0;
        r->flags = 0;
        r->duration_usec = r->check_usec = r->init_usec = 0;
        r->open_usec = r->origin_usec = r->probe_usec = r->hash_usec = r->name_usec = 0;
}

int loader_prepare(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ret) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t start = now_usec();
        int q;

        assert(ctx);
        assert(r);
        assert(ret);

        /* What fails here decides nothing: the load checks again, once what it needs is live, and
         * decides then (a job whose dependency fails says so, not what its own file is). Nothing of
         * the file is kept but what its bytes said: the load opens the path again, as it would
         * have, and a file replaced or changed since is another file, checked as such. */
        q = open_checked(ctx, r, NULL, &fd);
        if (q >= 0 && !r->reason && r->have_sha256 && (r->have_modinfo || r->name_from_path)) {
                *ret = (LoaderPrepared) {
                        .checked = true,
                        .modinfo = r->modinfo,
                        .usec = now_usec() - start,
                };
                memcpy(ret->sha256, r->sha256, sizeof(ret->sha256));
                r->modinfo = (ModInfo) {};
        }
        module_result_forget_checks(r);
        return q;
}

int loader_load(const LoadContext *ctx, ModuleResult *r, LoaderPrepared *ahead) {
        _cleanup_close_ int fd = -EBADF;
        GuardTicket ticket;
        uint64_t start = now_usec(), before = ahead && ahead->checked ? ahead->usec : 0, checked;
        int q;

        assert(ctx);
        assert(r);

        q = open_checked(ctx, r, ahead, &fd);
        checked = now_usec();
        r->check_usec = checked - start;
        r->duration_usec = before + r->check_usec;
        if (q < 0 || r->reason)
                return q;

        /* The guard lets the kernel read this file, as it is now, for this process only, and for this
         * call only. */
        q = guard_approve(ctx->guard, fd, r->have_sha256 ? r->sha256 : NULL, &ticket);
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "the guard could not approve the file for the "
                                         "kernel: %s", strerrordesc_np(-q) ?: "unknown error");
        q = kernel_finit_module(fd, r->parameters, r->flags);
        guard_withdraw(ctx->guard, &ticket);
        r->init_usec = now_usec() - checked;
        r->duration_usec = before + r->check_usec + r->init_usec;
        /* The name and signature for the record: off the request's path for a load, where the
         * scheduler has a worker to read them later; the bytes are the ones the kernel read. A load
         * that failed is rare, and its record is written with its answer, whole. */
        if (r->name_from_path && ahead && q == 0) {
                loader_prepared_done(ahead);
                ahead->read_after = true;
                ahead->after_fd = TAKE_FD(fd);
                r->modinfo_pending = true;
        } else if (r->name_from_path && read_now(&fd, r) < 0)
                return -ENOMEM;
        if (q == -EEXIST) {
                ModuleState state = MODULE_STATE_ABSENT;

                /* The kernel says EEXIST for a module of that name that is live. A module's own init may
                 * return it too (kernels before 7.1 pass it on), so it means "loaded" only when the
                 * module asked for is live. */
                (void) kernel_module_state(r->name, &state);
                if (state == MODULE_STATE_LIVE)
                        return module_result_set(r, OUTCOME_ALREADY_LOADED, 0, NULL);
                return module_result_set(r, OUTCOME_FAILED, q,
                                         "finit_module() said EEXIST, but %s is not live "
                                         "(%s): its init failed with EEXIST",
                                         r->name, module_state_to_string(state));
        }
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "%s", finit_error_to_string(q));
        return module_result_set(r, OUTCOME_LOADED, 0, NULL);
}
