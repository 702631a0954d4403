/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The kernel command line split by the rules of each program that acts on an option: the kernel's,
 * libkmod's and systemd's; and the readers that use them (the policy's options, roothash= and
 * usrhash=, modules_load=). */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "kernel-cmdline.h"
#include "macro.h"
#include "policy.h"
#include "strv.h"
#include "tests.h"

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B "fedcba9876543210fedcba9876543210"

/* The words kernel_next_arg() finds, each after kernel_arg_normalize(), joined by '|'. */
static char *kernel_words(const char *cmdline) {
        char *out = calloc(1, strlen(cmdline) * 2 + 2);

        check(out);
        for (const char *p = cmdline;;) {
                char word[256];
                size_t n = kernel_next_arg(&p);

                if (n == 0)
                        return out;
                check(n < sizeof(word));
                memcpy(word, p, n);
                word[n] = '\0';
                p += n;
                kernel_arg_normalize(word);
                if (out[0])
                        strcat(out, "|");
                strcat(out, word);
        }
}

TEST(kernel_rules) {
        static const char *const cases[][2] = {
                { "  a b\tc\n", "a|b|c" },
                /* Every isspace() blank separates, \v and \f too. */
                { "a\vb\fc\rd", "a|b|c|d" },
                /* A double quote keeps blanks; a leading one quotes the word and goes with its pair. */
                { "\"module-blacklist=a b\" c", "module_blacklist=a b|c" },
                { "opt=\"x y\" z", "opt=x y|z" },
                /* '-' and '_' are alike in the key, never in the value. */
                { "dyndbg-x=a-b", "dyndbg_x=a-b" },
                /* A quote inside a value is kept: only a value that opens with one loses them. */
                { "opt=a\"b c\"", "opt=a\"b c\"" },
                /* Single quotes are not the kernel's. */
                { "opt='x y'", "opt='x|y'" },
                { "", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *w = kernel_words(cases[i][0]);

                check_streq(w, cases[i][1]);
        }
}

TEST(kmod_rules) {
        check(kmod_cmdline_sets_options("ro dummy.numdummies=2 quiet", "dummy"));
        check(kmod_cmdline_sets_options("dummy.flag", "dummy"));
        check(kmod_cmdline_sets_options("snd-hda-intel.model=x", "snd_hda_intel"));
        check(kmod_cmdline_sets_options("\"dummy.x=1\"", "dummy"));
        check(kmod_cmdline_sets_options("dummy.x=\"a b\" quiet", "dummy"));
        check(!kmod_cmdline_sets_options("dummy.x=1", "dummy2"));
        /* No option: no parameter, '=' before the '.', a second '.', a quote inside the name. */
        check(!kmod_cmdline_sets_options("dummy. quiet", "dummy"));
        check(!kmod_cmdline_sets_options("dummy=1", "dummy"));
        check(!kmod_cmdline_sets_options("x=dummy.y", "dummy"));
        check(!kmod_cmdline_sets_options("dummy.a.b=1", "dummy"));
        check(!kmod_cmdline_sets_options("dum\"my.x=1\"", "dummy"));
        /* A quote left open hides the rest. */
        check(!kmod_cmdline_sets_options("\"quiet dummy.x=1", "dummy"));
        /* modprobe.blacklist= is no option of a module named modprobe. */
        check(!kmod_cmdline_sets_options("modprobe.blacklist=dummy", "modprobe"));
        check(!kmod_cmdline_sets_options(NULL, "dummy"));
}

/* The words systemd_cmdline_next_word() finds, joined by '|'. */
static char *systemd_words(const char *cmdline) {
        _cleanup_free_ char *word = malloc(strlen(cmdline) + 1);
        char *out = calloc(1, strlen(cmdline) * 2 + 2);

        check(word && out);
        for (const char *p = cmdline; (p = systemd_cmdline_next_word(p, word));) {
                if (out[0])
                        strcat(out, "|");
                strcat(out, word);
        }
        return out;
}

TEST(systemd_rules) {
        static const char *const cases[][2] = {
                { " a  b\tc\r\nd ", "a|b|c|d" },
                /* \v is no blank for systemd. */
                { "a\vb", "a\vb" },
                /* Single and double quotes, anywhere in a word, and gone. */
                { "x='a b' \"y=c d\" z=e\"f g\"h", "x=a b|y=c d|z=ef gh" },
                { "x=\"it's\"", "x=it's" },
                /* A quote left open runs to the end. */
                { "x=\"a b", "x=a b" },
                /* A backslash stays, and the byte after it is plain; one at the very end goes. */
                { "a\\ b c\\\"d e\" f\\", "a\\ b|c\\\"d|e f" },
                { "", "" },
                { "   ", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *w = systemd_words(cases[i][0]);

                check_streq(w, cases[i][1]);
        }

        check_streq(systemd_cmdline_value("modules-load=a,b", "modules_load"), "a,b");
        check_streq(systemd_cmdline_value("modules_load=", "modules_load"), "");
        check(!systemd_cmdline_value("modules_load", "modules_load"));
        check(!systemd_cmdline_value("modules_loadx=1", "modules_load"));
        check(!systemd_cmdline_value("modules=1", "modules_load"));
        /* Only '-' and '_' are alike: not '.', not case. */
        check(!systemd_cmdline_value("modgate-mode=x", "modgate.mode"));
        check(!systemd_cmdline_value("RootHash=x", "roothash"));
}

/* Every value of any of the keys, in the command line's order, read by systemd's rules. */
TEST(systemd_values) {
        static const char *const keys[] = { "a", "b-c", NULL };
        _cleanup_strv_free_ char **v = NULL, **none = NULL;

        check(systemd_cmdline_values("a=1 x=2 b_c='3 4' \"a=5\" a ax=6 b-c=", keys, &v) == 0);
        check(strv_length(v) == 4);
        check_streq(v[0], "1");
        check_streq(v[1], "3 4");
        check_streq(v[2], "5");
        check_streq(v[3], "");
        check(systemd_cmdline_values("quiet x='a=1'", keys, &none) == 0);
        check(!none);
}

static void check_hashes(const char *cmdline, const char *const *want, size_t n) {
        _cleanup_strv_free_ char **l = NULL;

        check(config_cmdline_root_hashes(cmdline, &l) == 0);
        check(strv_length(l) == n);
        for (size_t i = 0; i < n; i++)
                check_streq(l[i], want[i]);
}

/* roothash= and usrhash= as systemd-veritysetup-generator reads them, which the old split on blanks
 * alone did not: it kept the quotes (so a quoted hash was not allowed), and it took a hash out of
 * another option's quoted value. */
TEST(root_hashes) {
        check_hashes("roothash=\"" HASH_A "\" usrhash='" HASH_B "'",
                     (const char *const[]) { HASH_A, HASH_B }, 2);
        check_hashes("\"roothash=" HASH_A "\"", (const char *const[]) { HASH_A }, 1);
        check_hashes("quiet\rroothash=" HASH_A, (const char *const[]) { HASH_A }, 1);
        check_hashes("systemd.setenv=\"X=1 roothash=" HASH_A " Y=2\"", NULL, 0);
        check_hashes("x='a roothash=" HASH_A " b' usrhash=" HASH_B, (const char *const[]) { HASH_B }, 1);
        /* Uppercase hex is the same hash; a malformed one and a repeated one are left out. */
        check_hashes("roothash=FEDCBA9876543210FEDCBA9876543210 usrhash=" HASH_B " roothash=xyz",
                     (const char *const[]) { HASH_B }, 1);
}

/* modgate.mode= is read by systemd's rules, module_blacklist= by the kernel's. */
TEST(policy_options) {
        _cleanup_strv_free_ char **ignored = NULL;
        Policy p;

        policy_init(&p);
        check(policy_add_cmdline(&p, "modgate.mode='permissive' module_blacklist='a,b'", &ignored) == 0);
        check(p.mode == POLICY_PERMISSIVE);
        check_streq(p.mode_rule.option, "modgate.mode=permissive");
        /* The kernel keeps single quotes: no module is named 'a or b'. */
        check(strv_length(ignored) == 2);
        check_streq(ignored[0], "module_blacklist='a");
        check_streq(ignored[1], "module_blacklist=b'");
        policy_done(&p);

        ignored = strv_free(ignored);
        policy_init(&p);
        /* Inside another option's quoted value is no option of its own, by either rules; the last
         * modgate.mode= counts. */
        check(policy_add_cmdline(&p, "x=\"module_blacklist=c modgate.mode=permissive\" "
                                 "modgate.mode=permissive modgate.mode=enforce", &ignored) == 0);
        check(p.mode == POLICY_ENFORCE && p.global.n_rules == 0 && !ignored);
        policy_done(&p);
}

TEST(read) {
        char path[] = "/tmp/test-kernel-cmdline-XXXXXX";
        _cleanup_free_ char *a = NULL, *b = NULL, *big = malloc(KERNEL_CMDLINE_MAX + 1), *c = NULL;
        int fd = mkstemp(path);

        check(fd >= 0 && big);
        check(write(fd, "ro quiet\n", 9) == 9);
        check(kernel_cmdline_read(path, &a) == 0);
        check_streq(a, "ro quiet");
        check(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
        check(write(fd, "x", 1) == 1);
        check(kernel_cmdline_read(path, &b) == 0);
        check_streq(b, "x");
        memset(big, 'x', KERNEL_CMDLINE_MAX + 1);
        check(lseek(fd, 0, SEEK_SET) == 0);
        check(write(fd, big, KERNEL_CMDLINE_MAX + 1) == KERNEL_CMDLINE_MAX + 1);
        check(kernel_cmdline_read(path, &c) == -EFBIG && !c);
        check(close(fd) == 0 && unlink(path) == 0);
        check(kernel_cmdline_read(path, &c) == -ENOENT);
}

int main(void) {
        RUN(kernel_rules);
        RUN(kmod_rules);
        RUN(systemd_rules);
        RUN(systemd_values);
        RUN(root_hashes);
        RUN(policy_options);
        RUN(read);
        return tests_done();
}
