/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "hashmap.h"
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

/* Whether the pidfd's process has exited: a pidfd polls readable once it has, a zombie included,
 * whose /proc/PID/status still reads. */
static bool pidfd_exited(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        return poll(&p, 1, 0) != 0;
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
        ProcStatus s = { .euid = (uid_t) -1, .egid = (gid_t) -1 };
        char field[1024];
        unsigned id;

        assert(ret);

        if (status_field(text, "CapEff", field, sizeof(field)) < 0 ||
            sscanf(field, "%llx", &s.cap_eff) != 1 || status_field(text, "PPid", field, sizeof(field)) < 0)
                return -EBADMSG;
        s.ppid = (pid_t) strtol(field, NULL, 10);
        if (status_field(text, "State", field, sizeof(field)) >= 0)
                s.state = field[0];
        if (status_field(text, "Uid", field, sizeof(field)) >= 0 && sscanf(field, "%*u %u", &id) == 1)
                s.euid = (uid_t) id;
        if (status_field(text, "Gid", field, sizeof(field)) >= 0 && sscanf(field, "%*u %u", &id) == 1)
                s.egid = (gid_t) id;
        if (status_field(text, "Groups", field, sizeof(field)) >= 0)
                s.n_groups = parse_groups(field, s.groups, ELEMENTSOF(s.groups));
        if (status_field(text, "Name", field, sizeof(field)) >= 0)
                snprintf(s.comm, sizeof(s.comm), "%.16s", field);
        *ret = s;
        return 0;
}

/* What a connection's peer is read through, kept with the connection: /proc/PID opened once, and
 * found to be the pidfd's process then. A /proc/PID directory, and every file opened beneath it, is
 * bound to that process (its struct pid), not to its number: once the process is gone it reads
 * nothing (ESRCH, ENOENT), even when the number is reused. So nothing read through these needs the
 * pidfd looked at again, and a read shows the process as it is at that read: capabilities, groups,
 * cgroup and user namespace are read again at every call. What they were when the connection was
 * accepted is kept beside them, for what must hold at connect as well (authorize()). */
typedef struct PeerProc {
        pid_t pid;
        int dir_fd;
        int status_fd;
        int cgroup_fd;
        PeerAtConnect connect;          /* read once, when the connection was accepted */
        char *connect_unit;             /* connect.unit's own */
} PeerProc;

struct PeerCache {
        Hashmap *by_link;               /* "%p" of the link → PeerProc */
        struct stat userns;             /* the daemon's own user namespace, which it never leaves */
        bool userns_known;
        bool uid_map_initial;           /* and whether it is the initial one */
};

static void peer_proc_free(void *p) {
        PeerProc *pp = p;

        if (!pp)
                return;
        safe_close(pp->dir_fd);
        safe_close(pp->status_fd);
        safe_close(pp->cgroup_fd);
        free(pp->connect_unit);
        free(pp);
}

int peer_cache_new(PeerCache **ret) {
        PeerCache *c;
        char map[256];

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->by_link = hashmap_new(peer_proc_free);
        if (!c->by_link) {
                free(c);
                return -ENOMEM;
        }
        c->userns_known = stat("/proc/self/ns/user", &c->userns) >= 0;
        c->uid_map_initial = read_small_file_at(AT_FDCWD, "/proc/self/uid_map", map, sizeof(map)) >= 0 &&
                uid_map_is_initial(map);
        *ret = c;
        return 0;
}

PeerCache *peer_cache_free(PeerCache *c) {
        if (!c)
                return NULL;
        hashmap_free(c->by_link);
        free(c);
        return NULL;
}

static void link_key(sd_varlink *link, char key[static 32]) {
        snprintf(key, 32, "%p", (void *) link);
}

void peer_cache_forget(PeerCache *c, sd_varlink *link) {
        char key[32];

        if (!c)
                return;
        link_key(link, key);
        peer_proc_free(hashmap_remove(c->by_link, key));
}

/* /proc/PID of the pidfd's process, and its status and cgroup files. NULL when it has exited, or when
 * the daemon cannot open them (-ENOMEM only for memory). */
static int peer_proc_open(int pidfd, PeerProc **ret) {
        _cleanup_free_ PeerProc *p = NULL;
        char path[64];
        pid_t again;

        *ret = NULL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (PeerProc) { .dir_fd = -EBADF, .status_fd = -EBADF, .cgroup_fd = -EBADF };
        if (pidfd_pid(pidfd, &p->pid) < 0)
                return 0;
        snprintf(path, sizeof(path), "/proc/%d", (int) p->pid);
        p->dir_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        /* Opened by number: it must still be the process the pidfd names, and it must not have exited
         * (a zombie's number is not reused, but a zombie is no caller), or a new process with a reused
         * number was opened. */
        if (p->dir_fd < 0 || pidfd_pid(pidfd, &again) < 0 || again != p->pid || pidfd_exited(pidfd)) {
                peer_proc_free(TAKE_PTR(p));
                return 0;
        }
        p->status_fd = openat(p->dir_fd, "status", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        p->cgroup_fd = openat(p->dir_fd, "cgroup", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (p->status_fd < 0 || p->cgroup_fd < 0) {
                peer_proc_free(TAKE_PTR(p));
                return 0;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

/* A /proc file read again from its start: the kernel makes its text afresh at every read from 0. */
static int pread_text(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);

        if (n <= 0)
                return n < 0 ? negative_errno() : -ESRCH;
        buf[n] = '\0';
        return 0;
}

/* Whether the peer is in another user namespace than the initial one, where its capabilities mean
 * nothing to the kernel. /proc/PID/ns/user can be read only where the daemon may ptrace-read the
 * peer, which it may in a namespace uid 0 owns, and in its own when the peer's permitted
 * capabilities are among its own: then it is compared with the daemon's own (the initial one when
 * the daemon's uid_map says so). Where it cannot be read, the uid_map, which anyone may read: the
 * initial namespace maps all of 0..2^32-2 onto itself, a namespace made by anyone without
 * CAP_SETUID over that range maps less. Not readable and a full map means its own namespace with
 * more capabilities (an administrator), or a full-range namespace that another uid owns and that a
 * process holding CAP_SETUID over every uid mapped: a root-only way past this check. Read at every
 * call: a process may unshare(CLONE_NEWUSER) after connecting, and has every capability there. */
static bool in_other_userns(const PeerCache *c, const PeerProc *p) {
        char map[256];
        struct stat st;

        if (fstatat(p->dir_fd, "ns/user", &st, 0) >= 0 && c->userns_known)
                return st.st_ino != c->userns.st_ino || st.st_dev != c->userns.st_dev || !c->uid_map_initial;
        return read_small_file_at(p->dir_fd, "uid_map", map, sizeof(map)) < 0 || !uid_map_is_initial(map);
}

static bool status_exited(const ProcStatus *st) {
        return st->state == 'Z' || st->state == 'X';
}

/* What held of the peer when its connection was accepted, into p->connect. Read from the process
 * that connected: peer_proc_open() found the pidfd naming the pid it opened, alive, before; the
 * pidfd is looked at again after, so that a process that exited in between (a zombie reads on) is
 * not taken for one that holds what it held. The kernel kept the effective uid and gid it had at
 * connect() (SO_PEERCRED): different ones now mean an exec of a set-user-ID or set-group-ID program
 * since, which may have given it every capability, and nothing read now is what it was then. */
static int peer_proc_read_connect(PeerCache *c, PeerProc *p, sd_varlink *link, int pidfd) {
        char status[8192], cgroup[4096];
        PeerAtConnect a = {};
        bool root_cgroup = false;
        ProcStatus st;
        uid_t uid;
        gid_t gid;
        int r;

        if (pread_text(p->status_fd, status, sizeof(status)) < 0 || proc_status_parse(status, &st) < 0 ||
            status_exited(&st) || pread_text(p->cgroup_fd, cgroup, sizeof(cgroup)) < 0 ||
            sd_varlink_get_peer_uid(link, &uid) < 0 || sd_varlink_get_peer_gid(link, &gid) < 0)
                return 0;
        if (st.euid != uid || st.egid != gid) {
                p->connect.ids_changed = true;
                return 0;
        }
        r = cgroup_unit(cgroup, &p->connect_unit, &a.system_unit, &root_cgroup);
        if (r == -ENOMEM)
                return r;
        a.unit = p->connect_unit;
        a.other_userns = in_other_userns(c, p);
        a.cap_sys_module = (st.cap_eff & (1ULL << CAP_SYS_MODULE)) && !a.other_userns;
        /* Only a kernel usermode helper's claim asks this, and those run in the root cgroup. */
        a.kernel_helper = root_cgroup && parent_is_kthread(st.ppid);
        memcpy(a.groups, st.groups, sizeof(a.groups));
        a.n_groups = st.n_groups;
        a.known = !pidfd_exited(pidfd);
        p->connect = a;
        return 0;
}

int peer_cache_connect(PeerCache *c, sd_varlink *link) {
        PeerProc *p;
        char key[32];
        int pidfd, r;

        if (!c)
                return 0;
        /* Without a record, the connection's calls find its peer unknown, and are refused. */
        pidfd = sd_varlink_get_peer_pidfd(link);
        if (pidfd < 0)
                return 0;
        r = peer_proc_open(pidfd, &p);
        if (r < 0 || !p)
                return r;
        r = peer_proc_read_connect(c, p, link, pidfd);
        link_key(link, key);
        if (r >= 0)
                r = hashmap_put(c->by_link, key, p);
        if (r < 0)
                peer_proc_free(p);
        return r;
}

int peer_identify(PeerCache *c, sd_varlink *link, PeerFlags flags, PeerIdentity *ret) {
        char status[8192], cgroup[4096], key[32];
        PeerIdentity p = {};
        PeerProc *pp;
        ProcStatus st;
        bool root_cgroup = false;
        int r;

        assert(c);
        assert(ret);

        *ret = (PeerIdentity) {};
        /* Opened when the connection was accepted, never later: what is read at a call is "now",
         * and cannot stand for what held when it connected. */
        link_key(link, key);
        pp = hashmap_get(c->by_link, key);
        if (!pp)
                return 0;
        p.pid = pp->pid;
        if (sd_varlink_get_peer_uid(link, &p.uid) < 0)
                return 0;
        if (pread_text(pp->status_fd, status, sizeof(status)) < 0 || proc_status_parse(status, &st) < 0)
                return 0;
        (void) sd_varlink_get_peer_gid(link, &p.gid);
        memcpy(p.groups, st.groups, sizeof(p.groups));
        p.n_groups = st.n_groups;
        memcpy(p.comm, st.comm, sizeof(p.comm));
        p.connect = pp->connect;
        p.known = true;
        /* The rest of a zombie is not read: it is refused whatever it held. */
        p.exited = status_exited(&st);
        if (p.exited) {
                *ret = p;
                return 0;
        }

        if (pread_text(pp->cgroup_fd, cgroup, sizeof(cgroup)) < 0) {
                *ret = (PeerIdentity) {};
                return 0;
        }
        r = cgroup_unit(cgroup, &p.unit, &p.system_unit, &root_cgroup);
        if (r >= 0)
                r = cgroup_path(cgroup, &p.cgroup);
        if (r == -ENOMEM) {
                peer_identity_done(&p);
                return r;
        }
        p.other_userns = in_other_userns(c, pp);
        p.cap_sys_module = (st.cap_eff & (1ULL << CAP_SYS_MODULE)) && !p.other_userns;
        /* Found without it once, the connection has it no more: taken back, it grants nothing. */
        if (!p.cap_sys_module)
                pp->connect.cap_dropped = true;
        /* Only a claim of source "kernel" asks; its parent is read by number, as before any pidfd. */
        p.kernel_helper = (flags & PEER_KERNEL_HELPER) && root_cgroup && parent_is_kthread(st.ppid);
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
        assert(ret_exists);

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
