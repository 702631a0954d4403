/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-json.h>

#include "macro.h"
#include "record-journal.h"

/* This boot's decisions, module by module, so that List and Describe can answer for every module in
 * the kernel after an idle exit or a restart: kept in a memfd in PID 1's fd store (not in /run, which
 * processes without CAP_SYS_MODULE can write), one JSON object per line, appended with one write(2)
 * each so that a crash leaves at most a torn last line, which reading skips. The memfd is sealed
 * against shrinking; the latest entry per module counts; when it grows past HISTORY_FILE_MAX the
 * entries are written anew, the latest alone, into a new memfd that replaces it in the store. Event
 * loop thread only. */

#define HISTORY_FILE_MAX (4U * 1024U * 1024U)
#define HISTORY_MODULES_MAX 16384U
#define HISTORY_LINE_MAX (64U * 1024U)

typedef struct History History;

/* The history kept in the fd store when keep (taken from it, or a new one put there), else in memory
 * only. A line that does not parse is skipped and counted in *ret_skipped. Returns 0 or -errno
 * (reading or storing it). */
int history_open(bool keep, History **ret, unsigned *ret_skipped);
/* The same on fd, a memfd of history_memfd_new() (owned by the history from now on; -EBADF: memory
 * only). -EBADFD: fd is not such a memfd. */
int history_open_fd(int fd, History **ret, unsigned *ret_skipped);
/* A new memfd for the history, sealed against shrinking. Returns it or -errno. */
int history_memfd_new(void);
History *history_free(History *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(History *, history_free);

/* The entry of a decision on one module; "time" is the realtime clock in µs. The first request is
 * in its top-level fields, those that joined the load in "joined", and "requesters" counts them all. */
int history_entry_module(const Requesters *who, const ModuleResult *r, sd_json_variant **ret);
/* An entry with a module, an outcome and a reason, and a rule or a taint when there is one: a policy
 * denial, an unload, a module loaded or unloaded outside modgate. */
int history_entry_simple(const char *module, const char *outcome, const char *reason, const char *rule,
                         const char *taint, sd_json_variant **ret);

/* Makes entry the module's latest (taking a reference) and appends it to the file. Returns 0, or
 * -errno when it could not be written (memory still has it), -E2BIG past HISTORY_MODULES_MAX. */
int history_add(History *h, sd_json_variant *entry);

/* The latest entry of a module, or NULL. */
sd_json_variant *history_get(History *h, const char *module);

/* Every module's latest entry, by name. */
int history_list(History *h, sd_json_variant **ret);
