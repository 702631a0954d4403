/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "guard-util.h"
#include "macro.h"

/* The guard's loader (docs/guard.md): attaches the BPF LSM program of src/guard/ at start, or adopts
 * the one a previous instance attached, whose links and maps PID 1's fd store kept; tells it which
 * process is modgated; approves each file just before its finit_module(2); and reads its refusals.
 * The links outlive this process in the store, so the kernel keeps refusing while modgated is idle,
 * restarting or killed. */

typedef struct Guard Guard;

/* What the status and the log say. */
typedef struct GuardState {
        GuardMode mode;                 /* in force: OFF when not attached */
        GuardMode wanted;               /* configured, the kernel command line applied */
        bool from_cmdline;              /* wanted comes from modgate.guard= */
        bool built;                     /* this modgated has the program */
        bool lsm_active;                /* "bpf" in /sys/kernel/security/lsm */
        bool not_service;               /* this modgated is not the service's: it attaches none */
        bool attached;
        bool adopted;                   /* attached by an earlier instance, taken from the fd store */
        bool stored;                    /* kept in the fd store: it outlives this instance */
        bool protected_bpf;             /* its bpf(2) hook is attached too (not where the hook differs) */
        uint64_t attached_usec;         /* CLOCK_REALTIME of the attach, by whichever instance */
        uint64_t refusals;              /* records read by this instance: refused, or would be */
        int error;                      /* why it is not attached though wanted, negative errno */
        const char *unavailable;        /* and in words; NULL when it is attached or off */
} GuardState;

/* A refusal the program recorded, checked (guard_event_check()). */
typedef void (*guard_refusal_t)(const struct guard_event *e, void *userdata);

/* TESTS ONLY: set by modgated-test-wrong-hash's main(), never by modgated's. Every approval then
 * carries another SHA-256 than the file's, which the kernel's own hash must refuse. */
extern bool guard_test_wrong_hash;

/* Sets up the guard in mode: adopts what the fd store keeps (fdstore_init() ran), or attaches anew,
 * or, for GUARD_OFF, detaches what the store keeps. Never fails for the guard's own sake: what did
 * not work is in the state (the caller logs it once). before_attach (or NULL) is called when a new guard is
 * loaded, right before its programs are attached. not_service, when not NULL, says why this process is
 * not the service's modgated (one that listens on an address of its own): it attaches nothing and
 * detaches nothing, since a second guard would refuse the service's loads. Returns 0, or -ENOMEM. */
int guard_setup(sd_event *e, GuardMode mode, bool from_cmdline, const char *not_service, guard_refusal_t cb,
                void *userdata, void (*before_attach)(void), Guard **ret);
Guard *guard_free(Guard *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(Guard *, guard_free);

void guard_state(const Guard *g, GuardState *ret);

/* The identity of a file approved for one finit_module(2); zero when nothing was approved. */
typedef struct GuardTicket {
        __u64 dev;
        __u64 ino;
} GuardTicket;

/* Approves fd, the file about to be passed to finit_module(2) by this process: its inode as it is
 * now, and sha256 (NULL: not hashed), which the kernel compares with its own hash of the file. Returns 0 (a ticket to withdraw, or a zero one when the guard is not attached), or -errno (the
 * kernel would refuse the load: the caller does not try it). Safe from several threads. */
int guard_approve(Guard *g, int fd, const uint8_t *sha256, GuardTicket *ret);
/* Withdraws the approval after finit_module(2) returned. */
void guard_withdraw(Guard *g, const GuardTicket *t);

/* Reads what the ring buffer holds now (also done on the event loop as records come). */
void guard_drain(Guard *g);
