/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "guard-util.h"
#include "macro.h"

static const char *const mode_table[_GUARD_MAX] = {
        [GUARD_OFF] = "off",
        [GUARD_PERMISSIVE] = "permissive",
        [GUARD_ENFORCE] = "enforce",
};

const char *guard_mode_to_string(GuardMode m) {
        return m >= 0 && m < _GUARD_MAX ? mode_table[m] : NULL;
}

int guard_mode_from_string(const char *s, GuardMode *ret) {
        for (GuardMode m = 0; s && m < _GUARD_MAX; m++)
                if (strcmp(s, mode_table[m]) == 0) {
                        *ret = m;
                        return 0;
                }
        return -EINVAL;
}

int guard_mode_from_cmdline(const char *cmdline, GuardMode *ret) {
        const size_t k = strlen(GUARD_CMDLINE_KEY);
        char value[16] = "";
        bool found = false;

        /* Words are separated by white space; the kernel's quoting ("a b") does not matter for a key
         * whose values have none. */
        for (const char *p = cmdline; p && *p; ) {
                size_t n;

                p += strspn(p, " \t\n");
                n = strcspn(p, " \t\n");
                if (n > k && strncmp(p, GUARD_CMDLINE_KEY, k) == 0 && p[k] == '=') {
                        found = true;
                        snprintf(value, sizeof(value), "%.*s", (int) MIN(n - k - 1, sizeof(value) - 1), p + k + 1);
                        if (n - k - 1 >= sizeof(value))
                                value[0] = 0;   /* longer than any mode */
                } else if (n == k && strncmp(p, GUARD_CMDLINE_KEY, k) == 0) {
                        found = true;
                        value[0] = 0;
                }
                p += n;
        }
        if (!found)
                return 0;
        if (guard_mode_from_string(value, ret) < 0)
                return -EINVAL;
        return 1;
}

bool guard_lsm_listed(const char *lsm) {
        for (const char *p = lsm; p && *p; ) {
                size_t n = strcspn(p, ",\n");

                if (n == 3 && strncmp(p, "bpf", 3) == 0)
                        return true;
                p += n;
                p += strspn(p, ",\n");
        }
        return false;
}

__u64 guard_kernel_dev(dev_t d) {
        return ((__u64) major(d) << 20) | (minor(d) & 0xfffffU);
}

dev_t guard_user_dev(__u64 kdev) {
        return makedev((unsigned) (kdev >> 20), (unsigned) (kdev & 0xfffffU));
}

const char *guard_hook_to_string(unsigned hook) {
        switch (hook) {
        case GUARD_HOOK_READ_FILE:
                return "finit_module";
        case GUARD_HOOK_LOAD_DATA:
                return "init_module";
        case GUARD_HOOK_BPF:
        case GUARD_HOOK_BPF_MAP:
                return "bpf";
        case GUARD_HOOK_PTRACE:
                return "ptrace";
        default:
                return NULL;
        }
}

static const char *const why_table[_GUARD_WHY_MAX][2] = {
        [GUARD_WHY_NOT_GATE] = { "caller", "only modgated loads modules" },
        [GUARD_WHY_NOT_APPROVED] = { "file", "not the file modgated approved for this load" },
        [GUARD_WHY_CHANGED] = { "changed", "the approved file changed after modgated checked it" },
        [GUARD_WHY_BLOB] = { "blob", "init_module() loads a module from memory, which has no origin to check" },
        [GUARD_WHY_NO_CONFIG] = { "unconfigured", "the guard was not yet told which process is modgated" },
        [GUARD_WHY_HASH] = { "hash", "the file's bytes, as the kernel reads them, are not those modgated checked" },
        [GUARD_WHY_PROTECTED] = { "protected",
                                  "the guard's links and maps, and modgated's memory, are modgated's "
                                  "alone" },
        [GUARD_WHY_FMOD_RET] = { "fmod_ret",
                                 "a BPF program that may change what a security hook returns is not loaded "
                                 "while the guard is attached" },
};

const char *guard_why_to_name(unsigned why) {
        return why < _GUARD_WHY_MAX ? why_table[why][0] : NULL;
}

const char *guard_why_to_string(unsigned why) {
        return why < _GUARD_WHY_MAX ? why_table[why][1] : NULL;
}

int guard_event_check(const void *data, size_t size) {
        const struct guard_event *e = data;

        if (size != sizeof(*e))
                return -EBADMSG;
        if (!guard_hook_to_string(e->hook) || !guard_why_to_name(e->why) ||
            (e->mode != GUARD_MODE_PERMISSIVE && e->mode != GUARD_MODE_ENFORCE && e->mode != GUARD_MODE_OFF))
                return -EBADMSG;
        return 0;
}

void guard_printable(const char *in, size_t size, char *out) {
        size_t i;

        for (i = 0; i < size && in[i]; i++)
                out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
        out[i] = 0;
}

int guard_event_message(const struct guard_event *e, char **ret) {
        char comm[sizeof(e->comm) + 1], exe[sizeof(e->exe_name) + 1], cgroup[sizeof(e->cgroup) + 1], file[96] = "";
        bool refused = e->mode != GUARD_MODE_PERMISSIVE;

        guard_printable(e->comm, sizeof(e->comm), comm);
        guard_printable(e->exe_name, sizeof(e->exe_name), exe);
        guard_printable(e->cgroup, sizeof(e->cgroup), cgroup);
        if (e->hook == GUARD_HOOK_READ_FILE)
                snprintf(file, sizeof(file), " of a file (device %u:%u, inode %llu)",
                         major(guard_user_dev(e->dev)), minor(guard_user_dev(e->dev)),
                         (unsigned long long) e->ino);
        else if (e->hook == GUARD_HOOK_BPF)
                snprintf(file, sizeof(file), " (command %u)", e->detail);
        else if (e->hook == GUARD_HOOK_BPF_MAP)
                snprintf(file, sizeof(file), " of a new fd of one of its maps");
        else if (e->hook == GUARD_HOOK_PTRACE)
                snprintf(file, sizeof(file), " access to modgated (mode 0x%x)", e->detail);
        if (asprintf(ret, "The guard %s %s()%s by %s[%u] (uid %u, executable %s, cgroup %s): %s.",
                     refused ? "refused" : "would have refused (permissive mode)",
                     guard_hook_to_string(e->hook) ?: "?", file, comm, e->tgid, e->uid, exe[0] ? exe : "?",
                     cgroup[0] ? cgroup : "?", guard_why_to_string(e->why) ?: "?") < 0)
                return -ENOMEM;
        return 0;
}

int guard_event_key(const struct guard_event *e, char *buf, size_t size) {
        char comm[sizeof(e->comm) + 1];
        int n;

        guard_printable(e->comm, sizeof(e->comm), comm);
        n = snprintf(buf, size, "%s:%s:%s", comm, guard_hook_to_string(e->hook) ?: "?",
                     guard_why_to_name(e->why) ?: "?");
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}

bool guard_modprobe_replaced(const char *current) {
        size_t n = strlen(GUARD_KERNEL_MODPROBE_DEFAULT);

        return current && strncmp(current, GUARD_KERNEL_MODPROBE_DEFAULT, n) == 0 &&
                (current[n] == 0 || strcmp(current + n, "\n") == 0);
}
