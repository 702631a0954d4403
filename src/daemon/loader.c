/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <linux/module.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"
#include "loader.h"

static const char *const outcome_table[_OUTCOME_MAX] = {
        [OUTCOME_LOADED] = "loaded",
        [OUTCOME_ALREADY_LOADED] = "already_loaded",
        [OUTCOME_BUILTIN] = "builtin",
        [OUTCOME_FAILED] = "failed",
        [OUTCOME_DENIED] = "denied",
};

const char *outcome_to_string(Outcome o) {
        return o >= 0 && o < _OUTCOME_MAX ? outcome_table[o] : NULL;
}

uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
}

void module_result_done(ModuleResult *r) {
        free(r->name);
        free(r->path);
        free(r->parameters);
        free(r->reason);
        free(r->command);
        *r = (ModuleResult) {};
}

int module_result_setv(ModuleResult *r, Outcome o, int error, const char *fmt, va_list ap) {
        r->outcome = o;
        r->error = abs(error);
        free(r->reason);
        r->reason = NULL;
        if (!fmt)
                return 0;
        if (vasprintf(&r->reason, fmt, ap) < 0) {
                r->reason = NULL;
                return -ENOMEM;
        }
        return 0;
}

int module_result_set(ModuleResult *r, Outcome o, int error, const char *fmt, ...) {
        va_list ap;
        int q;

        va_start(ap, fmt);
        q = module_result_setv(r, o, error, fmt, ap);
        va_end(ap);
        return q;
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
static const TrustedRoot *find_root(const LoadContext *ctx, const char *path, const char **ret_rel) {
        const TrustedRoot *best = NULL;
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
                       "security module such as LoadPin or IPE)";
        case EKEYREJECTED:
        case ENOKEY:
        case EBADMSG:
                return "the module signature was rejected or is missing while signatures are enforced";
        case ETXTBSY:
                return "the file is open for writing";
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
                return module_result_set(r, OUTCOME_FAILED, ENOEXEC, "not an ELF object or a known compressed file");
        if (r->compression == COMPRESSION_NONE)
                return 0;
        if (r->compression != ctx->kernel_compression)
                return module_result_set(r, OUTCOME_FAILED, ENOEXEC, "file is %s-compressed, the kernel decompresses %s",
                                         compression_to_string(r->compression),
                                         ctx->kernel_compression == COMPRESSION_NONE ?
                                         "nothing" : compression_to_string(ctx->kernel_compression));
        r->flags |= MODULE_INIT_COMPRESSED_FILE;
        return 0;
}

int loader_load(const LoadContext *ctx, ModuleResult *r) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t start = now_usec();
        const TrustedRoot *root;
        const char *rel = NULL;
        TrustVerdict v;
        int q;

        r->outcome = OUTCOME_FAILED;
        root = find_root(ctx, r->path, &rel);
        if (!root)
                return module_result_set(r, OUTCOME_DENIED, EXDEV, "file is not beneath a trusted root");

        /* Leaving the root, and a socket (ENXIO), are verdicts on the file; anything else is not. */
        fd = trusted_root_open_file(root, rel);
        if (fd < 0)
                return module_result_set(r, fd == -EXDEV || fd == -ELOOP || fd == -ENXIO ? OUTCOME_DENIED :
                                         OUTCOME_FAILED, fd, "%s", trust_open_error_to_string(fd));

        /* A failure to look is not a verdict on the file: failed, not denied (denials are remembered). */
        q = file_origin_from_fd(fd, &r->origin);
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "cannot identify the file's origin: %s",
                                         strerrordesc_np(-q));
        r->have_origin = true;

        v = trust_evaluate(&r->origin, ctx->require_superblock_ro);
        if (v != TRUST_OK)
                return module_result_set(r, OUTCOME_DENIED, EPERM, "%s", trust_verdict_to_string(v));

        q = check_compression(ctx, fd, r);
        if (q < 0 || r->reason)
                return q;

        q = kernel_finit_module(fd, r->parameters, r->flags);
        r->duration_usec = now_usec() - start;
        if (q == -EEXIST)
                return module_result_set(r, OUTCOME_ALREADY_LOADED, 0, NULL);
        if (q < 0)
                return module_result_set(r, OUTCOME_FAILED, q, "%s", finit_error_to_string(q));
        return module_result_set(r, OUTCOME_LOADED, 0, NULL);
}
