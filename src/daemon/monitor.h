/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "macro.h"

/* The Monitor calls that are subscribed: each gets every event (or those about its modules) as a
 * "more" reply, in the order they happened, on the event loop thread. */

#define MONITORS_MAX 64U

typedef struct Monitors Monitors;

int monitors_new(Monitors **ret);
Monitors *monitors_free(Monitors *ms);
DEFINE_TRIVIAL_CLEANUP_FUNC(Monitors *, monitors_free);

/* Whether anyone listens: events are built only then. */
bool monitors_active(const Monitors *ms);

/* Subscribes a Monitor call; modules (taken, may be NULL for all) filters by module name. Sends the
 * first reply, the ready event. Returns 0, -EBUSY when MONITORS_MAX are subscribed, or -errno. */
int monitors_add(Monitors *ms, sd_varlink *link, char **modules);

/* The connection went away. */
void monitors_forget(Monitors *ms, sd_varlink *link);

/* Sends event (an Event object) to each subscriber whose filter lets module through (NULL: an
 * event about no module, sent to the unfiltered only). A subscriber that cannot be sent to is
 * dropped. */
void monitors_send(Monitors *ms, const char *module, sd_json_variant *event);
