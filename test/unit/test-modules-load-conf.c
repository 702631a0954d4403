/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "modules-load-conf.h"
#include "tests.h"

static void check_list(const StrList *l, const char *const *want) {
        size_t n = 0;

        for (; want[n]; n++) {
                check(n < l->n);
                check_streq(l->items[n], want[n]);
        }
        if (l->n != n)
                fprintf(stderr, "expected %zu entries, got %zu\n", n, l->n);
        check(l->n == n);
}

TEST(text) {
        _cleanup_(str_list_done) StrList l = {};

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
        check_list(&l, (const char *const[]) { "vxlan", "tun", "bonding",
                                               "nf_conntrack # not a comment: the whole line is the name",
                                               "last-without-newline", NULL });
}

TEST(text_empty) {
        _cleanup_(str_list_done) StrList l = {};

        check(modules_load_parse_text("", &l) == 0);
        check(modules_load_parse_text("\n\n#x\n", &l) == 0);
        check(l.n == 0);
}

TEST(cmdline) {
        _cleanup_(str_list_done) StrList host = {}, initrd = {};
        const char *cmdline = "BOOT_IMAGE=/vmlinuz root=UUID=x ro modules_load=vxlan,tun "
                              "rd.modules_load=initrd_only modules-load=dashed,,empty_skipped, "
                              "quiet \"modules_load=quoted,two\" modules_load modules_load_x=no "
                              "xmodules_load=no rd.modules-load=initrd_dashed modules_load=";

        check(modules_load_parse_cmdline(cmdline, false, &host) == 0);
        check_list(&host, (const char *const[]) { "vxlan", "tun", "dashed", "empty_skipped", "quoted", "two",
                                                  NULL });

        check(modules_load_parse_cmdline(cmdline, true, &initrd) == 0);
        check_list(&initrd, (const char *const[]) { "vxlan", "tun", "initrd_only", "dashed", "empty_skipped",
                                                    "quoted", "two", "initrd_dashed", NULL });
}

TEST(cmdline_quotes) {
        _cleanup_(str_list_done) StrList l = {};

        check(modules_load_parse_cmdline("  modules_load='a,b' x=\"y z\" modules_load=c\n", false, &l) == 0);
        check_list(&l, (const char *const[]) { "a", "b", "c", NULL });
}

static char *root = NULL;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int rm_rf(const char *path) {
        return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *path, const char *text) {
        char full[4096];
        int fd;

        snprintf(full, sizeof(full), "%s%s", root, path);
        fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

static void mkdirs(const char *path) {
        char full[4096];

        snprintf(full, sizeof(full), "%s%s", root, path);
        for (char *p = full + strlen(root) + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(full, 0755);
                        *p = '/';
                }
        check(mkdir(full, 0755) >= 0 || errno == EEXIST);
}

static void link_to(const char *target, const char *path) {
        char full[4096];

        snprintf(full, sizeof(full), "%s%s", root, path);
        check(symlink(target, full) >= 0);
}

TEST(precedence_and_masking) {
        _cleanup_(str_list_done) StrList files = {};
        char tmpl[] = "/tmp/test-modules-load-XXXXXX";

        root = mkdtemp(tmpl);
        check(root);
        for (const char *const *d = MODULES_LOAD_DIRS; *d; d++)
                mkdirs(*d);

        put("/usr/lib/modules-load.d/a.conf", "a\n");
        put("/usr/lib/modules-load.d/b.conf", "b-vendor\n");
        put("/etc/modules-load.d/b.conf", "b-admin\n");            /* hides the vendor's b.conf */
        put("/usr/lib/modules-load.d/c.conf", "c\n");
        link_to("/dev/null", "/etc/modules-load.d/c.conf");          /* masks it */
        put("/run/modules-load.d/d.conf", "d-run\n");
        put("/usr/local/lib/modules-load.d/d.conf", "d-local\n");    /* /run comes first */
        put("/usr/local/lib/modules-load.d/e.conf", "e\n");
        put("/usr/lib/modules-load.d/f.conf", "f\n");
        link_to("/dev/null", "/run/modules-load.d/f.conf");
        put("/usr/lib/modules-load.d/0-first.conf", "first\n");
        put("/usr/lib/modules-load.d/.hidden.conf", "hidden\n");
        put("/usr/lib/modules-load.d/not-conf.txt", "x\n");
        put("/usr/lib/modules-load.d/.conf", "x\n");
        mkdirs("/usr/lib/modules-load.d/dir.conf");
        link_to("/dev/null", "/etc/modules-load.d/nothing-to-mask.conf");

        check(modules_load_conf_files(root, MODULES_LOAD_DIRS, &files) == 0);
        check_list(&files, (const char *const[]) {
                "/usr/lib/modules-load.d/0-first.conf",
                "/usr/lib/modules-load.d/a.conf",
                "/etc/modules-load.d/b.conf",
                "/run/modules-load.d/d.conf",
                "/usr/local/lib/modules-load.d/e.conf",
                NULL });

        check(rm_rf(root) == 0);
}

TEST(missing_dirs) {
        _cleanup_(str_list_done) StrList files = {};

        check(modules_load_conf_files("/nonexistent-modgate-root", MODULES_LOAD_DIRS, &files) == 0);
        check(files.n == 0);
}

int main(void) {
        RUN(text);
        RUN(text_empty);
        RUN(cmdline);
        RUN(cmdline_quotes);
        RUN(precedence_and_masking);
        RUN(missing_dirs);
        return tests_done();
}
