/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "tests-tmp.h"
#include "tests.h"
#include "udev-rules.h"

#define STRV(...) ((char *const[]) { __VA_ARGS__, NULL })

#define H "/usr/libexec/modgate/modgate-udev"

static char *rewrite(const char *text, size_t *n, char ***subsystems, bool *unmatched) {
        char *out = NULL;

        check(udev_rules_rewrite_kmod(text, H, &out, n, subsystems, unmatched) == 0);
        check(out);
        return out;
}

TEST(rewrite_calls) {
        static const struct {
                const char *in, *out;
                size_t n;
        } cases[] = {
                /* Debian's 80-debian-compat.rules */
                { "SUBSYSTEM==\"scsi\", ENV{DEVTYPE}==\"scsi_device\", TEST!=\"[module/sg]\", RUN{builtin}+=\"kmod load sg\"\n",
                  "SUBSYSTEM==\"scsi\", ENV{DEVTYPE}==\"scsi_device\", TEST!=\"[module/sg]\", RUN+=\"" H " sg\"\n", 1 },
                /* udev's 80-drivers.rules: no name is the device's MODALIAS, as modgate-udev without one */
                { "ENV{MODALIAS}==\"?*\", RUN{builtin}+=\"kmod load\"", "ENV{MODALIAS}==\"?*\", RUN+=\"" H "\"", 1 },
                /* the operators, blanks around them and in the value, several names */
                { "A==\"1\",RUN{builtin} = \"kmod  load a b\"", "A==\"1\",RUN=\"" H " a b\"", 1 },
                { "RUN{builtin}:=\"kmod load x\", RUN{builtin}+=\"kmod load y\"",
                  "RUN:=\"" H " x\", RUN+=\"" H " y\"", 2 },
                { "RUN{builtin}+=\"kmod load $env{MODALIAS}\"", "RUN+=\"" H " $env{MODALIAS}\"", 1 },
                /* an escaped quote stays as it was written */
                { "RUN{builtin}+=\"kmod load \\\"q\\\" z\"", "RUN+=\"" H " \\\"q\\\" z\"", 1 },
                /* a continued rule: only the line with the call changes */
                { "SUBSYSTEM==\"pci\", \\\n  RUN{builtin}+=\"kmod load a\"\n", "SUBSYSTEM==\"pci\", \\\n  RUN+=\"" H " a\"\n", 1 },
                /* not calls of kmod load: left alone */
                { "# RUN{builtin}+=\"kmod load c\"\n", "# RUN{builtin}+=\"kmod load c\"\n", 0 },
                { "   # RUN{builtin}+=\"kmod load c\"", "   # RUN{builtin}+=\"kmod load c\"", 0 },
                { "IMPORT{builtin}=\"hwdb --subsystem=pci\"", "IMPORT{builtin}=\"hwdb --subsystem=pci\"", 0 },
                { "RUN{builtin}+=\"kmod loader x\"", "RUN{builtin}+=\"kmod loader x\"", 0 },
                { "RUN{builtin}+=\"kmodload x\"", "RUN{builtin}+=\"kmodload x\"", 0 },
                { "RUN{builtin}+=\"kmod\"", "RUN{builtin}+=\"kmod\"", 0 },
                { "RUN{builtin}==\"kmod load x\"", "RUN{builtin}==\"kmod load x\"", 0 },
                { "XRUN{builtin}+=\"kmod load x\"", "XRUN{builtin}+=\"kmod load x\"", 0 },
                { "RUN{builtin}+=\"kmod load x", "RUN{builtin}+=\"kmod load x", 0 },
                { "RUN{builtin}+=\"kmod load x\nRUN{builtin}+=\"kmod load y\"\n", "RUN{builtin}+=\"kmod load x\nRUN+=\"" H " y\"\n", 1 },
                { "RUN{program}+=\"kmod load x\"", "RUN{program}+=\"kmod load x\"", 0 },
                /* a key inside a value is no key */
                { "ENV{X}==\"a, RUN{builtin}+=\", RUN{builtin}+=\"kmod load z\"",
                  "ENV{X}==\"a, RUN{builtin}+=\", RUN+=\"" H " z\"", 1 },
                { "RUN{builtin}+=\"kmod load a, RUN{builtin}:=\"kmod load\"",
                  "RUN+=\"" H " a, RUN{builtin}:=\"kmod load\"", 1 },
                { "", "", 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *out = NULL;
                size_t n = 99;

                out = rewrite(cases[i].in, &n, NULL, NULL);
                check_streq(out, cases[i].out);
                check(n == cases[i].n);
        }
}

TEST(rewrite_subsystems) {
        _cleanup_strv_free_ char **s = NULL;
        _cleanup_free_ char *out = NULL;
        bool unmatched = true;
        size_t n;

        out = rewrite("SUBSYSTEM==\"scsi\", RUN{builtin}+=\"kmod load sg\"\n"
                      "SUBSYSTEM==\"scsi\", RUN{builtin}+=\"kmod load ch\"\n"
                      "# SUBSYSTEM==\"usb\", RUN{builtin}+=\"kmod load x\"\n"
                      "SUBSYSTEMS==\"usb\", \\\n SUBSYSTEM==\"tty\", RUN{builtin}+=\"kmod load y\"\n",
                      &n, &s, &unmatched);
        check(n == 3);
        check(strv_length(s) == 2);
        check_streq(s[0], "scsi");
        check_streq(s[1], "tty");
        check(!unmatched);
        free(out);
        strv_free(s);
        s = NULL;

        /* A rule that matches no subsystem: every device's event must be replayed. */
        out = rewrite("SUBSYSTEMS==\"usb\", RUN{builtin}+=\"kmod load y\"\n", &n, &s, &unmatched);
        check(n == 1 && unmatched && strv_length(s) == 0);
        free(out);
        strv_free(s);
        s = NULL;

        /* Each alternative is a subsystem to replay; a glob names none, as no match. */
        unmatched = false;
        out = rewrite("SUBSYSTEM==\"usb|pci\", RUN{builtin}+=\"kmod load y\"\n", &n, &s, &unmatched);
        check(n == 1 && !unmatched && strv_length(s) == 2);
        check_streq(s[0], "usb");
        check_streq(s[1], "pci");
        free(out);
        strv_free(s);
        s = NULL;
        out = rewrite("SUBSYSTEM==\"input*\", RUN{builtin}+=\"kmod load y\"\n", &n, &s, &unmatched);
        check(n == 1 && unmatched && strv_length(s) == 0);
}

TEST(names) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL, *b = NULL, *missing = NULL;
        UdevRuleName *names = NULL;
        size_t n = 0;
        FILE *f;

        check(asprintf(&a, "%s/a.rules", root) > 0 && asprintf(&b, "%s/b.rules", root) > 0 &&
              asprintf(&missing, "%s/missing.rules", root) > 0);
        f = fopen(a, "we");
        check(f);
        fputs("SUBSYSTEM==\"scsi\", RUN+=\"" H " sg\"\n"
              "# SUBSYSTEM==\"scsi\", RUN+=\"" H " commented\"\n"
              "KERNEL==\"mtd*ro\", \\\n RUN+=\"" H " sm_ftl ../bad x\"\n", f);
        check(fclose(f) == 0);
        f = fopen(b, "we");
        check(f);
        fputs("RUN+=\"" H "\"\nSUBSYSTEM==\"pci\", RUN+=\"" H " late\"\n"
              /* udev's own builtin, as a package's rule calls it: modgate-udev-rules' copy passes the
               * same names to modgate-udev. */
              "SUBSYSTEM==\"tifm\", RUN{builtin}+=\"kmod load tifm_sd\"\n"
              "ENV{MODALIAS}==\"?*\", RUN{builtin}+=\"kmod load\"\n", f);
        check(fclose(f) == 0);

        /* Every file is read, not only the first. */
        check(udev_rule_names_read((const char *const[]) { missing, a, b, NULL }, &names, &n) == 0);
        check(n == 5);
        check_streq(names[0].name, "sg");
        check(strv_equal(names[0].subsystems, STRV("scsi")));
        check(!names[0].kernels);
        check_streq(names[1].name, "sm_ftl");
        check(strv_equal(names[1].kernels, STRV("mtd*ro")));
        check(!names[1].subsystems);
        check_streq(names[2].name, "x");
        check_streq(names[3].name, "late");
        check(strv_equal(names[3].subsystems, STRV("pci")));
        check_streq(names[4].name, "tifm_sd");
        check(strv_equal(names[4].subsystems, STRV("tifm")));
        udev_rule_names_free(names, n);
}

/* Every match of a line counts, and each of a value's alternatives. */
TEST(names_all_matches) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *a = NULL;
        UdevRuleName *names = NULL;
        size_t n = 0;
        FILE *f;

        check(asprintf(&a, "%s/multi.rules", root) > 0);
        f = fopen(a, "we");
        check(f);
        fputs("SUBSYSTEM==\"module\", KERNEL==\"parport_pc\", RUN+=\"" H " ppdev\"\n"
              "SUBSYSTEM==\"usb|pci\", KERNEL==\"x*\", KERNEL==\"*y\", RUN+=\"" H " multi\"\n"
              "SUBSYSTEM==\"pci\", SUBSYSTEM==\"usb\", RUN+=\"" H " never\"\n", f);
        check(fclose(f) == 0);
        check(udev_rule_names_read((const char *const[]) { a, NULL }, &names, &n) == 0);
        check(n == 3);

        /* parport_pc's module event, not another module's nor another subsystem's device. */
        check_streq(names[0].name, "ppdev");
        check(udev_rule_name_applies(&names[0], "module", "parport_pc"));
        check(!udev_rule_name_applies(&names[0], "module", "lp"));
        check(!udev_rule_name_applies(&names[0], "platform", "parport_pc"));
        check(!udev_rule_name_applies(&names[0], NULL, "parport_pc"));

        /* Either subsystem; both kernel globs. */
        check(strv_equal(names[1].kernels, STRV("x*", "*y")));
        check(udev_rule_name_applies(&names[1], "usb", "xay"));
        check(udev_rule_name_applies(&names[1], "pci", "xy"));
        check(!udev_rule_name_applies(&names[1], "pci", "xa"));         /* the second KERNEL== fails */
        check(!udev_rule_name_applies(&names[1], "input", "xy"));
        check(!udev_rule_name_applies(&names[1], "usb|pci", "xy"));     /* '|' separates, matches nothing */

        /* Two SUBSYSTEM== that no device meets at once. */
        check(!udev_rule_name_applies(&names[2], "pci", "a"));
        check(!udev_rule_name_applies(&names[2], "usb", "a"));

        check(udev_rule_value_matches("a|b*|c", "bee"));
        check(udev_rule_value_matches("a||c", "c"));
        check(!udev_rule_value_matches("a|b", "ab"));
        udev_rule_names_free(names, n);
}

int main(void) {
        RUN(rewrite_calls);
        RUN(rewrite_subsystems);
        RUN(names);
        RUN(names_all_matches);
        return tests_done();
}
