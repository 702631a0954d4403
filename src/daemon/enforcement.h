/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>

/* Only the kernel can stop root from loading a module: modgate's own check can always be bypassed by
 * root. modgate never weakens the kernel's mechanisms; it reads them so that an administrator sees at
 * once which are active. Nothing here writes anything, not even a probe. */

typedef enum Probe {
        PROBE_UNKNOWN = 0,      /* the kernel may have it, but it could not be read or seen */
        PROBE_ABSENT,           /* this kernel has no such interface, or the mechanism is not active */
        PROBE_NO,
        PROBE_YES,
} Probe;

/* One reading: what it found, and for PROBE_UNKNOWN the negative errno that hid it (0 otherwise). */
typedef struct Reading {
        Probe value;
        int error;
} Reading;

typedef enum Lockdown {
        LOCKDOWN_UNKNOWN = 0,
        LOCKDOWN_ABSENT,        /* no lockdown LSM */
        LOCKDOWN_NONE,
        LOCKDOWN_INTEGRITY,
        LOCKDOWN_CONFIDENTIALITY,
} Lockdown;

typedef struct Enforcement {
        /* /sys/kernel/security/lsm, the list of active LSMs: ABSENT when securityfs is not mounted. */
        Reading securityfs;

        /* /sys/module/module/parameters/sig_enforce; ABSENT: a kernel without CONFIG_MODULE_SIG. Once
         * YES it stays so until reboot: the kernel lets it be switched on only. */
        Reading sig_enforce;
        /* CONFIG_MODULE_SIG_FORCE=y in /boot/config-$(uname -r); never ABSENT. -EAGAIN: /boot is an
         * automount point that is not mounted, and is not triggered (its mount may need a module only
         * this daemon loads). */
        Reading sig_force;

        /* /sys/kernel/security/lockdown */
        Lockdown lockdown;
        int lockdown_error;

        Reading loadpin;                /* an active LSM */
        Reading loadpin_enforce;        /* /proc/sys/kernel/loadpin/enforce */
        Reading loadpin_verity;         /* trusted dm-verity digests can be given (securityfs
                                         * loadpin/dm-verity, CONFIG_SECURITY_LOADPIN_VERITY); whether
                                         * a list was given cannot be read */
        Reading loadpin_pinned;         /* always UNKNOWN (-ENODATA): no kernel interface says whether
                                         * and which root is pinned, only the kernel log */

        Reading ipe;                    /* an active LSM */
        Reading ipe_enforce;            /* ipe/enforce: NO in permissive mode */
        Reading ipe_policy;             /* YES: ipe_policy_name is the active policy */
        char ipe_policy_name[NAME_MAX + 1];

        /* An "appraise ... func=MODULE_CHECK" rule in /sys/kernel/security/ima/policy, which is
         * readable only with CONFIG_IMA_READ_POLICY and CAP_SYS_ADMIN; ABSENT: no IMA. */
        Reading ima_module_appraisal;

        /* /proc/sys/kernel/modules_disabled; YES: no module can be loaded until reboot. ABSENT: a
         * kernel without module support. */
        Reading modules_disabled;
} Enforcement;

/* Reads the kernel's enforcement state below root ("/" normally; a test passes a fake tree). Never
 * fails for a mechanism that is absent or unreadable: each field says so. Returns 0, or -errno when
 * root cannot be opened. Does not log. */
int enforcement_read(const char *root, Enforcement *ret);

/* One line for the log and -n, e.g. "module signatures: enforced (forced by the kernel); lockdown:
 * integrity; LoadPin: enforcing (pinned root: unknown, dm-verity digests: supported); IPE: no policy;
 * IMA module appraisal: no; modules_disabled: 0". What could not be read says "unknown" and why,
 * never "no". Returns 0 or -ENOMEM. */
int enforcement_to_string(const Enforcement *e, char **ret);

/* Both: reads below root into *ret and formats *ret_line. */
int enforcement_describe(const char *root, Enforcement *ret, char **ret_line);
