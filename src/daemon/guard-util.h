/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "guard-abi.h"

/* The guard's pure parts: its modes, where the mode comes from, the kernel's view of a file's identity
 * and what a refusal says. No BPF here: unit tests and a build without the guard use them alike. */

typedef enum GuardMode {
        GUARD_OFF = GUARD_MODE_OFF,
        GUARD_PERMISSIVE = GUARD_MODE_PERMISSIVE,
        GUARD_ENFORCE = GUARD_MODE_ENFORCE,
        _GUARD_MAX = _GUARD_MODE_MAX,
} GuardMode;

/* The mode when neither modgate.conf nor the kernel command line names one: permissive records every
 * load by another process as the refusal it would be, and refuses nothing, so that turning enforce on
 * is a decision made on a record of what it would stop (docs/guard.md). */
#define GUARD_MODE_DEFAULT GUARD_PERMISSIVE

/* The kernel command line's switch, which wins over modgate.conf for one boot. */
#define GUARD_CMDLINE_KEY "modgate.guard"

const char *guard_mode_to_string(GuardMode m);
/* "off", "permissive", "enforce"; -EINVAL for anything else. */
int guard_mode_from_string(const char *s, GuardMode *ret);

/* The last modgate.guard= of a kernel command line, as the kernel takes the last of a repeated
 * parameter. Returns 1 and *ret, 0 when the line has none, -EINVAL when the last one names no mode
 * (*ret untouched: the caller says so and goes on with the configured mode). */
int guard_mode_from_cmdline(const char *cmdline, GuardMode *ret);

/* Whether "bpf" is among the active LSMs, /sys/kernel/security/lsm's comma-separated list. */
bool guard_lsm_listed(const char *lsm);

/* The kernel's dev_t (MAJOR << 20 | MINOR: a super block's s_dev) of a device number as stat(2) gives
 * it: what the program compares. */
__u64 guard_kernel_dev(dev_t d);
/* And back, for records. */
dev_t guard_user_dev(__u64 kdev);

/* "finit_module" or "init_module". */
const char *guard_hook_to_string(unsigned hook);
/* Why, in words: "not modgated", ... */
const char *guard_why_to_string(unsigned why);
/* A short name of why, for fields and counting: "caller", "file", "changed", "blob", "unconfigured". */
const char *guard_why_to_name(unsigned why);

/* Checks a record of the ring buffer as the program writes it: -EBADMSG for a size or a value it
 * does not write. */
int guard_event_check(const void *data, size_t size);

/* A string of a record as the program copied it (size bytes, NUL-terminated or not; any process chooses
 * its comm, and the names of its executable and cgroup), made printable ASCII in out (size + 1 bytes):
 * what is not becomes '?'. */
void guard_printable(const char *in, size_t size, char *out);

/* The MESSAGE of a refusal's record, e.g. "The guard refused finit_module() of a file (device 254:0,
 * inode 1234) by insmod[345] (uid 0, executable kmod, cgroup session-1.scope): only modgated loads
 * modules." ("would have refused (permissive mode)" in permissive mode). Returns 0 or -ENOMEM. */
int guard_event_message(const struct guard_event *e, char **ret);

/* What refusals are counted by, so that a flood from one caller does not hide another: "COMM:HOOK:WHY". */
int guard_event_key(const struct guard_event *e, char *buf, size_t size);

/* The kernel's own helper for request_module(), CONFIG_MODPROBE_PATH's default. */
#define GUARD_KERNEL_MODPROBE_DEFAULT "/sbin/modprobe"

/* Whether modgated points kernel.modprobe (now current, as /proc/sys/kernel/modprobe reads, a
 * trailing newline or not) at modgate-modprobe before it attaches the guard: only while it is the
 * kernel's default, whose loads the guard refuses. A helper the administrator chose (an empty one
 * that turns autoloading off, or another program) is left as it is, and so is modgate-modprobe. */
bool guard_modprobe_replaced(const char *current);
