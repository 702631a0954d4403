/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Each decision goes to the journal, this boot's history, the counters and the Monitor subscribers,
 * by one of these. */

#include <stdbool.h>
#include <systemd/sd-json.h>

#include "chatter.h"
#include "manager.h"
#include "module-result.h"
#include "record-journal.h"

/* Keeps entry (a reference is taken) as its module's latest in the history; a failure to write it is
 * logged, memory still has it. */
void manager_keep(Manager *m, sd_json_variant *entry);

/* Sends an event of type about module (NULL: none) to the Monitor subscribers, with fields (an object,
 * or NULL) added to its type and time. Does nothing, cheaply, when nobody listens. */
void manager_emit(Manager *m, const char *type, const char *module, sd_json_variant *fields);

/* The scheduler's hooks: a job's decision, and a job handed to a worker. */
void manager_record_module(const Requesters *who, const ModuleResult *r, void *userdata);
void manager_record_started(const Requester *who, const ModuleResult *r, void *userdata);
/* And a load's journal record, written once its file's .modinfo was read after the load; its
 * history entry completed. */
void manager_record_modinfo(const Requesters *who, const ModuleResult *r, void *userdata);

/* A module in the kernel that modgate did not load. */
/* A load by another process that the guard refused (or would have), read from its ring buffer. */
void manager_record_guard(const struct guard_event *e, void *userdata);

void manager_record_outside(Manager *m, const char *module, const char *how);
/* The kernel's module uevents, for loads and unloads by others while this instance runs. */
void manager_on_module_event(const char *module, bool added, void *userdata);
/* At start: what the kernel has against this boot's history. */
int manager_reconcile(Manager *m);

/* A call received, once its caller is known (method: "Load", "Unload", ...). */
void manager_record_request(Manager *m, const char *method, const Requester *who);
/* Whether an answer of kind for key (with the method, when not NULL) from who is journaled on its
 * own, as the first of its kind from that peer in the window; else it was counted for a summary. */
bool manager_chatter_first(Manager *m, ChatterKind kind, const Requester *who, const char *method,
                           const char *key);

/* A request that matched no module: journaled the first time for its key, then counted. */
void manager_record_not_found(Manager *m, const Requester *who, char *const *blacklisted);
/* A decision of the policy; keep: make it the module's latest in the history. */
void manager_record_policy(Manager *m, const Requester *who, const PolicyRecord *pr, bool keep);
void manager_record_refused_caller(Manager *m, const Requester *who, const char *method,
                                   const char *reason);
/* An Unload: done when error is 0, else refused with reason. */
void manager_record_unload(Manager *m, const Requester *who, const char *name, int error,
                           const char *reason);

/* Journals the counted repeated answers as summaries, and starts a new window. */
void manager_write_summaries(Manager *m);
