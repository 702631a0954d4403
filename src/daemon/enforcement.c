/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "enforcement.h"
#include "fileio.h"
#include "macro.h"

#define SECURITYFS "sys/kernel/security/"
#define VALUE_MAX 512                   /* one sysfs, procfs or securityfs value; the LSM list */
#define KERNEL_CONFIG_MAX (4U << 20)    /* Debian's is 280 KiB */
#define IMA_POLICY_MAX (1U << 20)
#define IPE_POLICIES_MAX 256

static Reading known(Probe value) {
        return (Reading) { .value = value };
}

static Reading unknown(int error) {
        return (Reading) { .value = PROBE_UNKNOWN, .error = error };
}

/* Reads a small file whole; -EFBIG when it has size bytes or more. Trailing white space is cut. */
static int read_value(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        for (;;) {
                ssize_t k = read(fd, buf + n, size - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n >= size)
                        return -EFBIG;
        }
        while (n > 0 && strchr(" \t\n", buf[n - 1]))
                n--;
        buf[n] = '\0';
        return 0;
}

static int read_text(int dirfd, const char *path, size_t max, char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        size_t size;
        int fd;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "r");
        if (!f) {
                int r = negative_errno();

                safe_close(fd);
                return r;
        }
        return read_full_stream(f, max, ret, &size);
}

static bool exists(int dirfd, const char *path) {
        struct stat st;

        return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

/* A file that holds one of two words. Missing while witness exists: the kernel has no such
 * interface. Missing with its witness: a file system that is not mounted, so nothing is known. */
static Reading read_flag(int rootfd, const char *path, const char *no, const char *yes,
                         const char *witness) {
        char buf[VALUE_MAX];
        int r;

        r = read_value(rootfd, path, buf, sizeof(buf));
        if (r == -ENOENT && witness && exists(rootfd, witness))
                return known(PROBE_ABSENT);
        if (r < 0)
                return unknown(r);
        if (strcmp(buf, no) == 0)
                return known(PROBE_NO);
        if (strcmp(buf, yes) == 0)
                return known(PROBE_YES);
        return unknown(-EBADMSG);
}

/* Whether a comma-separated list names word. */
static bool list_has(const char *list, const char *word) {
        size_t n = strlen(word);

        for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
                        return true;
        return false;
}

/* Calls match() on each line of text (which may hold NUL bytes: those end a line early). */
static bool any_line(char *text, bool (*match)(const char *line)) {
        for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (match(line))
                        return true;
        }
        return false;
}

static bool is_sig_force(const char *line) {
        return strcmp(line, "CONFIG_MODULE_SIG_FORCE=y") == 0;
}

/* An autofs mount point is reached with O_PATH without triggering it; anything else would. */
static int open_boot(int rootfd) {
        _cleanup_close_ int fd = -EBADF;
        struct statfs sfs;

        fd = openat(rootfd, "boot", O_PATH | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        if (sfs.f_type == AUTOFS_SUPER_MAGIC)
                return -EAGAIN;
        return TAKE_FD(fd);
}

/* The release is read beneath root as well, so that a fake tree can name its own. It is what
 * uname(2) says on the real root. */
static Reading read_sig_force(int rootfd) {
        _cleanup_close_ int bootfd = -EBADF;
        _cleanup_free_ char *config = NULL;
        char release[VALUE_MAX], path[VALUE_MAX + 16];
        int r;

        r = read_value(rootfd, "proc/sys/kernel/osrelease", release, sizeof(release));
        if (r < 0)
                return unknown(r);
        if (release[0] == '\0' || strchr(release, '/'))
                return unknown(-EBADMSG);

        /* A /boot that is mounted on first access may need a module that only this daemon loads. */
        bootfd = open_boot(rootfd);
        if (bootfd < 0)
                return unknown(bootfd);
        snprintf(path, sizeof(path), "config-%s", release);
        r = read_text(bootfd, path, KERNEL_CONFIG_MAX, &config);
        if (r < 0)
                return unknown(r);
        return known(any_line(config, is_sig_force) ? PROBE_YES : PROBE_NO);
}

/* A file of an LSM that is missing: the LSM is not active, or securityfs cannot be seen. */
static Reading securityfs_missing(const Enforcement *e, const char *lsm_list, const char *lsm) {
        if (e->securityfs.value != PROBE_YES)
                return unknown(e->securityfs.value == PROBE_ABSENT ? -ENOENT : e->securityfs.error);
        return lsm && list_has(lsm_list, lsm) ? unknown(-ENOENT) : known(PROBE_ABSENT);
}

static void read_lockdown(int rootfd, const char *lsm_list, Enforcement *e) {
        static const char *const levels[] = {
                [LOCKDOWN_NONE] = "none",
                [LOCKDOWN_INTEGRITY] = "integrity",
                [LOCKDOWN_CONFIDENTIALITY] = "confidentiality",
        };
        char buf[VALUE_MAX], *lb, *rb;
        int r;

        r = read_value(rootfd, SECURITYFS "lockdown", buf, sizeof(buf));
        if (r == -ENOENT) {
                Reading m = securityfs_missing(e, lsm_list, "lockdown");

                e->lockdown = m.value == PROBE_ABSENT ? LOCKDOWN_ABSENT : LOCKDOWN_UNKNOWN;
                e->lockdown_error = m.error;
                return;
        }
        if (r < 0) {
                e->lockdown_error = r;
                return;
        }

        /* "none [integrity] confidentiality": the word in brackets is in force. */
        lb = strchr(buf, '[');
        rb = lb ? strchr(lb, ']') : NULL;
        if (rb) {
                *rb = '\0';
                for (Lockdown l = LOCKDOWN_NONE; l <= LOCKDOWN_CONFIDENTIALITY; l++)
                        if (strcmp(lb + 1, levels[l]) == 0) {
                                e->lockdown = l;
                                return;
                        }
        }
        e->lockdown_error = -EBADMSG;
}

static void read_loadpin(int rootfd, const char *lsm_list, Enforcement *e) {
        Reading enforce = read_flag(rootfd, "proc/sys/kernel/loadpin/enforce", "0", "1", "proc/sys/kernel");

        /* The sysctl is registered when LoadPin starts: it shows LoadPin also without securityfs. */
        if (e->securityfs.value == PROBE_YES)
                e->loadpin = known(list_has(lsm_list, "loadpin") ? PROBE_YES : PROBE_ABSENT);
        else if (enforce.value == PROBE_NO || enforce.value == PROBE_YES)
                e->loadpin = known(PROBE_YES);
        else
                e->loadpin = securityfs_missing(e, lsm_list, NULL);

        if (e->loadpin.value != PROBE_YES) {
                e->loadpin_enforce = e->loadpin_verity = e->loadpin_pinned = e->loadpin;
                return;
        }
        e->loadpin_enforce = enforce;
        e->loadpin_verity = exists(rootfd, SECURITYFS "loadpin/dm-verity") ? known(PROBE_YES) :
                securityfs_missing(e, lsm_list, NULL);
        e->loadpin_pinned = unknown(-ENODATA);
}

/* The policy whose "active" file reads 1, one directory per policy below ipe/policies/. */
static Reading read_ipe_policy(int rootfd, char name[static NAME_MAX + 1]) {
        _cleanup_close_ int fd = -EBADF;
        struct dirent *de;
        Reading result = known(PROBE_NO);
        unsigned n = 0;
        DIR *d;

        fd = openat(rootfd, SECURITYFS "ipe/policies", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return unknown(negative_errno());
        d = fdopendir(fd);
        if (!d)
                return unknown(negative_errno());
        TAKE_FD(fd);

        while ((de = readdir(d)) && n++ < IPE_POLICIES_MAX) {
                char path[NAME_MAX + 16], buf[VALUE_MAX];
                int r;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/active", de->d_name);
                r = read_value(dirfd(d), path, buf, sizeof(buf));
                if (r == -ENOENT)
                        continue;       /* deleted meanwhile */
                if (r < 0) {
                        result = unknown(r);
                        continue;
                }
                if (strcmp(buf, "1") == 0) {
                        snprintf(name, NAME_MAX + 1, "%s", de->d_name);
                        result = known(PROBE_YES);
                        break;
                }
        }
        closedir(d);
        return result;
}

static void read_ipe(int rootfd, const char *lsm_list, Enforcement *e) {
        if (exists(rootfd, SECURITYFS "ipe"))
                e->ipe = known(PROBE_YES);
        else
                e->ipe = securityfs_missing(e, lsm_list, "ipe");

        if (e->ipe.value != PROBE_YES) {
                e->ipe_enforce = e->ipe_policy = e->ipe;
                return;
        }
        e->ipe_enforce = read_flag(rootfd, SECURITYFS "ipe/enforce", "0", "1", NULL);
        e->ipe_policy = read_ipe_policy(rootfd, e->ipe_policy_name);
}

static bool word_is(const char *p, const char *word) {
        size_t n = strlen(word);

        return strncmp(p, word, n) == 0 && (p[n] == '\0' || p[n] == ' ' || p[n] == '\t');
}

/* "appraise func=MODULE_CHECK appraise_type=imasig": the action comes first, then its conditions. */
static bool is_module_appraisal(const char *line) {
        const char *p = line + strspn(line, " \t");

        if (!word_is(p, "appraise"))
                return false;
        for (p += strlen("appraise"); *p; p += strcspn(p, " \t")) {
                p += strspn(p, " \t");
                if (word_is(p, "func=MODULE_CHECK"))
                        return true;
        }
        return false;
}

static Reading read_ima(int rootfd, const char *lsm_list, const Enforcement *e) {
        _cleanup_free_ char *policy = NULL;
        int r;

        r = read_text(rootfd, SECURITYFS "ima/policy", IMA_POLICY_MAX, &policy);
        if (r == -ENOENT)
                return exists(rootfd, SECURITYFS "ima") ? unknown(r) : securityfs_missing(e, lsm_list, NULL);
        if (r < 0)
                return unknown(r);
        return known(any_line(policy, is_module_appraisal) ? PROBE_YES : PROBE_NO);
}

int enforcement_read(const char *root, Enforcement *ret) {
        _cleanup_close_ int rootfd = -EBADF;
        Enforcement e = {};
        char lsm_list[VALUE_MAX] = "";
        int r;

        assert(ret);

        rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return negative_errno();

        r = read_value(rootfd, SECURITYFS "lsm", lsm_list, sizeof(lsm_list));
        e.securityfs = r == -ENOENT ? known(PROBE_ABSENT) : r < 0 ? unknown(r) : known(PROBE_YES);

        e.sig_enforce = read_flag(rootfd, "sys/module/module/parameters/sig_enforce", "N", "Y",
                                  "sys/module");
        e.sig_force = read_sig_force(rootfd);
        read_lockdown(rootfd, lsm_list, &e);
        read_loadpin(rootfd, lsm_list, &e);
        read_ipe(rootfd, lsm_list, &e);
        e.ima_module_appraisal = read_ima(rootfd, lsm_list, &e);
        e.modules_disabled = read_flag(rootfd, "proc/sys/kernel/modules_disabled", "0", "1",
                                       "proc/sys/kernel");

        *ret = e;
        return 0;
}

/* Why a reading of a securityfs file is unknown. */
static void print_securityfs_why(FILE *f, const Enforcement *e, const Reading *r, const char *what) {
        if (e->securityfs.value == PROBE_ABSENT)
                fputs("securityfs not mounted", f);
        else if (e->securityfs.value == PROBE_UNKNOWN)
                fprintf(f, "securityfs: %s", strerrordesc_np(-e->securityfs.error) ?: "unknown error");
        else
                fprintf(f, "%s%s", what, strerrordesc_np(-r->error) ?: "unknown error");
}

static void print_signatures(FILE *f, const Enforcement *e) {
        fputs("module signatures: ", f);
        switch (e->sig_enforce.value) {
        case PROBE_YES:
                /* Switched on at boot or since, or forced: either way it stays on until reboot. */
                fputs(e->sig_force.value == PROBE_YES ? "enforced (forced by the kernel)" :
                      e->sig_force.value == PROBE_NO ?
                      "enforced (cannot be turned off, not forced by the kernel)" :
                      "enforced (cannot be turned off, forced by the kernel: unknown)", f);
                break;
        case PROBE_NO:
                fputs("not enforced", f);
                break;
        case PROBE_ABSENT:
                fputs("not supported by the kernel", f);
                break;
        default:
                fprintf(f, "unknown (%s)", strerrordesc_np(-e->sig_enforce.error) ?: "unknown error");
        }
}

static void print_lockdown(FILE *f, const Enforcement *e) {
        static const char *const words[] = {
                [LOCKDOWN_ABSENT] = "no lockdown LSM",
                [LOCKDOWN_NONE] = "none",
                [LOCKDOWN_INTEGRITY] = "integrity",
                [LOCKDOWN_CONFIDENTIALITY] = "confidentiality",
        };

        fputs("; lockdown: ", f);
        if (e->lockdown > LOCKDOWN_UNKNOWN && e->lockdown <= LOCKDOWN_CONFIDENTIALITY) {
                fputs(words[e->lockdown], f);
                return;
        }
        fputs("unknown (", f);
        print_securityfs_why(f, e, &(Reading) { .error = e->lockdown_error }, "");
        fputc(')', f);
}

static void print_loadpin(FILE *f, const Enforcement *e) {
        fputs("; LoadPin: ", f);
        if (e->loadpin.value == PROBE_ABSENT) {
                fputs("not active", f);
                return;
        }
        if (e->loadpin.value != PROBE_YES) {
                fputs("unknown (", f);
                print_securityfs_why(f, e, &e->loadpin, "");
                fputc(')', f);
                return;
        }

        fputs(e->loadpin_enforce.value == PROBE_YES ? "enforcing (" :
              e->loadpin_enforce.value == PROBE_NO ? "not enforcing (" : "active (enforcing: unknown, ", f);
        fputs("pinned root: unknown, dm-verity digests: ", f);
        if (e->loadpin_verity.value == PROBE_YES)
                fputs("supported", f);
        else if (e->loadpin_verity.value == PROBE_ABSENT)
                fputs("not supported", f);
        else
                fputs("unknown", f);
        fputc(')', f);
}

static void print_ipe(FILE *f, const Enforcement *e) {
        fputs("; IPE: ", f);
        if (e->ipe.value == PROBE_ABSENT) {
                fputs("not active", f);
                return;
        }
        if (e->ipe.value != PROBE_YES) {
                fputs("unknown (", f);
                print_securityfs_why(f, e, &e->ipe, "");
                fputc(')', f);
                return;
        }

        switch (e->ipe_policy.value) {
        case PROBE_YES:
                /* A name from the kernel, but the administrator chose it: keep the line one line. */
                fputs("policy ", f);
                for (const char *p = e->ipe_policy_name; *p; p++)
                        fputc(*p < 0x20 || *p >= 0x7f || *p == ';' ? '?' : *p, f);
                fputs(e->ipe_enforce.value == PROBE_YES ? " (enforcing)" :
                      e->ipe_enforce.value == PROBE_NO ? " (permissive)" : " (enforcing: unknown)", f);
                break;
        case PROBE_NO:
                fputs("no policy", f);
                break;
        default:
                fprintf(f, "active, policy unknown (%s)",
                        strerrordesc_np(-e->ipe_policy.error) ?: "unknown error");
        }
}

static void print_ima(FILE *f, const Enforcement *e) {
        const Reading *r = &e->ima_module_appraisal;

        fputs("; IMA module appraisal: ", f);
        if (r->value == PROBE_YES || r->value == PROBE_NO) {
                fputs(r->value == PROBE_YES ? "yes" : "no", f);
                return;
        }
        if (r->value == PROBE_ABSENT) {
                fputs("no (no IMA)", f);
                return;
        }
        fputs("unknown (", f);
        print_securityfs_why(f, e, r, "policy unreadable: ");
        fputc(')', f);
}

static void print_modules_disabled(FILE *f, const Enforcement *e) {
        const Reading *r = &e->modules_disabled;

        fputs("; modules_disabled: ", f);
        if (r->value == PROBE_YES || r->value == PROBE_NO)
                fputs(r->value == PROBE_YES ? "1" : "0", f);
        else if (r->value == PROBE_ABSENT)
                fputs("absent (no module support)", f);
        else
                fprintf(f, "unknown (%s)", strerrordesc_np(-r->error) ?: "unknown error");
}

int enforcement_to_string(const Enforcement *e, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        print_signatures(f, e);
        print_lockdown(f, e);
        print_loadpin(f, e);
        print_ipe(f, e);
        print_ima(f, e);
        print_modules_disabled(f, e);
        if (fclose(f) != 0)
                return -ENOMEM;

        *ret = TAKE_PTR(buf);
        return 0;
}

int enforcement_describe(const char *root, Enforcement *ret, char **ret_line) {
        int r;

        r = enforcement_read(root, ret);
        if (r < 0)
                return r;
        return enforcement_to_string(ret, ret_line);
}
