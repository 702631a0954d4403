/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/openat2.h>

#include "fileio.h"
#include "macro.h"
#include "module-name.h"
#include "parse-util.h"
#include "peer.h"
#include "strv.h"

#define PF_KTHREAD 0x00200000

/* "Pid:" of the pidfd's fdinfo: the process it names, or -1 when that has exited. */
static int pidfd_pid(int pidfd, pid_t *ret) {
        char path[64], buf[4096], *p;
        int r;

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        r = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
        if (r < 0)
                return r;
        p = strstr(buf, "\nPid:\t");
        if (!p)
                return -EOPNOTSUPP;
        *ret = (pid_t) strtol(p + 6, NULL, 10);
        return *ret > 0 ? 0 : -ESRCH;
}

static int status_field(const char *status, const char *key, char *buf, size_t size) {
        const char *p = status;
        size_t n = strlen(key);

        for (;;) {
                if (strncmp(p, key, n) == 0 && p[n] == ':') {
                        p += n + 1;
                        p += strspn(p, " \t");
                        snprintf(buf, size, "%.*s", (int) strcspn(p, "\n"), p);
                        return 0;
                }
                p = strchr(p, '\n');
                if (!p)
                        return -ENOENT;
                p++;
        }
}

bool proc_stat_is_kthread(const char *stat) {
        const char *p = strrchr(stat, ')');     /* comm may hold anything but ')' is its end */
        unsigned long flags;

        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
                return false;
        return flags & PF_KTHREAD;
}

/* Whether pid's parent is a kernel thread: field 9 of /proc/PPID/stat has PF_KTHREAD. */
static bool parent_is_kthread(pid_t ppid) {
        char path[64], buf[1024];

        if (ppid <= 0)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) ppid);
        if (read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
                return false;
        return proc_stat_is_kthread(buf);
}

bool uid_map_is_initial(const char *map) {
        unsigned long inner, outer, count;

        return sscanf(map, "%lu %lu %lu", &inner, &outer, &count) == 3 && inner == 0 && outer == 0 &&
                count == 4294967295UL && strchr(map, '\n') == map + strlen(map) - 1;
}

/* Whether the peer is in another user namespace than ours, where its capabilities mean nothing to
 * the kernel. First its uid_map, which anyone may read: the initial namespace maps the whole range
 * onto itself, a namespace made without CAP_SETUID over that range maps less. Then, for one that
 * maps it all, the namespace itself: /proc/PID/ns/user can be read only where the daemon may
 * ptrace-read the peer, which it may in a namespace uid 0 owns (then it compares), and in its own
 * when the peer's permitted capabilities are among its own. Not readable means its own namespace
 * with more capabilities (an administrator), or a full-range namespace that another uid owns and
 * that a process holding CAP_SETUID over every uid mapped: a root-only way past this check. */
static bool in_other_userns(pid_t pid) {
        char path[64], map[256];
        struct stat a, b;

        /* Anyone may read uid_map: the initial namespace maps all of 0..2^32-2 onto itself, a
         * namespace made by anyone without CAP_SETUID over that range maps less. */
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int) pid);
        if (read_small_file_at(AT_FDCWD, path, map, sizeof(map)) < 0 || !uid_map_is_initial(map))
                return true;

        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int) pid);
        if (stat(path, &a) < 0 || stat("/proc/self/ns/user", &b) < 0)
                return false;
        return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

/* Signal 0 through the pidfd: the process is there unless the kernel says ESRCH. EPERM is an answer
 * too (the daemon has no CAP_KILL over another uid's process), and means it exists. */
static bool pidfd_alive(int pidfd) {
        return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) >= 0 || errno == EPERM;
}

/* The "Groups:" of /proc/PID/status: decimal gids separated by blanks. */
static size_t parse_groups(const char *s, gid_t *a, size_t max) {
        size_t n = 0;

        while (n < max) {
                char *end;
                unsigned long g;

                s += strspn(s, " \t");
                if (*s < '0' || *s > '9')
                        break;
                g = strtoul(s, &end, 10);
                a[n++] = (gid_t) g;
                s = end;
        }
        return n;
}

int proc_status_parse(const char *text, ProcStatus *ret) {
        ProcStatus s = {};
        char field[1024];

        if (status_field(text, "CapEff", field, sizeof(field)) < 0 || sscanf(field, "%llx", &s.cap_eff) != 1 ||
            status_field(text, "PPid", field, sizeof(field)) < 0)
                return -EBADMSG;
        s.ppid = (pid_t) strtol(field, NULL, 10);
        if (status_field(text, "Groups", field, sizeof(field)) >= 0)
                s.n_groups = parse_groups(field, s.groups, ELEMENTSOF(s.groups));
        if (status_field(text, "Name", field, sizeof(field)) >= 0)
                snprintf(s.comm, sizeof(s.comm), "%.16s", field);
        *ret = s;
        return 0;
}

int peer_identify(sd_varlink *link, PeerIdentity *ret) {
        char path[64], status[8192], cgroup[4096];
        PeerIdentity p = {};
        ProcStatus st;
        pid_t again;
        bool root_cgroup = false;
        int pidfd, r;

        *ret = (PeerIdentity) {};
        pidfd = sd_varlink_get_peer_pidfd(link);
        if (pidfd < 0 || pidfd_pid(pidfd, &p.pid) < 0 || sd_varlink_get_peer_uid(link, &p.uid) < 0)
                return 0;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) p.pid);
        if (read_small_file_at(AT_FDCWD, path, status, sizeof(status)) < 0 || proc_status_parse(status, &st) < 0)
                return 0;
        (void) sd_varlink_get_peer_gid(link, &p.gid);
        memcpy(p.groups, st.groups, sizeof(p.groups));
        p.n_groups = st.n_groups;
        memcpy(p.comm, st.comm, sizeof(p.comm));

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) p.pid);
        if (read_small_file_at(AT_FDCWD, path, cgroup, sizeof(cgroup)) < 0)
                return 0;
        r = cgroup_unit(cgroup, &p.unit, &p.system_unit, &root_cgroup);
        if (r >= 0)
                r = cgroup_path(cgroup, &p.cgroup);
        if (r == -ENOMEM) {
                peer_identity_done(&p);
                return r;
        }
        p.other_userns = in_other_userns(p.pid);
        p.cap_sys_module = (st.cap_eff & (1ULL << CAP_SYS_MODULE)) && !p.other_userns;
        p.kernel_helper = root_cgroup && parent_is_kthread(st.ppid);

        /* Everything above was read by pid: it must still be the process the pidfd names, or a new
         * process with a reused pid was read. */
        if (pidfd_pid(pidfd, &again) < 0 || again != p.pid || !pidfd_alive(pidfd)) {
                peer_identity_done(&p);
                return 0;
        }
        p.known = true;
        *ret = p;
        return 0;
}

int uevent_modalias(const char *uevent, char **ret) {
        size_t n;

        *ret = NULL;
        for (const char *p = uevent; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "MODALIAS=", 9) == 0) {
                        p += 9;
                        n = strcspn(p, "\n");
                        if (n == 0)
                                return 0;
                        *ret = strndup(p, n);
                        return *ret ? 0 : -ENOMEM;
                }
        return 0;
}

int peer_read_device(const char *devpath, bool *ret_exists, char **ret_modalias, char **ret_subsystem) {
        struct open_how how = {
                .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        _cleanup_close_ int sys = -EBADF, fd = -EBADF, dir = -EBADF;
        _cleanup_free_ char *path = NULL;
        char buf[16384], link[PATH_MAX], *p;
        ssize_t k;

        *ret_exists = false;
        *ret_modalias = NULL;
        *ret_subsystem = NULL;
        /* The device's uevent file is what the kernel sends in its uevents, made afresh when it is
         * read: its MODALIAS= is what udev got (not every device has a modalias attribute: a CPU's
         * is in its uevent only). Opened beneath /sys without following a symlink, leaving sysfs
         * or going up: "/../tmp/x" or a file system mounted below /sys (bpf) is no device. */
        if (devpath[0] != '/' || asprintf(&path, "%s/uevent", devpath + 1) < 0)
                return devpath[0] != '/' ? 0 : -ENOMEM;
        sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sys < 0)
                return 0;
        fd = (int) syscall(SYS_openat2, sys, path, &how, sizeof(how));
        if (fd < 0)
                return 0;
        k = read(fd, buf, sizeof(buf) - 1);
        if (k < 0)
                return 0;
        buf[k] = '\0';
        *ret_exists = true;

        /* Its subsystem: the link "subsystem" in the device's directory, read without following. */
        path[strlen(path) - strlen("/uevent")] = '\0';
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        dir = (int) syscall(SYS_openat2, sys, path, &how, sizeof(how));
        if (dir >= 0 && (k = readlinkat(dir, "subsystem", link, sizeof(link) - 1)) > 0) {
                link[k] = '\0';
                p = strrchr(link, '/');
                *ret_subsystem = strdup(p ? p + 1 : link);
                if (!*ret_subsystem)
                        return -ENOMEM;
        }
        return uevent_modalias(buf, ret_modalias);
}
