/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

/* The kernel's uevents, read from its netlink socket (NETLINK_KOBJECT_UEVENT, group 1, sender port 0:
 * the kernel alone), and the latest UEVENT_LOG_MAX of them kept: what udevd's requests are checked
 * against (a device the kernel announced, even if it is gone by the time udevd asks: parport_pc's
 * probe devices, a framebuffer that a DRM driver replaces), and the module events (loads and unloads
 * by others). The socket is kept in PID 1's fd store while the daemon does not run, so that events
 * sent meanwhile are read at the next start. */

/* Entries kept: udevd answers an event after its rules ran, behind the kernel by at most its queue. An
 * entry takes what the kernel sent (at most 2 KiB: UEVENT_BUFFER_SIZE). */
#define UEVENT_LOG_MAX 4096U
/* The receive buffer asked for: what waits while the daemon does not run, or while a coldplug's burst
 * comes faster than it reads (a few KiB per event). The kernel gives at most net.core.rmem_max
 * without CAP_NET_ADMIN, which modgated lacks. */
#define UEVENT_RCVBUF (8U * 1024U * 1024U)
#define UEVENT_MESSAGE_MAX 8192U

typedef struct Uevent {
        uint64_t seqnum;
        char *action;
        char *devpath;
        char *subsystem;        /* NULL: none */
        char *modalias;         /* NULL: none */
} Uevent;

void uevent_done(Uevent *u);

/* Pure: one message as the kernel sends it, "ACTION@DEVPATH" and then KEY=VALUE, each ending in NUL.
 * Returns 0, -EBADMSG (no ACTION, DEVPATH or SEQNUM: not a kernel uevent) or -ENOMEM. */
int uevent_parse(const char *buf, size_t size, Uevent *ret);

typedef void (*uevent_module_t)(const char *module, bool added, void *userdata);
typedef struct UeventLog UeventLog;

/* Follows the kernel's uevents on fd (one passed from the fd store, checked to be such a socket), or
 * on a new socket when fd < 0. cb is called for each module added or removed. Returns 0 or -errno;
 * fd is owned by the log either way. */
int uevent_log_new(sd_event *e, int fd, uevent_module_t cb, void *userdata, UeventLog **ret);
UeventLog *uevent_log_free(UeventLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(UeventLog *, uevent_log_free);

int uevent_log_fd(UeventLog *l);
/* The receive buffer the kernel gave, in bytes as SO_RCVBUF says. */
int uevent_log_rcvbuf(UeventLog *l);

/* Reads what the socket holds. Returns 0, or -errno of the socket. */
int uevent_log_read(UeventLog *l);

/* Pure, on the log's memory: adds an event, kept in SEQNUM order. The kernel takes an event's SEQNUM
 * before it broadcasts it (Linux 6.x: outside the broadcast's lock), so an event of another CPU can
 * come before one with a smaller SEQNUM: such an event is put in its place. One whose SEQNUM is
 * kept already is not the kernel's, and is dropped with -EINVAL. */
int uevent_log_add(UeventLog *l, Uevent *u);
/* Pure: events up to seqnum may have been sent without being kept here (sent before the socket was
 * opened, lost to an overflowed buffer, or forgotten as the log went round). */
void uevent_log_blind_until(UeventLog *l, uint64_t seqnum);

typedef enum UeventMatch {
        UEVENT_MATCH,           /* the kernel sent it: *ret_event */
        UEVENT_UNKNOWN,         /* the log cannot tell: at or below what it may have missed */
        UEVENT_NONE,            /* the kernel sent no such event: why says what differs */
} UeventMatch;

/* Pure: whether the kernel sent event seqnum for devpath with action (NULL: any). */
UeventMatch uevent_log_match(UeventLog *l, int64_t seqnum, const char *devpath, const char *action,
                             const Uevent **ret_event, char *why, size_t size);

/* The log, for the next instance: written to fd (a memfd kept in the fd store), read back with
 * uevent_log_restore() into the log of the same socket, whose blind spot it then continues (not
 * starting anew at the kernel's SEQNUM now), before anything is read. Returns 0, -EIO or -ENOMEM;
 * restore -EBADMSG when buf is not such a log, which leaves the log as it was, -EBUSY when it has
 * read events already. */
int uevent_log_save(UeventLog *l, int fd);
int uevent_log_restore(UeventLog *l, const char *buf, size_t size);

/* For unit tests: a log with no socket. */
int uevent_log_new_detached(UeventLog **ret);
