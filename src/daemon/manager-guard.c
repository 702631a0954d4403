/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/capability.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "fileio.h"
#include "log.h"
#include "manager.h"
#include "record.h"

/* The mode in force: modgate.guard= of the kernel command line, the emergency switch, over [Guard]
 * Mode=. */
static GuardMode guard_mode(Manager *m, bool *ret_from_cmdline) {
        GuardMode mode = m->config.guard_mode;
        char cmdline[8192];
        int r;

        *ret_from_cmdline = false;
        r = read_small_file_at(AT_FDCWD, "/proc/cmdline", cmdline, sizeof(cmdline));
        if (r < 0) {
                log_warning_errno(r, "Failed to read /proc/cmdline, the guard's mode is [Guard] Mode=: %m");
                return mode;
        }
        r = guard_mode_from_cmdline(cmdline, &mode);
        if (r == -EINVAL)
                log_warning("Ignoring " GUARD_CMDLINE_KEY "= of the kernel command line: not off, permissive or "
                            "enforce. The guard's mode is [Guard] Mode=%s.", guard_mode_to_string(mode));
        *ret_from_cmdline = r > 0;
        return mode;
}

static void guard_log(const GuardState *s) {
        const char *from = s->from_cmdline ? GUARD_CMDLINE_KEY "= of the kernel command line" : "[Guard] Mode=";
        char since[64] = "?";
        struct tm tm;
        time_t t;

        if (s->attached) {
                t = (time_t) (s->attached_usec / 1000000U);
                if (localtime_r(&t, &tm))
                        strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S", &tm);
                log_info("The guard is attached (%s, from %s; %s %s%s): %s", guard_mode_to_string(s->mode), from,
                         s->adopted ? "kept by PID 1 since" : "attached at", since,
                         s->stored ? "" : "; no fd store, it detaches when modgated exits",
                         s->mode == GUARD_ENFORCE ? "the kernel refuses every module load but modgated's." :
                         "loads by other processes are recorded as the refusals they would be, and go on.");
                if (!s->protected_bpf)
                        log_notice("The guard's bpf(2) hook is not attached (this kernel's hook has "
                                   "other arguments than the program reads): its links and maps are still "
                                   "refused to others by id and through ptrace, but another BPF program may "
                                   "be attached to its hooks.");
        } else if (s->wanted == GUARD_OFF)
                (void) log_full_errno(s->adopted ? LOG_NOTICE : LOG_INFO, 0, "The guard is off (%s)%s.", from,
                               s->adopted ? ": detached the one an earlier instance attached" : "");
        else if (s->not_service)
                log_info("The guard is not attached: %s.", s->unavailable);
        else
                (void) log_full_errno(LOG_NOTICE, s->error, "The guard is not attached: %s (%m). Modules load as without it; "
                               "loads by others are recorded only afterwards.", s->unavailable ?: "unknown");
}

#define KERNEL_MODPROBE "/proc/sys/kernel/modprobe"

/* Under the guard the kernel's request_module() loads only through modgated; while kernel.modprobe is
 * still the kernel's /sbin/modprobe, the guard refuses what it loads (in enforce; permissive records
 * refusals enforce would not make). That is the case early in the boot: systemd-sysctl.service's
 * drop-in points it at modgate-modprobe, but a modprobe@ unit, udev or the boot list may start
 * modgated before that unit runs, and binfmt_misc's automount, for one, asks the kernel for its module
 * then. So modgated makes the same change itself right before it attaches (after the programs are
 * loaded, which takes seconds, during which a request would wait for modgated), where the build takes
 * over kernel.modprobe and the helper is installed; a helper the administrator chose stays. */
static void guard_kernel_modprobe(void) {
#if MODPROBE_TAKEOVER
        static const char value[] = MODGATE_MODPROBE_PATH "\n";
        _cleanup_close_ int fd = -EBADF;
        char current[PATH_MAX];
        ssize_t n;
        int r;

        r = read_small_file_at(AT_FDCWD, KERNEL_MODPROBE, current, sizeof(current));
        if (r < 0)
                return (void) log_debug_errno(r, "Failed to read " KERNEL_MODPROBE ": %m");
        if (!guard_modprobe_replaced(current))
                return;
        if (access(MODGATE_MODPROBE_PATH, X_OK) < 0)
                return (void) log_warning_errno(errno, MODGATE_MODPROBE_PATH " is not there (%m): the guard "
                                                "refuses the kernel's request_module() through "
                                                GUARD_KERNEL_MODPROBE_DEFAULT ".");
        fd = open(KERNEL_MODPROBE, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return (void) log_warning_errno(errno, "Failed to open " KERNEL_MODPROBE ", the guard "
                                                "refuses the kernel's request_module() until it is set: %m");
        n = write(fd, value, sizeof(value) - 1);
        if (n != (ssize_t) sizeof(value) - 1)
                return (void) log_warning_errno(n < 0 ? errno : EIO, "Failed to write " KERNEL_MODPROBE
                                                ", the guard refuses the kernel's request_module() until "
                                                "it is set: %m");
        log_info("kernel.modprobe = " MODGATE_MODPROBE_PATH ", before the guard is attached: the kernel's "
                 "requests load through modgated from now on, not through " GUARD_KERNEL_MODPROBE_DEFAULT ".");
#endif
}

int manager_guard_start(Manager *m) {
        GuardState s;
        bool from_cmdline;
        GuardMode mode;
        int r;

        mode = guard_mode(m, &from_cmdline);
        r = guard_setup(m->event, mode, from_cmdline,
                        m->listen_address ? "this modgated listens on an address of its own (--listen): only "
                        "the service's attaches the guard" : NULL,
                        manager_record_guard, m, guard_kernel_modprobe, &m->guard);
        if (r < 0)
                return log_oom();
        guard_state(m->guard, &s);
        guard_log(&s);

        /* Attaching was all CAP_BPF and CAP_PERFMON were for: approvals and the ring buffer work on
         * the fds held. CAP_SETPCAP, where it was kept for this, drops them from the bounding set too;
         * under the unit it is not there to keep, and NoNewPrivileges= leaves the bounding set
         * nothing to grant. */
        r = capability_keep_only(CAP_SYS_MODULE);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities other than CAP_SYS_MODULE: %m");
        return 0;
}
