/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <stdint.h>

#include "conf-files.h"
#include "strv.h"
#include "tests-tmp.h"

static const char *const dirs[] = {
        "/etc/modgate", "/run/modgate", "/usr/local/lib/modgate", "/usr/lib/modgate", NULL,
};

/* Checks that l is exactly root followed by each of the NULL-terminated paths, in order. */
static void check_paths(char **l, const char *root, ...) {
        const char *want;
        size_t i = 0;
        va_list ap;

        va_start(ap, root);
        while ((want = va_arg(ap, const char *))) {
                _cleanup_free_ char *full = tmp_path(root, want);

                check(i < strv_length(l));
                check_streq(l[i], full);
                i++;
        }
        va_end(ap);
        check(strv_length(l) == i);
}

static char **list_main(const char *root) {
        char **l = NULL;

        check(conf_files_list_main(dirs, root, "modgate.conf", &l) == 0);
        return l;
}

TEST(main_file_precedence) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **a = NULL, **b = NULL, **c = NULL;

        tmp_write(root, "usr/lib/modgate/modgate.conf", "");
        a = list_main(root);
        check_paths(a, root, "usr/lib/modgate/modgate.conf", NULL);

        tmp_write(root, "usr/local/lib/modgate/modgate.conf", "");
        tmp_write(root, "run/modgate/modgate.conf", "");
        b = list_main(root);
        check_paths(b, root, "run/modgate/modgate.conf", NULL);

        tmp_write(root, "etc/modgate/modgate.conf", "");
        c = list_main(root);
        check_paths(c, root, "etc/modgate/modgate.conf", NULL);
}

TEST(dropins_merge_and_order) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "usr/lib/modgate/modgate.conf", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/05-z.conf", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf", "");
        tmp_write(root, "run/modgate/modgate.conf.d/20-b.conf", "");
        tmp_write(root, "usr/local/lib/modgate/modgate.conf.d/20-b.conf", "");
        tmp_write(root, "usr/local/lib/modgate/modgate.conf.d/30-c.conf", "");

        /* The main file first, then every name once, from its highest-priority directory, by name. */
        l = list_main(root);
        check_paths(l, root,
                    "usr/lib/modgate/modgate.conf",
                    "usr/lib/modgate/modgate.conf.d/05-z.conf",
                    "etc/modgate/modgate.conf.d/10-a.conf",
                    "run/modgate/modgate.conf.d/20-b.conf",
                    "usr/local/lib/modgate/modgate.conf.d/30-c.conf",
                    NULL);
}

TEST(lexical_order) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "etc/modgate/modgate.conf.d/b.conf", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/a.conf", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/10.conf", "");
        tmp_write(root, "run/modgate/modgate.conf.d/9.conf", "");
        tmp_write(root, "run/modgate/modgate.conf.d/B.conf", "");

        /* Byte order, as with strcmp(): digits, then upper case, then lower case; "10" before "9". */
        l = list_main(root);
        check_paths(l, root,
                    "etc/modgate/modgate.conf.d/10.conf",
                    "run/modgate/modgate.conf.d/9.conf",
                    "run/modgate/modgate.conf.d/B.conf",
                    "usr/lib/modgate/modgate.conf.d/a.conf",
                    "etc/modgate/modgate.conf.d/b.conf",
                    NULL);
}

TEST(dev_null_masks_dropin) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/20-b.conf", "");
        tmp_symlink(root, "etc/modgate/modgate.conf.d/10-a.conf", "/dev/null");
        /* A mask in a lower-priority directory does not hide a higher one. */
        tmp_write(root, "run/modgate/modgate.conf.d/30-c.conf", "");
        tmp_symlink(root, "usr/lib/modgate/modgate.conf.d/30-c.conf", "/dev/null");

        l = list_main(root);
        check_paths(l, root,
                    "usr/lib/modgate/modgate.conf.d/20-b.conf",
                    "run/modgate/modgate.conf.d/30-c.conf",
                    NULL);
}

TEST(dev_null_masks_main_file) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "usr/lib/modgate/modgate.conf", "");
        tmp_symlink(root, "run/modgate/modgate.conf", "/dev/null");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "");

        /* No main file at all, and the drop-ins still apply. */
        l = list_main(root);
        check_paths(l, root, "usr/lib/modgate/modgate.conf.d/10-a.conf", NULL);
}

TEST(what_masks) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        /* An empty file is an (empty) configuration file, not a mask. */
        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "");
        /* A symlink elsewhere is followed; one to a missing file is ignored, so the lower one shows. */
        tmp_symlink(root, "etc/modgate/modgate.conf.d/20-b.conf", "../../../usr/lib/modgate/other");
        tmp_write(root, "usr/lib/modgate/other", "");
        tmp_symlink(root, "etc/modgate/modgate.conf.d/30-c.conf", "/dev/null-not");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/30-c.conf", "");
        /* Another spelling of the null device masks as "/dev/null" does. */
        tmp_symlink(root, "etc/modgate/modgate.conf.d/40-d.conf", "/dev/./null");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/40-d.conf", "");

        l = list_main(root);
        check_paths(l, root,
                    "etc/modgate/modgate.conf.d/10-a.conf",
                    "etc/modgate/modgate.conf.d/20-b.conf",
                    "usr/lib/modgate/modgate.conf.d/30-c.conf",
                    NULL);
}

TEST(ignored_entries) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf.bak", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf~", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/.hidden.conf", "");
        tmp_write(root, "etc/modgate/modgate.conf.d/notes.txt", "");
        tmp_mkdir(root, "etc/modgate/modgate.conf.d/dir.conf");
        /* A directory where the main file would be is not a main file: the next one counts. */
        tmp_mkdir(root, "etc/modgate/modgate.conf");
        tmp_write(root, "usr/lib/modgate/modgate.conf", "");

        l = list_main(root);
        check_paths(l, root,
                    "usr/lib/modgate/modgate.conf",
                    "etc/modgate/modgate.conf.d/10-a.conf",
                    NULL);
}

TEST(missing_directories) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **a = NULL, **b = NULL, **c = NULL;
        _cleanup_free_ char *nowhere = tmp_path(root, "does/not/exist");

        a = list_main(root);
        check(strv_length(a) == 0);
        b = list_main(nowhere);
        check(strv_length(b) == 0);

        /* A file where a directory is expected is skipped too. */
        tmp_write(root, "etc/modgate", "");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "");
        c = list_main(root);
        check_paths(c, root, "usr/lib/modgate/modgate.conf.d/10-a.conf", NULL);
}

TEST(root_spelling) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *slashed = NULL;

        tmp_write(root, "etc/modgate/modgate.conf", "");
        check(asprintf(&slashed, "%s//", root) > 0);
        check(conf_files_list_main(dirs, slashed, "modgate.conf", &l) == 0);
        check_paths(l, root, "etc/modgate/modgate.conf", NULL);
}

TEST(generic_list_without_main_file) {
        static const char *const load_dirs[] = { "/etc/modules-load.d", "/usr/lib/modules-load.d", NULL };
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;

        tmp_write(root, "usr/lib/modules-load.d/fuse.conf", "fuse\n");
        tmp_write(root, "usr/lib/modules-load.d/nbd.conf", "nbd\n");
        tmp_write(root, "etc/modules-load.d/nbd.conf", "# off\n");
        tmp_symlink(root, "etc/modules-load.d/fuse.conf", "/dev/null");
        tmp_write(root, "etc/modules-load.d/loop.conf", "loop\n");
        tmp_write(root, "etc/modules-load.d/modules", "");

        check(conf_files_list(load_dirs, root, ".conf", 0, SIZE_MAX, &l) == 0);
        check_paths(l, root, "etc/modules-load.d/loop.conf", "etc/modules-load.d/nbd.conf", NULL);
}

TEST(without_root_prefix) {
        static const char *const load_dirs[] = { "/etc/modules-load.d", "/usr/lib/modules-load.d", NULL };
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *found = NULL;

        tmp_write(root, "usr/lib/modules-load.d/fuse.conf", "fuse\n");
        tmp_write(root, "etc/modules-load.d/loop.conf", "loop\n");

        check(conf_files_list(load_dirs, root, ".conf", CONF_FILES_NO_ROOT_PREFIX, SIZE_MAX, &l) == 0);
        check(strv_length(l) == 2);
        check_streq(l[0], "/usr/lib/modules-load.d/fuse.conf");
        check_streq(l[1], "/etc/modules-load.d/loop.conf");
        check(conf_files_find(load_dirs, root, "fuse.conf", CONF_FILES_NO_ROOT_PREFIX, &found) == 1);
        check_streq(found, "/usr/lib/modules-load.d/fuse.conf");
}

TEST(find) {
        static char sentinel[] = "untouched";
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL, *want = NULL;
        char *b = sentinel, *c = sentinel;

        tmp_write(root, "usr/lib/modgate/a.conf", "");
        tmp_mkdir(root, "etc/modgate/a.conf");                  /* not a file: the next one counts */
        tmp_write(root, "usr/lib/modgate/b.conf", "");
        tmp_symlink(root, "run/modgate/b.conf", "/dev/null");
        tmp_symlink(root, "etc/modgate/c.conf", "/nowhere");     /* dangling: as if absent */

        check(conf_files_find(dirs, root, "a.conf", 0, &a) == 1);
        want = tmp_path(root, "usr/lib/modgate/a.conf");
        check_streq(a, want);
        check(conf_files_find(dirs, root, "b.conf", 0, &b) == 0);
        check(!b);
        check(conf_files_find(dirs, root, "c.conf", 0, &c) == -ENOENT);
        check(c == sentinel);
}

TEST(cap) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **l = NULL;
        char **over = NULL;

        /* The cap counts merged names, masks included: three names in two directories. */
        tmp_write(root, "etc/modgate/a.conf", "");
        tmp_write(root, "usr/lib/modgate/a.conf", "");
        tmp_write(root, "usr/lib/modgate/b.conf", "");
        tmp_symlink(root, "run/modgate/c.conf", "/dev/null");

        check(conf_files_list(dirs, root, ".conf", 0, 3, &l) == 0);
        check_paths(l, root, "etc/modgate/a.conf", "usr/lib/modgate/b.conf", NULL);
        check(conf_files_list(dirs, root, ".conf", 0, 2, &over) == -E2BIG);
        check(!over);
}

int main(void) {
        RUN(main_file_precedence);
        RUN(dropins_merge_and_order);
        RUN(lexical_order);
        RUN(dev_null_masks_dropin);
        RUN(dev_null_masks_main_file);
        RUN(what_masks);
        RUN(ignored_entries);
        RUN(missing_directories);
        RUN(root_spelling);
        RUN(generic_list_without_main_file);
        RUN(without_root_prefix);
        RUN(find);
        RUN(cap);
        return tests_done();
}
