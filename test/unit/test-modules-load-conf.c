/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>

#include "conf-files.h"
#include "modules-load-conf.h"
#include "strv.h"
#include "tests-tmp.h"

static void check_list(char **l, const char *const *want) {
        size_t n = 0;

        for (; want[n]; n++) {
                check(n < strv_length(l));
                check_streq(l[n], want[n]);
        }
        if (strv_length(l) != n)
                fprintf(stderr, "expected %zu entries, got %zu\n", n, strv_length(l));
        check(strv_length(l) == n);
}

TEST(text) {
        _cleanup_strv_free_ char **l = NULL;

        check(modules_load_parse_text("# comment\n"
                                      "; also a comment\n"
                                      "\n"
                                      "   \t\n"
                                      "vxlan\n"
                                      "  tun  \n"
                                      "\tbonding\r\n"
                                      "  # indented comment\n"
                                      "nf_conntrack # not a comment: the whole line is the name\n"
                                      "last-without-newline",
                                      &l) == 0);
        check_list(l, (const char *const[]) { "vxlan", "tun", "bonding",
                                              "nf_conntrack # not a comment: the whole line is the name",
                                              "last-without-newline", NULL });
}

TEST(text_empty) {
        _cleanup_strv_free_ char **l = NULL;

        check(modules_load_parse_text("", &l) == 0);
        check(modules_load_parse_text("\n\n#x\n", &l) == 0);
        check(strv_length(l) == 0);
}

TEST(cmdline) {
        _cleanup_strv_free_ char **host = NULL, **initrd = NULL;
        const char *cmdline = "BOOT_IMAGE=/vmlinuz root=UUID=x ro modules_load=vxlan,tun "
                              "rd.modules_load=initrd_only modules-load=dashed,,empty_skipped, "
                              "quiet \"modules_load=quoted,two\" modules_load modules_load_x=no "
                              "xmodules_load=no rd.modules-load=initrd_dashed modules_load=";

        check(modules_load_parse_cmdline(cmdline, false, &host) == 0);
        check_list(host, (const char *const[]) { "vxlan", "tun", "dashed", "empty_skipped", "quoted", "two",
                                                 NULL });

        check(modules_load_parse_cmdline(cmdline, true, &initrd) == 0);
        check_list(initrd, (const char *const[]) { "vxlan", "tun", "initrd_only", "dashed", "empty_skipped",
                                                   "quoted", "two", "initrd_dashed", NULL });
}

TEST(cmdline_quotes) {
        _cleanup_strv_free_ char **l = NULL;

        check(modules_load_parse_cmdline("  modules_load='a,b' x=\"y z\" modules_load=c\n", false, &l) == 0);
        check_list(l, (const char *const[]) { "a", "b", "c", NULL });
}

TEST(entries_cap) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *text = malloc(2 * MODULES_LOAD_ENTRIES_MAX + 3);

        check(text);
        for (size_t i = 0; i < MODULES_LOAD_ENTRIES_MAX; i++)
                memcpy(text + 2 * i, "x\n", 2);
        text[2 * MODULES_LOAD_ENTRIES_MAX] = '\0';
        check(modules_load_parse_text(text, &l) == 0);
        check(strv_length(l) == MODULES_LOAD_ENTRIES_MAX);
        check(modules_load_parse_text("y\n", &l) == -E2BIG);
        check(modules_load_parse_cmdline("modules_load=y", false, &l) == -E2BIG);
}

/* What modgate-modules-load asks conf_files_list() for: the files of the boot list, named as the
 * booted system sees them. */
static int list(const char *root, char ***ret) {
        return conf_files_list(MODULES_LOAD_DIRS, root, ".conf", CONF_FILES_NO_ROOT_PREFIX,
                               MODULES_LOAD_FILES_MAX, ret);
}

static char **boot_list_files(const char *root) {
        char **files = NULL;

        check(list(root, &files) == 0);
        return files;
}

/* And for a file named on its command line. */
static int find(const char *root, const char *name, char **ret) {
        return conf_files_find(MODULES_LOAD_DIRS, root, name, CONF_FILES_NO_ROOT_PREFIX, ret);
}

TEST(precedence_and_masking) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **files = NULL;

        tmp_write(root, "usr/lib/modules-load.d/a.conf", "a\n");
        tmp_write(root, "usr/lib/modules-load.d/b.conf", "b-vendor\n");
        tmp_write(root, "etc/modules-load.d/b.conf", "b-admin\n");            /* hides the vendor's b.conf */
        tmp_write(root, "usr/lib/modules-load.d/c.conf", "c\n");
        tmp_symlink(root, "etc/modules-load.d/c.conf", "/dev/null");          /* masks it */
        tmp_write(root, "run/modules-load.d/d.conf", "d-run\n");
        tmp_write(root, "usr/local/lib/modules-load.d/d.conf", "d-local\n");  /* /run comes first */
        tmp_write(root, "usr/local/lib/modules-load.d/e.conf", "e\n");
        tmp_write(root, "usr/lib/modules-load.d/f.conf", "f\n");
        tmp_symlink(root, "run/modules-load.d/f.conf", "/dev/null");
        tmp_write(root, "usr/lib/modules-load.d/g.conf", "g\n");
        tmp_symlink(root, "etc/modules-load.d/g.conf", "/dev/./null");        /* the null device too */
        tmp_write(root, "usr/lib/modules-load.d/0-first.conf", "first\n");
        tmp_write(root, "usr/lib/modules-load.d/.hidden.conf", "hidden\n");
        tmp_write(root, "usr/lib/modules-load.d/not-conf.txt", "x\n");
        tmp_write(root, "usr/lib/modules-load.d/.conf", "x\n");
        tmp_mkdir(root, "usr/lib/modules-load.d/dir.conf");
        tmp_symlink(root, "etc/modules-load.d/nothing-to-mask.conf", "/dev/null");

        files = boot_list_files(root);
        check_list(files, (const char *const[]) {
                "/usr/lib/modules-load.d/0-first.conf",
                "/usr/lib/modules-load.d/a.conf",
                "/etc/modules-load.d/b.conf",
                "/run/modules-load.d/d.conf",
                "/usr/local/lib/modules-load.d/e.conf",
                NULL });
}

TEST(argument_lookup) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *path = NULL, *masked = NULL, *none = NULL;

        tmp_write(root, "usr/lib/modules-load.d/x.conf", "x\n");
        tmp_mkdir(root, "etc/modules-load.d/x.conf");                        /* not a file: skipped */
        tmp_write(root, "usr/lib/modules-load.d/y.conf", "y\n");
        tmp_symlink(root, "run/modules-load.d/y.conf", "/dev/null");

        check(find(root, "x.conf", &path) == 1);
        check_streq(path, "/usr/lib/modules-load.d/x.conf");
        check(find(root, "y.conf", &masked) == 0);
        check(!masked);
        check(find(root, "z.conf", &none) == -ENOENT);
}

TEST(files_cap) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_strv_free_ char **files = NULL;
        char **over = NULL;

        /* The same names in every directory are MODULES_LOAD_FILES_MAX names, not four times as many. */
        for (unsigned i = 0; i < MODULES_LOAD_FILES_MAX; i++)
                for (const char *const *d = MODULES_LOAD_DIRS; *d; d++) {
                        _cleanup_free_ char *p = NULL;

                        check(asprintf(&p, "%s/%04u.conf", *d + 1, i) > 0);
                        tmp_write(root, p, "");
                }
        files = boot_list_files(root);
        check(strv_length(files) == MODULES_LOAD_FILES_MAX);

        tmp_symlink(root, "run/modules-load.d/masked.conf", "/dev/null");
        check(list(root, &over) == -E2BIG);
        check(!over);
}

TEST(missing_dirs) {
        _cleanup_strv_free_ char **files = boot_list_files("/nonexistent-modgate-root");

        check(strv_length(files) == 0);
}

int main(void) {
        RUN(text);
        RUN(text_empty);
        RUN(cmdline);
        RUN(cmdline_quotes);
        RUN(entries_cap);
        RUN(precedence_and_masking);
        RUN(argument_lookup);
        RUN(files_cap);
        RUN(missing_dirs);
        return tests_done();
}
