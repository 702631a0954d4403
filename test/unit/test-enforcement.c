/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "enforcement.h"
#include "tests-tmp.h"
#include "tests.h"

#define SECFS "sys/kernel/security/"
#define RELEASE "6.12.0-test-amd64"

/* A kernel that enforces everything it can: the tree the other cases take something away from. */
static char *full_tree(void) {
        char *root = tmp_root_new();

        tmp_write(root, "sys/module/module/parameters/sig_enforce", "Y\n");
        tmp_write(root, "proc/sys/kernel/osrelease", RELEASE "\n");
        tmp_write(root, "boot/config-" RELEASE, "CONFIG_MODULES=y\nCONFIG_MODULE_SIG=y\n"
                                                 "CONFIG_MODULE_SIG_FORCE=y\nCONFIG_MODULE_SIG_ALL=y\n");
        tmp_write(root, SECFS "lsm", "lockdown,capability,landlock,yama,loadpin,ipe,bpf,ima,evm");
        tmp_write(root, SECFS "lockdown", "none [integrity] confidentiality\n");
        tmp_write(root, "proc/sys/kernel/loadpin/enforce", "1\n");
        tmp_write(root, SECFS "loadpin/dm-verity", "");
        tmp_write(root, SECFS "ipe/enforce", "1");
        tmp_write(root, SECFS "ipe/policies/Other_Policy/active", "0");
        tmp_write(root, SECFS "ipe/policies/Ex_Policy/active", "1");
        tmp_write(root, SECFS "ima/policy", "measure func=MODULE_CHECK \n"
                                            "appraise func=MODULE_CHECK appraise_type=imasig \n");
        tmp_write(root, "proc/sys/kernel/modules_disabled", "0\n");
        return root;
}

static void rm(const char *root, const char *path) {
        _cleanup_free_ char *p = tmp_path(root, path);

        check(unlink(p) == 0);
}

static void rm_tree(const char *root, const char *path) {
        _cleanup_free_ char *p = tmp_path(root, path);

        check(nftw(p, tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

static Enforcement read_tree(const char *root) {
        Enforcement e;

        check(enforcement_read(root, &e) == 0);
        return e;
}

static void check_line(const char *root, const char *expected) {
        _cleanup_free_ char *s = NULL;
        Enforcement e = read_tree(root);

        check(enforcement_to_string(&e, &s) == 0);
        check_streq(s, expected);
}

static bool is(Reading r, Probe value, int error) {
        return r.value == value && r.error == error;
}

TEST(everything_enforced) {
        _cleanup_tmp_root_ char *root = full_tree();
        Enforcement e = read_tree(root);

        check(is(e.securityfs, PROBE_YES, 0));
        check(is(e.sig_enforce, PROBE_YES, 0));
        check(is(e.sig_force, PROBE_YES, 0));
        check(e.lockdown == LOCKDOWN_INTEGRITY && e.lockdown_error == 0);
        check(is(e.loadpin, PROBE_YES, 0));
        check(is(e.loadpin_enforce, PROBE_YES, 0));
        check(is(e.loadpin_verity, PROBE_YES, 0));
        check(is(e.loadpin_pinned, PROBE_UNKNOWN, -ENODATA));
        check(is(e.ipe, PROBE_YES, 0));
        check(is(e.ipe_enforce, PROBE_YES, 0));
        check(is(e.ipe_policy, PROBE_YES, 0));
        check_streq(e.ipe_policy_name, "Ex_Policy");
        check(is(e.ima_module_appraisal, PROBE_YES, 0));
        check(is(e.modules_disabled, PROBE_NO, 0));
        check_line(root, "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");
}

TEST(signatures) {
        _cleanup_tmp_root_ char *root = full_tree();
        Enforcement e;

        tmp_write(root, "boot/config-" RELEASE, "CONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\n");
        e = read_tree(root);
        check(is(e.sig_enforce, PROBE_YES, 0) && is(e.sig_force, PROBE_NO, 0));
        check_line(root, "module signatures: enforced (cannot be turned off, not forced by the kernel); "
                         "lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");

        /* Only the whole line counts, not a comment or another option that contains it. */
        tmp_write(root, "boot/config-" RELEASE, "# CONFIG_MODULE_SIG_FORCE=y\nCONFIG_MODULE_SIG_FORCE=yes\n"
                                                 "XCONFIG_MODULE_SIG_FORCE=y");
        check(is(read_tree(root).sig_force, PROBE_NO, 0));
        tmp_write(root, "boot/config-" RELEASE, "CONFIG_X=y\nCONFIG_MODULE_SIG_FORCE=y");
        check(is(read_tree(root).sig_force, PROBE_YES, 0));

        tmp_write(root, "sys/module/module/parameters/sig_enforce", "N\n");
        tmp_write(root, "boot/config-" RELEASE, "# CONFIG_MODULE_SIG_FORCE is not set\n");
        e = read_tree(root);
        check(is(e.sig_enforce, PROBE_NO, 0) && is(e.sig_force, PROBE_NO, 0));

        /* The configuration of another kernel says nothing about this one. */
        rm(root, "boot/config-" RELEASE);
        tmp_write(root, "boot/config-6.1.0-other", "CONFIG_MODULE_SIG_FORCE=y\n");
        e = read_tree(root);
        check(is(e.sig_enforce, PROBE_NO, 0) && is(e.sig_force, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: not enforced; lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");

        tmp_write(root, "sys/module/module/parameters/sig_enforce", "Y\n");
        check(is(read_tree(root).sig_force, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: enforced (cannot be turned off, forced by the kernel: unknown); "
                         "lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");

        rm(root, "proc/sys/kernel/osrelease");
        check(is(read_tree(root).sig_force, PROBE_UNKNOWN, -ENOENT));

        /* No such parameter where sysfs is there: a kernel that checks no module signature. */
        rm(root, "sys/module/module/parameters/sig_enforce");
        check(is(read_tree(root).sig_enforce, PROBE_ABSENT, 0));
        check_line(root, "module signatures: not supported by the kernel; lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");

        /* No sysfs at all: nothing is known. */
        rm_tree(root, "sys/module");
        check(is(read_tree(root).sig_enforce, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: unknown (No such file or directory); lockdown: integrity; "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                         "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0");

        tmp_write(root, "sys/module/module/parameters/sig_enforce", "1\n");
        check(is(read_tree(root).sig_enforce, PROBE_UNKNOWN, -EBADMSG));
}

static const char *const LOADPIN_ETC =
        "; LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
        "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: 0";

static void check_lockdown(const char *root, Lockdown level, int error, const char *word) {
        _cleanup_free_ char *line = NULL;
        Enforcement e = read_tree(root);

        check(e.lockdown == level && e.lockdown_error == error);
        check(asprintf(&line, "module signatures: enforced (forced by the kernel); lockdown: %s%s",
                       word, LOADPIN_ETC) > 0);
        check_line(root, line);
}

TEST(lockdown) {
        _cleanup_tmp_root_ char *root = full_tree();

        tmp_write(root, SECFS "lockdown", "[none] integrity confidentiality\n");
        check_lockdown(root, LOCKDOWN_NONE, 0, "none");
        tmp_write(root, SECFS "lockdown", "none integrity [confidentiality]\n");
        check_lockdown(root, LOCKDOWN_CONFIDENTIALITY, 0, "confidentiality");
        tmp_write(root, SECFS "lockdown", "none integrity confidentiality\n");
        check_lockdown(root, LOCKDOWN_UNKNOWN, -EBADMSG, "unknown (Bad message)");
        tmp_write(root, SECFS "lockdown", "none [paranoid] confidentiality\n");
        check_lockdown(root, LOCKDOWN_UNKNOWN, -EBADMSG, "unknown (Bad message)");

        /* Listed as an active LSM, yet its file is missing. */
        rm(root, SECFS "lockdown");
        check_lockdown(root, LOCKDOWN_UNKNOWN, -ENOENT, "unknown (No such file or directory)");

        tmp_write(root, SECFS "lsm", "capability,landlock,yama,loadpin,ipe,bpf,ima,evm");
        check_lockdown(root, LOCKDOWN_ABSENT, 0, "no lockdown LSM");

        /* A longer file than any lockdown file is not read to its end. */
        {
                char big[1024];

                memset(big, 'x', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                tmp_write(root, SECFS "lockdown", big);
                check_lockdown(root, LOCKDOWN_UNKNOWN, -EFBIG, "unknown (File too large)");
        }
}

TEST(securityfs_not_mounted) {
        _cleanup_tmp_root_ char *root = full_tree();
        Enforcement e;

        /* An empty mount point, as /sys/kernel/security is without securityfs. */
        rm_tree(root, "sys/kernel/security");
        tmp_mkdir(root, "sys/kernel/security");
        e = read_tree(root);
        check(is(e.securityfs, PROBE_ABSENT, 0));
        check(e.lockdown == LOCKDOWN_UNKNOWN && e.lockdown_error == -ENOENT);
        /* LoadPin's sysctl shows it anyway. */
        check(is(e.loadpin, PROBE_YES, 0) && is(e.loadpin_enforce, PROBE_YES, 0));
        check(is(e.loadpin_verity, PROBE_UNKNOWN, -ENOENT));
        check(is(e.ipe, PROBE_UNKNOWN, -ENOENT) && is(e.ipe_policy, PROBE_UNKNOWN, -ENOENT));
        check(is(e.ima_module_appraisal, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: enforced (forced by the kernel); "
                         "lockdown: unknown (securityfs not mounted); "
                         "LoadPin: enforcing (pinned root: unknown, dm-verity digests: unknown); "
                         "IPE: unknown (securityfs not mounted); "
                         "IMA module appraisal: unknown (securityfs not mounted); modules_disabled: 0");

        rm_tree(root, "proc/sys/kernel/loadpin");
        e = read_tree(root);
        check(is(e.loadpin, PROBE_UNKNOWN, -ENOENT) && is(e.loadpin_enforce, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: enforced (forced by the kernel); "
                         "lockdown: unknown (securityfs not mounted); "
                         "LoadPin: unknown (securityfs not mounted); "
                         "IPE: unknown (securityfs not mounted); "
                         "IMA module appraisal: unknown (securityfs not mounted); modules_disabled: 0");
}

TEST(loadpin) {
        _cleanup_tmp_root_ char *root = full_tree();
        const char *rest = "; IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; "
                           "modules_disabled: 0";
        _cleanup_free_ char *line = NULL;
        Enforcement e;

        tmp_write(root, "proc/sys/kernel/loadpin/enforce", "0\n");
        rm(root, SECFS "loadpin/dm-verity");
        e = read_tree(root);
        check(is(e.loadpin, PROBE_YES, 0) && is(e.loadpin_enforce, PROBE_NO, 0));
        check(is(e.loadpin_verity, PROBE_ABSENT, 0));
        check(asprintf(&line, "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                              "LoadPin: not enforcing (pinned root: unknown, "
                              "dm-verity digests: not supported)%s",
                       rest) > 0);
        check_line(root, line);

        /* Not among the active LSMs: neither its sysctl nor its securityfs files are there. */
        rm_tree(root, "proc/sys/kernel/loadpin");
        rm_tree(root, SECFS "loadpin");
        tmp_write(root, SECFS "lsm", "lockdown,capability,landlock,yama,ipe,bpf,ima,evm");
        e = read_tree(root);
        check(is(e.loadpin, PROBE_ABSENT, 0) && is(e.loadpin_enforce, PROBE_ABSENT, 0));
        check(is(e.loadpin_verity, PROBE_ABSENT, 0) && is(e.loadpin_pinned, PROBE_ABSENT, 0));
        free(line);
        check(asprintf(&line, "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                              "LoadPin: not active%s", rest) > 0);
        check_line(root, line);

        /* A name that merely starts like it is another LSM. */
        tmp_write(root, SECFS "lsm", "lockdown,loadpinx,ipe");
        check(is(read_tree(root).loadpin, PROBE_ABSENT, 0));
}

static void check_ipe(const char *root, const char *words) {
        _cleanup_free_ char *line = NULL;

        check(asprintf(&line, "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                              "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                              "IPE: %s; IMA module appraisal: yes; modules_disabled: 0", words) > 0);
        check_line(root, line);
}

TEST(ipe) {
        _cleanup_tmp_root_ char *root = full_tree();
        Enforcement e;

        tmp_write(root, SECFS "ipe/enforce", "0");
        e = read_tree(root);
        check(is(e.ipe_enforce, PROBE_NO, 0) && is(e.ipe_policy, PROBE_YES, 0));
        check_ipe(root, "policy Ex_Policy (permissive)");

        /* Deployed policies, none of them active. */
        tmp_write(root, SECFS "ipe/enforce", "1");
        tmp_write(root, SECFS "ipe/policies/Ex_Policy/active", "0");
        e = read_tree(root);
        check(is(e.ipe, PROBE_YES, 0) && is(e.ipe_policy, PROBE_NO, 0));
        check_streq(e.ipe_policy_name, "");
        check_ipe(root, "no policy");

        rm_tree(root, SECFS "ipe/policies");
        tmp_mkdir(root, SECFS "ipe/policies");
        check(is(read_tree(root).ipe_policy, PROBE_NO, 0));
        check_ipe(root, "no policy");

        /* The name is the administrator's: nothing in it may break the line. */
        tmp_write(root, SECFS "ipe/policies/a;b\tc/active", "1");
        e = read_tree(root);
        check_streq(e.ipe_policy_name, "a;b\tc");
        check_ipe(root, "policy a?b?c (enforcing)");

        rm_tree(root, SECFS "ipe");
        tmp_write(root, SECFS "lsm", "lockdown,capability,landlock,yama,loadpin,bpf,ima,evm");
        e = read_tree(root);
        check(is(e.ipe, PROBE_ABSENT, 0) && is(e.ipe_policy, PROBE_ABSENT, 0));
        check_ipe(root, "not active");
}

static void check_ima(const char *root, Probe value, int error, const char *words) {
        _cleanup_free_ char *line = NULL;

        check(is(read_tree(root).ima_module_appraisal, value, error));
        check(asprintf(&line, "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                              "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                              "IPE: policy Ex_Policy (enforcing); IMA module appraisal: %s; "
                              "modules_disabled: 0",
                       words) > 0);
        check_line(root, line);
}

TEST(ima) {
        _cleanup_tmp_root_ char *root = full_tree();

        /* Measuring, not appraising; appraising other hooks; and a rule that exempts modules. */
        tmp_write(root, SECFS "ima/policy", "measure func=MODULE_CHECK \n"
                                            "appraise func=BPRM_CHECK appraise_type=imasig \n"
                                            "dont_appraise func=MODULE_CHECK \n"
                                            "appraise func=MODULE_CHECKX \n");
        check_ima(root, PROBE_NO, 0, "no");

        tmp_write(root, SECFS "ima/policy", "");
        check_ima(root, PROBE_NO, 0, "no");

        tmp_write(root, SECFS "ima/policy", "dont_measure fsmagic=0x9fa0 \n"
                                            "appraise func=MODULE_CHECK");
        check_ima(root, PROBE_YES, 0, "yes");

        /* Unreadable, as without CONFIG_IMA_READ_POLICY or CAP_SYS_ADMIN: here the read fails. */
        rm(root, SECFS "ima/policy");
        tmp_mkdir(root, SECFS "ima/policy");
        check_ima(root, PROBE_UNKNOWN, -EISDIR, "unknown (policy unreadable: Is a directory)");

        rm_tree(root, SECFS "ima/policy");
        check_ima(root, PROBE_UNKNOWN, -ENOENT, "unknown (policy unreadable: No such file or directory)");

        rm_tree(root, SECFS "ima");
        check_ima(root, PROBE_ABSENT, 0, "no (no IMA)");

        /* A policy longer than any real one is not read to its end. */
        {
                _cleanup_free_ char *big = malloc((1U << 20) + 2);

                check(big);
                memset(big, '\n', (1U << 20) + 1);
                big[(1U << 20) + 1] = '\0';
                tmp_write(root, SECFS "ima/policy", big);
                check_ima(root, PROBE_UNKNOWN, -EFBIG, "unknown (policy unreadable: File too large)");
        }
}

TEST(modules_disabled) {
        _cleanup_tmp_root_ char *root = full_tree();
        const char *start = "module signatures: enforced (forced by the kernel); lockdown: integrity; "
                            "LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); "
                            "IPE: policy Ex_Policy (enforcing); IMA module appraisal: yes; modules_disabled: ";
        _cleanup_free_ char *line = NULL;

        tmp_write(root, "proc/sys/kernel/modules_disabled", "1\n");
        check(is(read_tree(root).modules_disabled, PROBE_YES, 0));
        check(asprintf(&line, "%s1", start) > 0);
        check_line(root, line);

        rm(root, "proc/sys/kernel/modules_disabled");
        check(is(read_tree(root).modules_disabled, PROBE_ABSENT, 0));
        free(line);
        check(asprintf(&line, "%sabsent (no module support)", start) > 0);
        check_line(root, line);

        /* No procfs: neither this nor the release and LoadPin's sysctl are known. */
        rm_tree(root, "proc");
        check(is(read_tree(root).modules_disabled, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: enforced (cannot be turned off, forced by the kernel: unknown); "
                         "lockdown: integrity; LoadPin: active (enforcing: unknown, pinned root: unknown, "
                         "dm-verity digests: supported); IPE: policy Ex_Policy (enforcing); "
                         "IMA module appraisal: yes; modules_disabled: unknown (No such file or directory)");
}

TEST(empty_and_missing_root) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        Enforcement e;

        check(enforcement_read("/nonexistent-enforcement-root", &e) == -ENOENT);

        /* Nothing mounted at all: nothing is said to be off. */
        e = read_tree(root);
        check(is(e.sig_enforce, PROBE_UNKNOWN, -ENOENT) && is(e.sig_force, PROBE_UNKNOWN, -ENOENT));
        check(is(e.modules_disabled, PROBE_UNKNOWN, -ENOENT));
        check_line(root, "module signatures: unknown (No such file or directory); "
                         "lockdown: unknown (securityfs not mounted); "
                         "LoadPin: unknown (securityfs not mounted); "
                         "IPE: unknown (securityfs not mounted); "
                         "IMA module appraisal: unknown (securityfs not mounted); "
                         "modules_disabled: unknown (No such file or directory)");
}

/* What the reading of the real root must find, found here with stdio and without its code. */
static int slurp(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return -errno;
        n = fread(buf, 1, size - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n > 0 && isspace((unsigned char) buf[n - 1]))
                buf[--n] = '\0';
        return 0;
}

static bool dir_exists(const char *path) {
        struct stat st;

        return stat(path, &st) == 0;
}

/* A value of two words: ABSENT when missing beside its witness, else UNKNOWN with the error. */
static Reading expect_flag(const char *path, const char *no, const char *yes, const char *witness) {
        char buf[256];
        int r = slurp(path, buf, sizeof(buf));

        if (r == -ENOENT && dir_exists(witness))
                return (Reading) { PROBE_ABSENT, 0 };
        if (r < 0)
                return (Reading) { PROBE_UNKNOWN, r };
        return (Reading) { strcmp(buf, yes) == 0 ? PROBE_YES : strcmp(buf, no) == 0 ? PROBE_NO : PROBE_UNKNOWN,
                           strcmp(buf, yes) == 0 || strcmp(buf, no) == 0 ? 0 : -EBADMSG };
}

static Reading expect_sig_force(void) {
        char path[512], line[512];
        struct utsname u;
        bool found = false;
        FILE *f;

        check(uname(&u) == 0);
        snprintf(path, sizeof(path), "/boot/config-%s", u.release);
        f = fopen(path, "re");
        if (!f)
                return (Reading) { PROBE_UNKNOWN, -errno };
        while (fgets(line, sizeof(line), f))
                if (strcmp(line, "CONFIG_MODULE_SIG_FORCE=y\n") == 0)
                        found = true;
        fclose(f);
        return (Reading) { found ? PROBE_YES : PROBE_NO, 0 };
}

static bool same(Reading a, Reading b) {
        return a.value == b.value && a.error == b.error;
}

static bool expect_module_appraisal(const char *policy) {
        for (const char *l = policy; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                char action[32], rest[4096];

                if (sscanf(l, "%31s %4095[^\n]", action, rest) != 2 || strcmp(action, "appraise") != 0)
                        continue;
                for (char *w = strtok(rest, " "); w; w = strtok(NULL, " "))
                        if (strcmp(w, "func=MODULE_CHECK") == 0)
                                return true;
        }
        return false;
}

/* The active IPE policy's name, "" for none, or NULL when the list cannot be read. */
static char *expect_ipe_policy(void) {
        struct dirent *de;
        char *name = NULL;
        DIR *d;

        d = opendir("/sys/kernel/security/ipe/policies");
        if (!d)
                return NULL;
        while (!name && (de = readdir(d))) {
                char path[512], active[16];

                snprintf(path, sizeof(path), "/sys/kernel/security/ipe/policies/%s/active", de->d_name);
                if (de->d_name[0] != '.' && slurp(path, active, sizeof(active)) == 0 &&
                    strcmp(active, "1") == 0)
                        name = strdup(de->d_name);
        }
        closedir(d);
        return name ?: strdup("");
}

TEST(real_root) {
        _cleanup_free_ char *line = NULL, *policy = NULL;
        char lsm[512], lockdown[512];
        bool securityfs;
        Enforcement e;
        int r;

        check(enforcement_read("/", &e) == 0);
        check(enforcement_to_string(&e, &line) == 0);
        printf("# %s\n", line);

        check(same(e.sig_enforce,
                   expect_flag("/sys/module/module/parameters/sig_enforce", "N", "Y", "/sys/module")));
        check(same(e.sig_force, expect_sig_force()));
        check(same(e.modules_disabled,
                   expect_flag("/proc/sys/kernel/modules_disabled", "0", "1", "/proc/sys/kernel")));

        r = slurp("/sys/kernel/security/lsm", lsm, sizeof(lsm));
        securityfs = r == 0;
        check(same(e.securityfs, securityfs ? (Reading) { PROBE_YES, 0 } :
                                 r == -ENOENT ? (Reading) { PROBE_ABSENT, 0 } :
                                 (Reading) { PROBE_UNKNOWN, r }));

        r = slurp("/sys/kernel/security/lockdown", lockdown, sizeof(lockdown));
        if (r == 0)
                check(e.lockdown == (strstr(lockdown, "[none]") ? LOCKDOWN_NONE :
                                     strstr(lockdown, "[integrity]") ? LOCKDOWN_INTEGRITY :
                                     strstr(lockdown, "[confidentiality]") ? LOCKDOWN_CONFIDENTIALITY :
                                     LOCKDOWN_UNKNOWN));
        else if (securityfs && r == -ENOENT && !strstr(lsm, "lockdown"))
                check(e.lockdown == LOCKDOWN_ABSENT);
        else
                check(e.lockdown == LOCKDOWN_UNKNOWN && e.lockdown_error == r);

        if (!securityfs) {
                /* Nothing of securityfs is known, and the line says why. */
                check(e.loadpin.value == (dir_exists("/proc/sys/kernel/loadpin") ? PROBE_YES : PROBE_UNKNOWN));
                check(e.ipe.value == PROBE_UNKNOWN && e.ima_module_appraisal.value == PROBE_UNKNOWN);
                check(strstr(line, "; lockdown: unknown (securityfs not mounted); "));
                check(strstr(line, "; IPE: unknown (securityfs not mounted); "));
                check(strstr(line, "; IMA module appraisal: unknown (securityfs not mounted); "));
                return;
        }

        check(e.loadpin.value == (strstr(lsm, "loadpin") ? PROBE_YES : PROBE_ABSENT));
        if (e.loadpin.value == PROBE_YES) {
                check(same(e.loadpin_enforce, expect_flag("/proc/sys/kernel/loadpin/enforce", "0", "1",
                                                          "/proc/sys/kernel")));
                check(e.loadpin_verity.value == (dir_exists("/sys/kernel/security/loadpin/dm-verity") ?
                                                 PROBE_YES : PROBE_ABSENT));
        }

        check(e.ipe.value == (dir_exists("/sys/kernel/security/ipe") ? PROBE_YES : PROBE_ABSENT));
        if (e.ipe.value == PROBE_YES) {
                _cleanup_free_ char *name = expect_ipe_policy();

                check(name);
                check(e.ipe_policy.value == (name[0] ? PROBE_YES : PROBE_NO));
                check_streq(e.ipe_policy_name, name);
        }

        if (!dir_exists("/sys/kernel/security/ima"))
                check(e.ima_module_appraisal.value == PROBE_ABSENT);
        else {
                FILE *f = fopen("/sys/kernel/security/ima/policy", "re");
                size_t n = 0;

                if (!f) {
                        check(same(e.ima_module_appraisal, (Reading) { PROBE_UNKNOWN, -errno }));
                        return;
                }
                policy = calloc(1, (1U << 20) + 1);
                check(policy);
                n = fread(policy, 1, 1U << 20, f);
                fclose(f);
                policy[n] = '\0';
                check(e.ima_module_appraisal.value ==
                      (expect_module_appraisal(policy) ? PROBE_YES : PROBE_NO));
        }
}

int main(void) {
        RUN(everything_enforced);
        RUN(signatures);
        RUN(lockdown);
        RUN(securityfs_not_mounted);
        RUN(loadpin);
        RUN(ipe);
        RUN(ima);
        RUN(modules_disabled);
        RUN(empty_and_missing_root);
        RUN(real_root);
        return tests_done();
}
