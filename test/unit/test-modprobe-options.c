/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "kernel.h"
#include "modprobe-options.h"
#include "tests-tmp.h"

static char *sources(const char *root, const char *cmdline, const char *name) {
        char *s = NULL;

        check(modprobe_options_sources(root, cmdline, name, &s) == 0);
        return s;
}

TEST(files_in_order_with_lines) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        tmp_write(root, "/etc/modprobe.d/50-local.conf", "# mine\n\noptions dummy numdummies=2\n");
        /* The same name lower down is hidden; another name is read, after, by name. */
        tmp_write(root, "/usr/lib/modprobe.d/50-local.conf", "options dummy numdummies=9\n");
        tmp_write(root, "/usr/lib/modprobe.d/systemd.conf",
                  "blacklist x\noptions bonding max_bonds=0\noptions  dummy  numdummies=0\n");
        /* A statement wrapped over lines is named by its first; its continuation is not a statement. */
        tmp_write(root, "/usr/local/lib/modprobe.d/60-wrap.conf",
                  "options eql \\\noptions dummy x=1\noptions dummy y=1\n");
        /* Not read: /run, which libkmod reads by default, and /lib, which is /usr/lib on a merged /usr. */
        tmp_write(root, "/run/modprobe.d/10-run.conf", "options dummy attacker=1\n");
        tmp_write(root, "/lib/modprobe.d/10-lib.conf", "options dummy lib=1\n");
        a = sources(root, NULL, "dummy");
        check_streq(a, "/etc/modprobe.d/50-local.conf:3, /usr/local/lib/modprobe.d/60-wrap.conf:3, "
                       "/usr/lib/modprobe.d/systemd.conf:3");
        b = sources(root, NULL, "bonding");
        check_streq(b, "/usr/lib/modprobe.d/systemd.conf:2");
        c = sources(root, NULL, "eql");
        check_streq(c, "/usr/local/lib/modprobe.d/60-wrap.conf:1");
}

TEST(statements_as_libkmod_reads_them) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL, *text = NULL;
        char *comment = NULL;

        /* A line longer than any buffer is one line; "options NAME" with nothing after is refused by
         * libkmod; a backslash before another byte stands for it (an escaped backslash ends no line);
         * a carriage return is part of the line. */
        comment = malloc(5001);
        check(comment);
        memset(comment, 'x', 5000);
        comment[5000] = '\0';
        check(asprintf(&text, "# %soptions dummy a=1\n"
                              "options dummy\n"
                              "options dummy \n"
                              "options dummy b=1\\\\\n"
                              "options dummy c=1\n"
                              "options du\\mmy d=1\n"
                              "options dummy\r\n"
                              "options\tdummy\te=1\r\n", comment) > 0);
        free(comment);
        tmp_write(root, "/etc/modprobe.d/x.conf", text);
        a = sources(root, NULL, "dummy");
        check_streq(a, "/etc/modprobe.d/x.conf:4, /etc/modprobe.d/x.conf:5, /etc/modprobe.d/x.conf:6, "
                       "/etc/modprobe.d/x.conf:8");
}

TEST(names_alike_and_cmdline) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        tmp_write(root, "/usr/lib/modprobe.d/x.conf", "options snd-hda-intel model=auto\n");
        a = sources(root, "quiet snd_hda_intel.power_save=1 root=/dev/vda", "snd_hda_intel");
        check_streq(a, "/usr/lib/modprobe.d/x.conf:1, the kernel command line");
        /* As libkmod reads the command line: "MODULE.FLAG" sets a boolean; '=' before the '.', a second
         * '.' before the value, nothing after the '.', or another module's word sets nothing. */
        b = sources(root, "snd_hda_intel=1 snd_hda_intel.a.b=1 snd_hda_intel. dummy.x=1 .y=1", "snd_hda_intel");
        check_streq(b, "/usr/lib/modprobe.d/x.conf:1");
        free(b);
        b = sources(root, "quiet snd-hda-intel.flag", "snd_hda_intel");
        check_streq(b, "/usr/lib/modprobe.d/x.conf:1, the kernel command line");
        free(b);
        /* A word in quotes, as grub passes a value with blanks; a quoted value's blanks are not words. */
        b = sources(root, "\"snd_hda_intel.dyndbg=file x.c +p\"", "snd_hda_intel");
        check_streq(b, "/usr/lib/modprobe.d/x.conf:1, the kernel command line");
        free(b);
        b = sources(root, "dummy.x=\"a snd_hda_intel.y=1\" \"b", "snd_hda_intel");
        check_streq(b, "/usr/lib/modprobe.d/x.conf:1");
        c = sources(root, "quiet", "nothing_sets_it");
        check(c == NULL);
}

TEST(error_classes) {
        check_streq(kernel_error_class(EKEYREJECTED), "signature");
        check_streq(kernel_error_class(ENOKEY), "signature");
        check_streq(kernel_error_class(EPERM), "refused");
        check_streq(kernel_error_class(ENOEXEC), "format");
        check_streq(kernel_error_class(ENOENT), "symbol");
        check_streq(kernel_error_class(EEXIST), "busy");
        check_streq(kernel_error_class(ENOMEM), "resource");
        check_streq(kernel_error_class(ENODEV), "init");
}

int main(void) {
        RUN(files_in_order_with_lines);
        RUN(statements_as_libkmod_reads_them);
        RUN(names_alike_and_cmdline);
        RUN(error_classes);
        return tests_done();
}
