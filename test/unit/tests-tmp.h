/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "tests.h"

/* A scratch tree below /tmp for tests that read files, with helpers that fail the test themselves. */

static inline char *tmp_root_new(void) {
        char *root = strdup("/tmp/modgate-test-XXXXXX");

        check(root);
        check(mkdtemp(root));
        return root;
}

static inline int tmp_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static inline void tmp_root_free(char **root) {
        if (!*root)
                return;
        (void) nftw(*root, tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS);
        free(*root);
}
#define _cleanup_tmp_root_ _cleanup_(tmp_root_free)

/* Creates the parent directories of root/path. */
static inline void tmp_mkdir_parents(const char *root, const char *path) {
        _cleanup_free_ char *p = NULL;

        check(asprintf(&p, "%s/%s", root, path) > 0);
        for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                check(mkdir(p, 0755) == 0 || errno == EEXIST);
                *s = '/';
        }
}

static inline char *tmp_path(const char *root, const char *path) {
        char *p;

        check(asprintf(&p, "%s/%s", root, path) > 0);
        return p;
}

static inline void tmp_write(const char *root, const char *path, const char *text) {
        _cleanup_free_ char *p = tmp_path(root, path);
        FILE *f;

        tmp_mkdir_parents(root, path);
        f = fopen(p, "we");
        check(f);
        check(fputs(text, f) >= 0);
        check(fclose(f) == 0);
        check(chmod(p, 0644) == 0);
}

static inline void tmp_symlink(const char *root, const char *path, const char *target) {
        _cleanup_free_ char *p = tmp_path(root, path);

        tmp_mkdir_parents(root, path);
        check(symlink(target, p) == 0);
}

static inline void tmp_mkdir(const char *root, const char *path) {
        _cleanup_free_ char *p = tmp_path(root, path);

        tmp_mkdir_parents(root, path);
        check(mkdir(p, 0755) == 0);
}
