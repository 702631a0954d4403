/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fileio.h"
#include "parse-util.h"
#include "record-journal.h"
#include "uevent-log.h"

/* The kernel's multicast group of uevents (udevd's own messages go to group 2). */
#define UEVENT_GROUP_KERNEL 1U
/* Read per wakeup at most: the loop serves requests between bursts. */
#define UEVENT_READ_BATCH 256U

struct UeventLog {
        int fd;
        sd_event_source *source;
        uevent_module_t cb;
        void *userdata;
        Uevent ring[UEVENT_LOG_MAX];
        size_t first, n;        /* the oldest entry, and how many */
        uint64_t blind;         /* an event up to this SEQNUM may be missing */
        bool overflowed;        /* ENOBUFS, not yet recorded */
};

void uevent_done(Uevent *u) {
        free(u->action);
        free(u->devpath);
        free(u->subsystem);
        free(u->modalias);
        *u = (Uevent) {};
}

/* A value as udev passes it on: without the newline that some of the kernel's end with (a CPU's
 * MODALIAS is printed as its sysfs attribute is, "...\n"). */
static int set_value(char **field, const char *value) {
        size_t n = strlen(value);
        char *s;

        while (n > 0 && value[n - 1] == '\n')
                n--;
        s = strndup(value, n);
        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

int uevent_parse(const char *buf, size_t size, Uevent *ret) {
        _cleanup_(uevent_done) Uevent u = {};
        bool have_seqnum = false;
        size_t n;
        int r = 0;

        assert(ret);

        /* The header "ACTION@DEVPATH", then KEY=VALUE strings; a message of udevd's ("libudev") has
         * no '@' in its first string. */
        n = strnlen(buf, size);
        if (n == size || !memchr(buf, '@', n))
                return -EBADMSG;
        for (size_t i = n + 1; i < size; i += n + 1) {
                const char *s = buf + i;

                n = strnlen(s, size - i);
                if (n == size - i)
                        break;          /* the last string has no NUL: cut, left out */
                if (strncmp(s, "ACTION=", 7) == 0)
                        r = set_value(&u.action, s + 7);
                else if (strncmp(s, "DEVPATH=", 8) == 0)
                        r = set_value(&u.devpath, s + 8);
                else if (strncmp(s, "SUBSYSTEM=", 10) == 0)
                        r = set_value(&u.subsystem, s + 10);
                else if (strncmp(s, "MODALIAS=", 9) == 0 && s[9])
                        r = set_value(&u.modalias, s + 9);
                else if (strncmp(s, "SEQNUM=", 7) == 0)
                        have_seqnum = parse_uint64(s + 7, &u.seqnum) >= 0;
                if (r < 0)
                        return r;
        }
        if (!u.action || !u.devpath || u.devpath[0] != '/' || !have_seqnum)
                return -EBADMSG;
        *ret = u;
        u = (Uevent) {};
        return 0;
}

static Uevent *entry(UeventLog *l, size_t i) {
        return &l->ring[(l->first + i) % UEVENT_LOG_MAX];
}

/* The index of the first entry whose SEQNUM is seqnum or later (l->n when none is). */
static size_t lower_bound(UeventLog *l, uint64_t seqnum) {
        size_t lo = 0, hi = l->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (entry(l, mid)->seqnum < seqnum)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

int uevent_log_add(UeventLog *l, Uevent *u) {
        size_t at;

        assert(l);

        at = lower_bound(l, u->seqnum);
        if (at < l->n && entry(l, at)->seqnum == u->seqnum)
                return -EINVAL;
        if (l->n == UEVENT_LOG_MAX) {
                Uevent *oldest = entry(l, 0);

                /* Older than all that is kept: it would be forgotten first. */
                if (at == 0) {
                        uevent_log_blind_until(l, u->seqnum);
                        uevent_done(u);
                        return 0;
                }
                /* Forgotten: what udevd still asks about it, sysfs answers. */
                uevent_log_blind_until(l, oldest->seqnum);
                uevent_done(oldest);
                l->first = (l->first + 1) % UEVENT_LOG_MAX;
                l->n--;
                at--;
        }
        /* Usually the last: SEQNUMs are taken before the kernel's broadcast, which another CPU's event
         * may pass, so a few come out of order. */
        for (size_t i = l->n; i > at; i--)
                *entry(l, i) = *entry(l, i - 1);
        *entry(l, at) = *u;
        l->n++;
        *u = (Uevent) {};
        return 0;
}

void uevent_log_blind_until(UeventLog *l, uint64_t seqnum) {
        assert(l);

        l->blind = MAX(l->blind, seqnum);
}

static const Uevent *find(UeventLog *l, uint64_t seqnum) {
        size_t at = lower_bound(l, seqnum);

        return at < l->n && entry(l, at)->seqnum == seqnum ? entry(l, at) : NULL;
}

UeventMatch uevent_log_match(UeventLog *l, int64_t seqnum, const char *devpath, const char *action,
                             const Uevent **ret_event, char *why, size_t size) {
        const Uevent *u;

        assert(l);

        if (seqnum < 0) {
                snprintf(why, size, "the request gives no SEQNUM of the kernel's event");
                return UEVENT_NONE;
        }
        u = find(l, (uint64_t) seqnum);
        if (!u) {
                if ((uint64_t) seqnum <= l->blind)
                        return UEVENT_UNKNOWN;
                snprintf(why, size, "the kernel sent no uevent %lld", (long long) seqnum);
                return UEVENT_NONE;
        }
        if (!streq_ptr(u->devpath, devpath)) {
                snprintf(why, size, "the kernel's uevent %lld is for %s, not %s", (long long) seqnum,
                         u->devpath, devpath);
                return UEVENT_NONE;
        }
        if (action && !streq_ptr(u->action, action)) {
                snprintf(why, size, "the kernel's uevent %lld for %s is \"%s\", not \"%s\"",
                         (long long) seqnum, devpath, u->action, action);
                return UEVENT_NONE;
        }
        *ret_event = u;
        return UEVENT_MATCH;
}

/* The kernel's SEQNUM now: every event after it reaches a socket bound before it was read. */
static uint64_t kernel_seqnum(void) {
        char buf[32];
        uint64_t n;

        if (read_line_at(AT_FDCWD, "/sys/kernel/uevent_seqnum", buf, sizeof(buf)) < 0 ||
            parse_uint64(buf, &n) < 0)
                return UINT64_MAX;      /* unknown: nothing the log lacks proves anything */
        return n;
}

static void module_event(UeventLog *l, const Uevent *u) {
        const char *name;

        if (!l->cb || !streq_ptr(u->subsystem, "module"))
                return;
        if (!streq_ptr(u->action, "add") && !streq_ptr(u->action, "remove"))
                return;
        name = strrchr(u->devpath, '/');
        if (name && name[1])
                l->cb(name + 1, u->action[0] == 'a', l->userdata);
}

/* One message: 1 read, 0 nothing waits, -errno. Only the kernel's (sender port 0) count. */
static int read_one(UeventLog *l) {
        _cleanup_(uevent_done) Uevent u = {};
        char buf[UEVENT_MESSAGE_MAX];
        struct sockaddr_nl sender = {};
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr msg = {
                .msg_name = &sender, .msg_namelen = sizeof(sender), .msg_iov = &iov, .msg_iovlen = 1,
        };
        ssize_t k;

        k = recvmsg(l->fd, &msg, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (k < 0 && errno == ENOBUFS) {
                /* Some events were dropped, which is unknown: all up to now may be missing. */
                uevent_log_blind_until(l, kernel_seqnum());
                if (!l->overflowed)
                        journal_record_uevents_lost(l->blind, uevent_log_rcvbuf(l));
                l->overflowed = true;
                return 1;
        }
        if (k < 0)
                return negative_errno();
        l->overflowed = false;
        if (sender.nl_family != AF_NETLINK || sender.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC))
                return 1;
        if (uevent_parse(buf, (size_t) k, &u) < 0)
                return 1;
        module_event(l, &u);
        if (uevent_log_add(l, &u) == -ENOMEM)
                return -ENOMEM;
        return 1;
}

int uevent_log_read(UeventLog *l) {
        int r;

        assert(l);

        if (l->fd < 0)
                return 0;
        do
                r = read_one(l);
        while (r > 0);
        return r;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UeventLog *l = userdata;

        for (unsigned i = 0; i < UEVENT_READ_BATCH; i++)
                if (read_one(l) <= 0)
                        break;
        return 0;
}

static int socket_new(void) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = UEVENT_GROUP_KERNEL };
        _cleanup_close_ int fd = -EBADF;
        int size = UEVENT_RCVBUF;

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (fd < 0)
                return negative_errno();
        /* Capped silently at net.core.rmem_max: SO_RCVBUFFORCE needs CAP_NET_ADMIN. */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/* What the fd store gave back is a kernel uevent socket, or nothing of ours. */
static int socket_check(int fd) {
        int v[3] = {};
        socklen_t len = sizeof(int);

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v[0], &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v[1], &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &v[2], &len) < 0)
                return negative_errno();
        if (v[0] != AF_NETLINK || v[1] != NETLINK_KOBJECT_UEVENT || v[2] != SOCK_RAW)
                return -ENOTSOCK;
        return fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ? negative_errno() : 0;
}

int uevent_log_new_detached(UeventLog **ret) {
        UeventLog *l = calloc(1, sizeof(UeventLog));

        if (!l)
                return -ENOMEM;
        l->fd = -EBADF;
        *ret = l;
        return 0;
}

int uevent_log_new(sd_event *e, int fd, uevent_module_t cb, void *userdata, UeventLog **ret) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL;
        int r;

        r = uevent_log_new_detached(&l);
        if (r < 0) {
                (void) safe_close(fd);
                return r;
        }
        l->cb = cb;
        l->userdata = userdata;
        l->fd = fd;
        r = fd >= 0 ? socket_check(fd) : 0;
        if (r < 0)
                return r;
        if (l->fd < 0) {
                l->fd = socket_new();
                if (l->fd < 0)
                        return l->fd;
        }
        /* Before this start, the log knows nothing: events the socket holds (sent while no daemon
         * ran) are read next, the others are sysfs's to answer. */
        uevent_log_blind_until(l, kernel_seqnum());
        r = sd_event_add_io(e, &l->source, l->fd, EPOLLIN, on_readable, l);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

UeventLog *uevent_log_free(UeventLog *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->source);
        for (size_t i = 0; i < l->n; i++)
                uevent_done(entry(l, i));
        (void) safe_close(l->fd);
        free(l);
        return NULL;
}

/* What is saved: "B SEQNUM" then each event as the kernel sends it, each string ending in NUL, and
 * an event ending in an empty string. */
int uevent_log_save(UeventLog *l, int fd) {
        _cleanup_(fclosep) FILE *f = NULL;
        int copy;

        assert(l);

        copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return negative_errno();
        f = fdopen(copy, "we");
        if (!f) {
                (void) safe_close(copy);
                return -ENOMEM;
        }
        fprintf(f, "B %llu", (unsigned long long) l->blind);
        fputc('\0', f);
        fputc('\0', f);
        for (size_t i = 0; i < l->n; i++) {
                const Uevent *u = entry(l, i);

                fprintf(f, "%s@%s%cACTION=%s%cDEVPATH=%s%cSEQNUM=%llu%c", u->action, u->devpath, 0,
                        u->action, 0, u->devpath, 0, (unsigned long long) u->seqnum, 0);
                if (u->subsystem)
                        fprintf(f, "SUBSYSTEM=%s%c", u->subsystem, 0);
                if (u->modalias)
                        fprintf(f, "MODALIAS=%s%c", u->modalias, 0);
                fputc('\0', f);
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

static int restore(UeventLog *l, const char *buf, size_t size) {
        unsigned long long blind;
        const char *end = buf + size, *p, *stop;

        stop = memmem(buf, size, "\0\0", 2);
        if (!stop || sscanf(buf, "B %llu", &blind) != 1)
                return -EBADMSG;
        for (p = stop + 2; p < end;) {
                _cleanup_(uevent_done) Uevent u = {};
                const char *e = memmem(p, (size_t) (end - p), "\0\0", 2);
                int r;

                if (!e)
                        return -EBADMSG;
                r = uevent_parse(p, (size_t) (e - p) + 1, &u);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || uevent_log_add(l, &u) < 0)
                        return -EBADMSG;
                p = e + 2;
        }
        /* Continued: what the socket holds next follows what the last instance read. */
        l->blind = (uint64_t) blind;
        return 0;
}

int uevent_log_restore(UeventLog *l, const char *buf, size_t size) {
        uint64_t blind = l->blind;
        int r;

        assert(l);

        if (l->n > 0)
                return -EBUSY;
        r = restore(l, buf, size);
        if (r < 0) {
                for (size_t i = 0; i < l->n; i++)
                        uevent_done(entry(l, i));
                l->first = l->n = 0;
                l->blind = blind;
        }
        return r;
}

int uevent_log_fd(UeventLog *l) {
        assert(l);

        return l->fd;
}

int uevent_log_rcvbuf(UeventLog *l) {
        socklen_t len = sizeof(int);
        int size = 0;

        assert(l);

        if (l->fd < 0 || getsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &size, &len) < 0)
                return -1;
        return size;
}
