/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <sys/capability.h>
#include <time.h>

#include "capability.h"
#include "fileio.h"
#include "log.h"
#include "manager.h"

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
        } else if (s->wanted == GUARD_OFF)
                (void) log_full_errno(s->adopted ? LOG_NOTICE : LOG_INFO, 0, "The guard is off (%s)%s.", from,
                               s->adopted ? ": detached the one an earlier instance attached" : "");
        else
                (void) log_full_errno(LOG_NOTICE, s->error, "The guard is not attached: %s (%m). Modules load as without it; "
                               "loads by others are recorded only afterwards.", s->unavailable ?: "unknown");
}

int manager_guard_start(Manager *m) {
        GuardState s;
        bool from_cmdline;
        GuardMode mode;
        int r;

        mode = guard_mode(m, &from_cmdline);
        r = guard_setup(m->event, mode, from_cmdline, manager_record_guard, m, &m->guard);
        if (r < 0)
                return log_oom();
        guard_state(m->guard, &s);
        guard_log(&s);

        /* Attaching was all CAP_BPF and CAP_PERFMON were for: approvals and the ring buffer work on
         * the fds held. */
        r = capability_keep_only(CAP_SYS_MODULE);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities other than CAP_SYS_MODULE: %m");
        /* What was refused while no modgated ran waits in the ring buffer. */
        guard_drain(m->guard);
        return 0;
}
