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
#include "log.h"

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

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
}

static int set_outcome(ModuleResult *r, Outcome o, int error, const char *fmt, ...) _printf_(4, 5);
static int set_outcome(ModuleResult *r, Outcome o, int error, const char *fmt, ...) {
        va_list ap;

        r->outcome = o;
        r->error = abs(error);
        if (!fmt)
                return 0;

        va_start(ap, fmt);
        if (vasprintf(&r->reason, fmt, ap) < 0)
                r->reason = NULL;
        va_end(ap);
        return r->reason ? 0 : -ENOMEM;
}

static const char *relative_to_root(const TrustedRoot *root, const char *path) {
        size_t n = strlen(root->path);

        while (n > 1 && root->path[n - 1] == '/')
                n--;
        if (strncmp(path, root->path, n) != 0 || path[n] != '/')
                return NULL;
        path += n;
        while (*path == '/')
                path++;
        return *path ? path : NULL;
}

static const char *finit_error_to_string(int error) {
        switch (abs(error)) {
        case ENOEXEC:
                return "the kernel rejected the module format (wrong kernel, bad ELF or bad compression)";
        case EPERM:
                return "the kernel refused the load (lockdown, module_blacklist= or a security module)";
        case EKEYREJECTED:
        case ENOKEY:
        case EBADMSG:
                return "the module signature was rejected";
        case ETXTBSY:
                return "the file is open for writing";
        case ENOSYS:
                return "this kernel cannot load modules";
        default:
                return "the kernel refused the module";
        }
}

static int load_one(const LoadContext *ctx, const ModuleSpec *spec, ModuleResult *r) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t magic[COMPRESSION_MAGIC_MAX] = {};
        ModuleState state;
        const char *rel;
        TrustVerdict v;
        ssize_t n;
        int q;

        if (!spec->path)
                return set_outcome(r, OUTCOME_BUILTIN, 0, NULL);

        q = kernel_module_state(spec->name, &state);
        if (q < 0)
                return set_outcome(r, OUTCOME_FAILED, q, "cannot read module state: %s", strerror(-q));
        switch (state) {
        case MODULE_STATE_LIVE:
        case MODULE_STATE_COMING:
                return set_outcome(r, OUTCOME_ALREADY_LOADED, 0, NULL);
        case MODULE_STATE_BUILTIN:
                return set_outcome(r, OUTCOME_BUILTIN, 0, NULL);
        case MODULE_STATE_GOING:
                return set_outcome(r, OUTCOME_FAILED, EBUSY, "module is being removed");
        default:
                break;
        }

        rel = relative_to_root(ctx->root, spec->path);
        if (!rel)
                return set_outcome(r, OUTCOME_DENIED, EXDEV, "index names a file outside the trusted root %s",
                                   ctx->root->path);

        fd = trusted_root_open_file(ctx->root, rel);
        if (fd < 0)
                return set_outcome(r, fd == -EXDEV || fd == -ELOOP ? OUTCOME_DENIED : OUTCOME_FAILED, fd,
                                   "%s", trust_open_error_to_string(fd));

        q = file_origin_from_fd(fd, &r->origin);
        if (q < 0)
                return set_outcome(r, OUTCOME_DENIED, q, "cannot identify the file's origin: %s", strerror(-q));
        r->have_origin = true;

        v = trust_evaluate(&r->origin);
        if (v != TRUST_OK)
                return set_outcome(r, OUTCOME_DENIED, EPERM, "%s", trust_verdict_to_string(v));

        n = pread(fd, magic, sizeof(magic), 0);
        if (n < 0)
                return set_outcome(r, OUTCOME_FAILED, errno, "cannot read module file: %s", strerror(errno));
        r->compression = compression_from_magic(magic, (size_t) n);
        if (r->compression == COMPRESSION_UNKNOWN)
                return set_outcome(r, OUTCOME_FAILED, ENOEXEC, "not an ELF object or a known compressed file");
        if (r->compression != COMPRESSION_NONE) {
                if (r->compression != ctx->kernel_compression)
                        return set_outcome(r, OUTCOME_FAILED, ENOEXEC,
                                           "file is %s-compressed, the kernel decompresses %s",
                                           compression_to_string(r->compression),
                                           ctx->kernel_compression == COMPRESSION_NONE ?
                                           "nothing" : compression_to_string(ctx->kernel_compression));
                r->flags |= MODULE_INIT_COMPRESSED_FILE;
        }

        q = kernel_finit_module(fd, "", r->flags);
        if (q == -EEXIST)
                return set_outcome(r, OUTCOME_ALREADY_LOADED, 0, NULL);
        if (q < 0)
                return set_outcome(r, OUTCOME_FAILED, q, "%s", finit_error_to_string(q));

        return set_outcome(r, OUTCOME_LOADED, 0, NULL);
}

int loader_run(const LoadContext *ctx, const ModuleSpec *specs, size_t n, ModuleResult **ret, size_t *ret_n) {
        ModuleResult *results;
        size_t i;
        int q = 0;

        results = calloc(n ?: 1, sizeof(ModuleResult));
        if (!results)
                return -ENOMEM;

        for (i = 0; i < n; i++) {
                ModuleResult *r = results + i;
                uint64_t start = now_usec();

                r->name = strdup(specs[i].name);
                r->path = specs[i].path ? strdup(specs[i].path) : NULL;
                if (!r->name || (specs[i].path && !r->path)) {
                        q = -ENOMEM;
                        i++;
                        break;
                }

                q = load_one(ctx, specs + i, r);
                r->duration_usec = now_usec() - start;
                if (q < 0 || r->outcome == OUTCOME_FAILED || r->outcome == OUTCOME_DENIED) {
                        i++;
                        break;
                }
        }

        if (q < 0) {
                module_results_free(results, i);
                return q;
        }

        *ret = results;
        *ret_n = i;
        return 0;
}

void module_results_free(ModuleResult *results, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(results[i].name);
                free(results[i].path);
                free(results[i].reason);
        }
        free(results);
}

bool module_results_ok(const ModuleResult *results, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (results[i].outcome == OUTCOME_FAILED || results[i].outcome == OUTCOME_DENIED)
                        return false;
        return true;
}
