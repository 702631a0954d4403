/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "authorize.h"

/* Per connection, what its peer is read through: /proc/PID of its pidfd's process, opened when the
 * connection is accepted (peer_cache_connect()) and closed when it disconnects (peer_cache_forget()),
 * and what held of it then. Its identity is read again at every call. */
typedef struct PeerCache PeerCache;

int peer_cache_new(PeerCache **ret);
PeerCache *peer_cache_free(PeerCache *c);
/* Reads the peer of a connection just accepted, once: its identity then is what every call on it
 * needs as well (PeerIdentity.connect). A peer that cannot be read then is refused at every call but
 * root's reading. Returns 0 or -ENOMEM. */
int peer_cache_connect(PeerCache *c, sd_varlink *link);
void peer_cache_forget(PeerCache *c, sd_varlink *link);

typedef enum PeerFlags {
        PEER_KERNEL_HELPER = 1 << 0,    /* find out whether it is a kernel usermode helper (its parent) */
} PeerFlags;

/* The identity of the connection's peer, from its pidfd (SO_PEERPIDFD): the process, its
 * capabilities and user namespace, its cgroup, and with PEER_KERNEL_HELPER its parent. What cannot
 * be read leaves it unknown, which authorize() refuses. Returns 0 or -ENOMEM. */
int peer_identify(PeerCache *c, sd_varlink *link, PeerFlags flags, PeerIdentity *ret);

/* What authorization takes of /proc/PID/status. */
typedef struct ProcStatus {
        char state;                     /* State:, its letter; 'Z' and 'X' for a process that has exited */
        uid_t euid;                     /* Uid:, the second (effective); (uid_t) -1 when missing */
        gid_t egid;                     /* Gid:, the second (effective); (gid_t) -1 when missing */
        unsigned long long cap_eff;     /* CapEff: */
        pid_t ppid;                     /* PPid: */
        gid_t groups[PEER_GROUPS_MAX];  /* Groups:, the first PEER_GROUPS_MAX */
        size_t n_groups;
        char comm[17];                  /* Name:, cut to the kernel's 16 bytes */
} ProcStatus;

/* Pure parsers of what the kernel says of a process, for peer_identify(). A /proc/PID/status text:
 * 0, or -EBADMSG when it has no CapEff: or PPid: (State:, Uid:, Gid:, Groups: and Name: may be
 * missing). */
int proc_status_parse(const char *text, ProcStatus *ret);
/* A /proc/PID/stat text: whether its flags have PF_KTHREAD. */
bool proc_stat_is_kthread(const char *stat);
/* A /proc/PID/uid_map text: whether it is the initial user namespace's (all of 0..2^32-2 onto
 * itself, one line). */
bool uid_map_is_initial(const char *map);
/* The MODALIAS= of a device's uevent text; *ret NULL when it has none or an empty one. 0 or -ENOMEM. */
int uevent_modalias(const char *uevent, char **ret);

/* The device udev names, for a udev request: whether /sys{devpath} is a device (it has a uevent
 * file), the MODALIAS= of its uevent and its subsystem (each NULL when it has none). Returns 0 or
 * -ENOMEM. */
int peer_read_device(const char *devpath, bool *ret_exists, char **ret_modalias, char **ret_subsystem);

