/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-varlink.h>

#include "decide.h"
#include "record-journal.h"
#include "resolver.h"

/* Sealing the kernel: kernel.modules_disabled=1, after which neither modgate nor anyone else can load
 * or unload a module until reboot. modgate seals when asked (Seal), after the loads in flight and a
 * final list; from the moment a Seal is accepted, and for as long as the kernel stays sealed, every
 * Load, Unload and Seal is refused with io.modgate.Manager.Sealed and a record of its own. */

typedef struct Manager Manager;
typedef struct SealRequest SealRequest;

/* The names of a Seal's final list: at most this many, each a Load of its own. */
#define SEAL_LOAD_MAX 1024U

typedef struct SealState {
        bool sealed;            /* kernel.modules_disabled reads 1 */
        uint64_t sealed_usec;   /* when this instance sealed it (CLOCK_REALTIME); 0: found sealed */
        SealRequest *request;   /* a Seal accepted and waiting for loads; requests are refused meanwhile */
        int sysctl_fd;          /* kernel.modules_disabled, open from the start; -ENOENT: the kernel has
                                 * none; another -errno: read by its path at every look */
} SealState;

/* At start: a kernel that is sealed already makes a daemon sealed from the start. Returns whether it
 * is; logs what it cannot read. */
bool seal_startup(Manager *m);

/* Whether a Load, Unload or Seal is refused now: the kernel is sealed, or being sealed. The sysctl is
 * read again each time, so that a seal by someone else (sysctl kernel.modules_disabled=1) is seen and
 * recorded once. */
bool seal_refuses(Manager *m);

/* seal_refuses(), as a decision's input says it: sealed, or a Seal waiting for loads. */
KernelSeal seal_kernel(Manager *m);

/* Refuses a request that seal_refuses(): its record, and io.modgate.Manager.Sealed. Returns the
 * reply's result. */
int seal_refuse(Manager *m, sd_varlink *link, const Requester *who, const char *method);

/* Runs an accepted Seal of who: the plans of its final list (names, in order, each judged as a Load
 * of it is) are loaded, every load in flight is waited for, then the kernel is sealed and link
 * answered (unless the call is oneway). Returns 0 to wait, the reply's result when it was answered at
 * once (Busy: a module of the list is loading from another file or with other parameters; nothing is
 * sealed), or -errno. */
int seal_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const Requester *who,
               char *const *names, Plan *const *plans, size_t n_plans);

/* Before the workers stop: a Seal that has not written the sysctl yet never will. */
void seal_cancel(Manager *m);
/* Once they stopped. */
void seal_done(Manager *m);
