/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "conf-files.h"
#include "macro.h"
#include "strv.h"

typedef enum EntryKind {
        ENTRY_IGNORE,
        ENTRY_FILE,
        ENTRY_MASK,
} EntryKind;

typedef struct Entry {
        char *name;
        size_t priority;        /* index into dirs: lower wins */
        char *path;             /* NULL when masked */
} Entry;

typedef struct EntryList {
        Entry *entries;
        size_t n;
} EntryList;

static void entry_list_done(EntryList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->entries[i].name);
                free(l->entries[i].path);
        }
        free(l->entries);
        *l = (EntryList) {};
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* root + path, where root "" or "/" (or NULL) adds nothing. */
static char *path_prefix_root(const char *root, const char *path) {
        size_t n = root ? strlen(root) : 0;
        char *p;

        while (n > 0 && root[n - 1] == '/')
                n--;
        if (asprintf(&p, "%.*s%s", (int) n, n > 0 ? root : "", path) < 0)
                return NULL;
        return p;
}

static bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A symlink that leads nowhere is ignored like any other entry that is not a regular file. */
static bool errno_is_dangling(int e) {
        return e == ENOENT || e == ENOTDIR || e == ELOOP;
}

/* A symlink to "/dev/null" masks without being followed; so does anything that is the null device
 * itself (a device node, or a symlink that leads to it by another spelling), as an administrator who
 * made one means the same thing. */
static bool stat_is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

static int entry_kind(int dfd, const char *name) {
        char target[sizeof("/dev/null")];
        struct stat st;
        ssize_t n;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno_is_dangling(errno) ? ENTRY_IGNORE : negative_errno();
        if (S_ISLNK(st.st_mode)) {
                n = readlinkat(dfd, name, target, sizeof(target));
                if (n == (ssize_t) strlen("/dev/null") && memcmp(target, "/dev/null", n) == 0)
                        return ENTRY_MASK;
                if (fstatat(dfd, name, &st, 0) < 0)
                        return errno_is_dangling(errno) ? ENTRY_IGNORE : negative_errno();
        }
        if (stat_is_dev_null(&st))
                return ENTRY_MASK;
        return S_ISREG(st.st_mode) ? ENTRY_FILE : ENTRY_IGNORE;
}

static char *entry_path(const char *dir, const char *name) {
        char *p;

        return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

static int entry_list_add(EntryList *l, const char *dir, const char *name, size_t priority, EntryKind kind) {
        Entry e = { .priority = priority };
        Entry *t;

        t = reallocarray(l->entries, l->n + 1, sizeof(Entry));
        if (!t)
                return -ENOMEM;
        l->entries = t;

        e.name = strdup(name);
        if (!e.name)
                return -ENOMEM;
        if (kind == ENTRY_FILE && !(e.path = entry_path(dir, name))) {
                free(e.name);
                return -ENOMEM;
        }
        l->entries[l->n++] = e;
        return 0;
}

/* Opens dir; the paths it adds start with shown instead, which is dir without root when asked for. */
static int list_dir(EntryList *l, const char *dir, const char *shown, size_t priority, const char *suffix,
                    size_t max) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;

        d = opendir(dir);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();

        for (errno = 0; (de = readdir(d)); errno = 0) {
                int kind;
                int r;

                if (de->d_name[0] == '.' || !endswith(de->d_name, suffix))
                        continue;
                kind = entry_kind(dirfd(d), de->d_name);
                if (kind < 0)
                        return kind;
                if (kind == ENTRY_IGNORE)
                        continue;
                /* One directory over the cap is already too many merged names; stop reading it. */
                if (++n > max)
                        return -E2BIG;
                r = entry_list_add(l, shown, de->d_name, priority, kind);
                if (r < 0)
                        return r;
        }
        return errno > 0 ? -errno : 0;
}

static int entry_compare(const void *a, const void *b) {
        const Entry *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        return x->priority < y->priority ? -1 : x->priority > y->priority;
}

/* Sorted by name, then priority: the first entry of each name is the one that counts. */
static int entry_list_to_strv(EntryList *l, size_t max, char ***ret) {
        _cleanup_strv_free_ char **paths = NULL;
        size_t n_names = 0;
        int r;

        if (l->n > 0)
                qsort(l->entries, l->n, sizeof(Entry), entry_compare);

        for (size_t i = 0; i < l->n; i++) {
                if (i > 0 && strcmp(l->entries[i].name, l->entries[i - 1].name) == 0)
                        continue;
                /* A mask is a name too: it counts towards the cap like a file. */
                if (++n_names > max)
                        return -E2BIG;
                if (!l->entries[i].path)
                        continue;
                r = strv_consume(&paths, TAKE_PTR(l->entries[i].path));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(paths);
        return 0;
}

int conf_files_list(const char *const *dirs, const char *root, const char *suffix, ConfFilesFlags flags,
                    size_t max, char ***ret) {
        _cleanup_(entry_list_done) EntryList l = {};
        int r;

        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *dir = path_prefix_root(root, dirs[i]);

                if (!dir)
                        return -ENOMEM;
                r = list_dir(&l, dir, flags & CONF_FILES_NO_ROOT_PREFIX ? dirs[i] : dir, i, suffix, max);
                if (r < 0)
                        return r;
        }
        return entry_list_to_strv(&l, max, ret);
}

int conf_files_find(const char *const *dirs, const char *root, const char *name, ConfFilesFlags flags,
                    char **ret) {
        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *dir = path_prefix_root(root, dirs[i]), *path = NULL;
                int kind;

                if (!dir || !(path = entry_path(dir, name)))
                        return -ENOMEM;
                kind = entry_kind(AT_FDCWD, path);
                if (kind < 0)
                        return kind;
                if (kind == ENTRY_IGNORE)
                        continue;
                if (kind == ENTRY_MASK) {
                        *ret = NULL;
                        return 0;
                }
                if (flags & CONF_FILES_NO_ROOT_PREFIX) {
                        free(path);
                        path = entry_path(dirs[i], name);
                        if (!path)
                                return -ENOMEM;
                }
                *ret = TAKE_PTR(path);
                return 1;
        }
        return -ENOENT;
}

/* "DIR/NAME.d" for each of dirs. */
static int dropin_dirs(const char *const *dirs, const char *name, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        for (size_t i = 0; dirs[i]; i++) {
                char *p;

                if (asprintf(&p, "%s/%s.d", dirs[i], name) < 0)
                        return -ENOMEM;
                r = strv_consume(&l, p);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int conf_files_list_main(const char *const *dirs, const char *root, const char *name, char ***ret) {
        _cleanup_strv_free_ char **ddirs = NULL, **dropins = NULL, **l = NULL;
        _cleanup_free_ char *main_path = NULL;
        int r;

        r = conf_files_find(dirs, root, name, 0, &main_path);
        if (r < 0 && r != -ENOENT)
                return r;
        r = dropin_dirs(dirs, name, &ddirs);
        if (r < 0)
                return r;
        r = conf_files_list((const char *const *) ddirs, root, ".conf", 0, SIZE_MAX, &dropins);
        if (r < 0)
                return r;

        if (main_path) {
                r = strv_consume(&l, TAKE_PTR(main_path));
                if (r < 0)
                        return r;
        }
        for (char **p = dropins; p && *p; p++) {
                r = strv_extend(&l, *p);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
