/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "request.h"
#include "udev-rules.h"

#define PEER_GROUPS_MAX 64

/* What held of a connection's peer when the daemon accepted the connection, read once then
 * (peer_cache_connect()). Whatever grants more than reading must hold then and at each call: a
 * process that gains a capability or a unit after connecting gains nothing on that connection. */
typedef struct PeerAtConnect {
        bool known;             /* read then, from the process that connected, alive and no zombie */
        bool ids_changed;       /* its effective uid or gid then was not the one the kernel kept at
                                 * connect() (SO_PEERCRED): it ran a set-user-ID or set-group-ID program
                                 * between connect() and accept(); nothing read then counts */
        bool cap_sys_module;    /* CAP_SYS_MODULE in its effective set, in the initial user namespace */
        bool cap_dropped;       /* and a call on this connection since found it without: taken back,
                                 * it counts for nothing */
        bool other_userns;
        bool kernel_helper;
        const char *unit;       /* borrowed from the connection's record (peer.c) */
        bool system_unit;
        gid_t groups[PEER_GROUPS_MAX];
        size_t n_groups;
} PeerAtConnect;

/* Who is on the other end of a connection, as the kernel says (the peer's pidfd), never as the
 * client says: as it is at the call, and as it was when it connected. Read by peer_identify()
 * (peer.c); judged by authorize(), which does no I/O. */
typedef struct PeerIdentity {
        bool known;             /* read, and the pidfd still named the same process afterwards */
        bool exited;            /* it has exited and is a zombie (State: Z or X; or its main thread
                                 * has exited): whoever holds the connection now is another process */
        pid_t pid;
        uid_t uid;
        gid_t gid;
        gid_t groups[PEER_GROUPS_MAX]; /* supplementary groups, the first PEER_GROUPS_MAX */
        size_t n_groups;
        bool cap_sys_module;    /* CAP_SYS_MODULE in its effective set, in the initial user namespace */
        bool other_userns;      /* in a user namespace other than the daemon's (its capabilities count
                                 * for nothing there) */
        bool kernel_helper;     /* a kernel usermode helper: its parent is a kernel thread, and it is
                                 * in the root cgroup */
        char *unit;             /* the systemd unit its cgroup belongs to; NULL for none */
        char *cgroup;           /* its cgroup path */
        char comm[17];          /* its command name (/proc/PID/comm), for records: not authoritative */
        bool system_unit;       /* that unit is directly in system.slice, where only PID 1 makes units */
        PeerAtConnect connect;  /* what held when it connected */
} PeerIdentity;

void peer_identity_done(PeerIdentity *p);

/* Pure: whether the peer holds CAP_SYS_MODULE in the initial user namespace now, held it when it
 * connected, and no call on the connection found it without in between. */
bool peer_has_cap_sys_module(const PeerIdentity *p);

/* The units whose peers may claim a request source: udev's rules run modgate-udev inside udevd's
 * service, the boot list runs as its own service. */
#define UDEV_UNIT "systemd-udevd.service"
#define BOOT_UNIT "modgate-modules-load.service"

typedef enum AuthMethod {
        AUTH_LOAD,
        AUTH_UNLOAD,
        AUTH_RELOAD,
        AUTH_SEAL,              /* irreversible until reboot: the capability, as for Load and Unload */
        AUTH_READ,              /* Explain, and what only reports: root or the read group */
} AuthMethod;

/* What is asked, and for a udev request what the device says. */
typedef struct AuthRequest {
        AuthMethod method;
        const char *name;
        const char *modalias;
        const char *path;
        const char *parameters;
        bool source_given;              /* context.source was sent */
        RequestSource source;
        const char *devpath;
        bool device_exists;             /* the kernel announced it (its uevent), or /sys{devpath} is one */
        const char *device_unknown;     /* !device_exists: why, when the kernel sent no such event */
        const char *device_modalias;    /* MODALIAS= of its uevent, NULL when it has none */
        const char *device_subsystem;   /* its SUBSYSTEM= (sysfs: the name its subsystem link points to) */
        const UdevRuleName *rule_names; /* the module names udev's installed rules pass to modgate-udev */
        size_t n_rule_names;
        bool have_read_group;           /* [Manager] ReadGroup= is set: its members may use AUTH_READ */
        gid_t read_group;
} AuthRequest;

/* Pure: NULL when the peer may make the request; else the reason, in buf. A zombie peer may do
 * nothing. What only reports (AUTH_READ) is for root (the uid the kernel kept at connect()) and
 * members of the read group (at connect and now). A peer with CAP_SYS_MODULE (at connect and now:
 * peer_has_cap_sys_module()) may ask for anything, a source it claims must be its own, at connect and
 * now (kernel: a usermode helper; boot: the boot-list unit; udev: udevd's unit); a udev peer without
 * CAP_SYS_MODULE (udevd under the takeover) may load only what the device announces: the modalias its
 * sysfs directory has, or a name udev's rules pass for a device of its subsystem and kernel name; no
 * parameters, paths or unloads. */
const char *authorize(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size);

/* Pure: the unit of a /proc/PID/cgroup text, by systemd's rule: the first component of the path
 * (the unified hierarchy's, or the systemd hierarchy's on a hybrid system) that is not a slice.
 * Cgroups below a unit are the unit's (a delegated subtree may name its children anything: they
 * do not count). *ret NULL when none (a kernel thread's child, a process outside systemd);
 * *ret_system: the unit's slice is system.slice; *ret_root_cgroup: the path is "/". Returns 0,
 * -EBADMSG, -ENOMEM. */
int cgroup_unit(const char *proc_cgroup, char **ret, bool *ret_system, bool *ret_root_cgroup);

/* Pure: the cgroup path of a /proc/PID/cgroup text, chosen as cgroup_unit() chooses it. Returns 0,
 * -EBADMSG, -ENOMEM. */
int cgroup_path(const char *proc_cgroup, char **ret);
