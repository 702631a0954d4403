/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "chatter.h"
#include "guard-util.h"
#include "module-result.h"
#include "request.h"

/* The message ids of modgate's journal records; explained in catalog/modgate.catalog. */
#define MODGATE_MESSAGE_MODULE_LOADED "9f556e7045894398898a0967ca80c0b2"
#define MODGATE_MESSAGE_MODULE_PRESENT "9804cc4e5ad548c785ff9f16da0c915f"
#define MODGATE_MESSAGE_MODULE_DENIED "3c67f0aec4794a73a35a7cb128a9d622"
#define MODGATE_MESSAGE_MODULE_FAILED "13e53cc4fa4c4374879d2a1775a89733"
#define MODGATE_MESSAGE_MODULE_UNLOADED "fa479a41770b4c8c9ac677d2e9139751"
#define MODGATE_MESSAGE_NOT_FOUND "e17a107dd17e44e68aa0f15806e59623"
#define MODGATE_MESSAGE_ROOT_PINNED "283c442698e34f96a0fb27a1446e33af"
#define MODGATE_MESSAGE_ROOT_CHANGED "6612a8c94965478dbfa239919e1ab334"
#define MODGATE_MESSAGE_CALLER_REFUSED "f68712d0c1414e768ead0ce5ff450860"
#define MODGATE_MESSAGE_WOULD_DENY "ac5ab2e33ad24e5fb0c5cc6c3c2f8e4b"
#define MODGATE_MESSAGE_SUMMARY "c8d1b1d2700740cfa317dadecaa59c5f"
#define MODGATE_MESSAGE_REFUSALS_COUNTED "bb53ea26cd364226b2ce5d3c142f7111"
#define MODGATE_MESSAGE_STARTED "0b62bd3196754f93821022336e8ce9fa"
#define MODGATE_MESSAGE_OUTSIDE "768173c3df9f4d60887b5916985cefb3"
#define MODGATE_MESSAGE_GONE "50f3e70422fa4192b532eb77cc65998a"
#define MODGATE_MESSAGE_SEALED "2599f1fbbcb64d94a435dc58f3b46dd0"
#define MODGATE_MESSAGE_SEALED_REFUSED "25972186cde14878944b0edb085df09a"
#define MODGATE_MESSAGE_INPUT_IGNORED "9e22e8cd04ac4b1b96efdff8468ffa49"
#define MODGATE_MESSAGE_SIGNAL_IGNORED "5f6d944c146d4f51b242f50c3989ef5f"
#define MODGATE_MESSAGE_UEVENTS_LOST "d0a09ce1568c4f8e960a853349dea73f"
#define MODGATE_MESSAGE_GUARD "45a3b6475ec4408a9ce9692356845553"

/* Who asked, copied out of the request so that a job can outlive it. */
typedef struct Requester {
        char *name;             /* exactly one of name, modalias and path, as the client sent it */
        char *modalias;
        char *path;
        RequestSource source;
        char *devpath;
        char *subsystem;
        char *action;
        char *file;
        int64_t seqnum;         /* -1 when not given */
        bool have_peer;
        char *unit;             /* the peer's systemd unit, when it is in one */
        char *cgroup;           /* the peer's cgroup */
        char *comm;             /* the peer's command name */
        char *vendor;           /* the modalias's device, as udev's hardware database names it */
        char *model;
        bool source_given;      /* the request named its source (else "admin" is assumed, not claimed) */
        pid_t pid;
        uid_t uid;
} Requester;

int requester_copy(const Requester *from, Requester *to);
void requester_done(Requester *r);

/* Requests that joined a load after the first, kept for its record; more are only counted. */
#define REQUESTERS_JOINED_MAX 8U

/* Everyone who asked for one load: the first, those who joined it (at most REQUESTERS_JOINED_MAX),
 * and how many asked in all. */
typedef struct Requesters {
        const Requester *first;
        const Requester *joined;
        size_t n_joined;
        unsigned n;
} Requesters;

/* Writes one journal record for the decision on one module. When the journal cannot be reached the
 * same fields go to stderr on one line, so that no decision goes unrecorded. */
void journal_record_module(const Requesters *who, const ModuleResult *r);

/* A request that matched no module. */
void journal_record_not_found(const Requester *who, char *const *blacklisted);

/* The outcome of an Unload request; error is 0 on success. */
void journal_record_unload(const Requester *who, const char *module, int error, const char *reason);

/* A request refused because of who asked: the peer, what it asked (the claimed context, as
 * claimed) and why. */
void journal_record_refused_caller(const Requester *who, const char *method, const char *reason);

/* A decision of the module policy: a module, or a request key when module is NULL. */
typedef struct PolicyRecord {
        const char *module;
        Role role;
        const char *parameter;  /* a parameter the rule refused, when that was the reason */
        const char *rule;       /* "FILE:LINE (Deny=...)", or NULL when no rule but the administrator's
                                 * options refused a parameter */
        const char *reason;     /* the whole sentence, with the chain through dependencies */
        bool would;             /* permissive mode: recorded as would-deny, and the load goes on */
} PolicyRecord;

void journal_record_policy(const Requester *who, const PolicyRecord *pr);

/* A module in the kernel that modgate did not load (how: when and how it was found), with the taint
 * flags it brought; or, gone, one modgate knew as loaded that is no longer there, unloaded by someone
 * else. */
void journal_record_outside(const char *module, const char *taint, const char *how, bool gone);

/* One window's repeated answers of a kind from a peer (or from the peers folded together), counted
 * instead of journaled one by one. */
void journal_record_summary(const ChatterSummary *s, unsigned window_sec);

/* The daemon started: its version, the policy in force, what the kernel enforces, the module tree,
 * and whether the kernel is sealed already. */
void journal_record_started(const char *version, const char *policy_digest, const char *mode,
                            const char *enforcement, const char *tree, bool sealed);

/* The kernel was sealed (kernel.modules_disabled=1): by a Seal of who, with the modules its final
 * list named and those whose loads it waited for; or, who NULL, found sealed by someone else. */
void journal_record_sealed(const Requester *who, char *const *load, char *const *pending);

/* A request refused because the kernel is sealed, or is being sealed. */
void journal_record_sealed_refusal(const Requester *who, const char *method, bool sealing);

/* A trusted root pinned: its identity now, and what was recorded at its first pin this boot (NULL
 * when this is the first); changed when the two differ. */
void journal_record_root(const char *path, const char *identity, const char *recorded, bool changed);

/* On the main thread: what the fresh pins of the roots found since the last call (a pin may happen on
 * a worker thread, which writes no records), each recorded once. */
void journal_record_root_pins(TrustedRoot *const *roots, size_t n_roots);

/* Files that once were read and no longer are (modgate.conf in /run/modgate, /run/modprobe.d): what
 * they are (input, "configuration" or "modprobe.d"), and the files, which are left as they are. */
void journal_record_input_ignored(const char *input, char *const *files);

/* A signal that only PID 1 may send (SIGHUP: reload), sent by another process: its pid, uid, and its
 * command name and unit when they could be read. */
void journal_record_signal_ignored(const char *signal, pid_t pid, uid_t uid, const char *comm,
                                   const char *unit);

/* The kernel's uevent socket overflowed: events up to seqnum may be missing from the daemon's log, and
 * udevd's requests for them are checked against sysfs (the device must still be there). */
void journal_record_uevents_lost(uint64_t seqnum, int rcvbuf);

/* A module load by another process that the guard refused in the kernel, or would have refused in its
 * permissive mode: message from guard_event_message(). */
void journal_record_guard(const struct guard_event *e, const char *message);
