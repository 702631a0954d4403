/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* PID 1's file descriptor store (FileDescriptorStoreMax= of the unit): what modgated keeps across idle
 * exits and restarts lives there, not in a file. /run is writable by processes that hold no
 * CAP_SYS_MODULE (a ProtectKernelModules=yes service, udevd under the takeover); the store is not:
 * only the service's main process may add to it (NotifyAccess=main), and only a process that may
 * ptrace PID 1 or modgated can read its fds, which could then take CAP_SYS_MODULE from either. Without
 * a store (not started by systemd, FileDescriptorStoreMax=0) nothing is kept. */

/* Names of what is kept. Each is stored as NAME.GENERATION: a record replaced is stored anew under
 * the next generation before the old one is removed (PID 1 ignores an fd stored twice, so one name
 * cannot be reused for the same fd), and a start after a crash between the two takes the newest. */
#define FDSTORE_UEVENT "uevent"
#define FDSTORE_UEVENT_LOG "uevent-log"
#define FDSTORE_HISTORY "history"
#define FDSTORE_ROOTS "roots"
/* The guard's (guard.c): its links, which keep its programs attached (two for module loads, three
 * that protect it), and its three maps. */
#define FDSTORE_GUARD_READ "guard-read-file"
#define FDSTORE_GUARD_LOAD "guard-load-data"
#define FDSTORE_GUARD_BPF "guard-bpf"
#define FDSTORE_GUARD_BPF_MAP "guard-bpf-map"
#define FDSTORE_GUARD_PTRACE "guard-ptrace"
#define FDSTORE_GUARD_CONFIG "guard-config"
#define FDSTORE_GUARD_APPROVED "guard-approved"
#define FDSTORE_GUARD_EVENTS "guard-events"

/* Takes the fds passed at start ($LISTEN_FDS, $LISTEN_FDNAMES) other than the varlink sockets, which
 * sd_varlink_server_listen_auto() takes later: $LISTEN_FDS then describes those alone. Returns 0,
 * -EINVAL (the varlink sockets are not first, as PID 1 passes them: nothing taken), -ENOMEM. */
int fdstore_init(void);

/* Whether the service has a store ($FDSTORE, set by systemd when FileDescriptorStoreMax= is above 0,
 * and $NOTIFY_SOCKET). */
bool fdstore_available(void);

/* The newest fd stored as name, now owned by the caller, or -ENOENT. Older generations of it (a
 * replacement cut short by a crash) are closed and removed from the store. */
int fdstore_take(const char *name);

/* Closes what was passed and nobody took, and removes it from the store. */
void fdstore_done(void);

/* Stores fd (a copy: the caller keeps its own) as name, in place of what name was taken as or last
 * stored as. Returns 0, -EOPNOTSUPP without a store, or -errno. Safe from several threads. */
int fdstore_put(int fd, const char *name);

/* The same; with poll false PID 1 does not watch the fd for EPOLLHUP and EPOLLERR (it drops an fd that
 * reports them): a BPF map that has no poll of its own reports EPOLLERR at once. */
int fdstore_put_full(int fd, const char *name, bool poll);

/* Removes what name was taken as or last stored as. Returns 0, -EOPNOTSUPP or -errno. */
int fdstore_remove(const char *name);
