/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"

/* The libFuzzer entry point; fuzz-main.c calls the same one for the seed corpus. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant the parser promises: a violation is a bug the fuzzer reports, like a crash. */
#define fuzz_assert(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                \
                }                                                                               \
        } while (0)

/* For targets whose parser reads files: a directory of this process's own below $TMPDIR (or /tmp),
 * made at the first call and removed at exit. */
static inline char **fuzz_dir(void) {
        static char *dir = NULL;

        return &dir;
}

static inline int fuzz_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static inline void fuzz_dir_remove(void) {
        if (*fuzz_dir())
                (void) nftw(*fuzz_dir(), fuzz_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline const char *fuzz_tmp_dir(void) {
        const char *t = getenv("TMPDIR");

        if (*fuzz_dir())
                return *fuzz_dir();
        if (asprintf(fuzz_dir(), "%s/modgate-fuzz-XXXXXX", t && *t ? t : "/tmp") < 0 || !mkdtemp(*fuzz_dir())) {
                perror("fuzz: cannot make a scratch directory");
                abort();
        }
        atexit(fuzz_dir_remove);
        return *fuzz_dir();
}

/* Writes size bytes to fuzz_tmp_dir()/path, replacing what was there; the directories on the way are
 * made. Returns the full path, which the caller frees. A failure aborts: it is the machine's. */
static inline char *fuzz_write_file(const char *path, const void *data, size_t size) {
        char *full = NULL;
        FILE *f;

        if (asprintf(&full, "%s/%s", fuzz_tmp_dir(), path) < 0)
                abort();
        for (char *s = full + strlen(fuzz_tmp_dir()) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                if (mkdir(full, 0755) < 0 && errno != EEXIST)
                        abort();
                *s = '/';
        }
        f = fopen(full, "we");
        if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
                abort();
        return full;
}
