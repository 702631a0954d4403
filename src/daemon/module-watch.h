/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"

/* The kernel's module uevents, read with libudev from its netlink socket: a module added (at the
 * start of its init) or removed, by whoever loaded it, while modgated runs. What happened while it did
 * not run is found at start (manager.c compares the kernel with the history). */

typedef void (*module_watch_t)(const char *module, bool added, void *userdata);
typedef struct ModuleWatch ModuleWatch;

int module_watch_new(sd_event *e, module_watch_t cb, void *userdata, ModuleWatch **ret);
ModuleWatch *module_watch_free(ModuleWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(ModuleWatch *, module_watch_free);
