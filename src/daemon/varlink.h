/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Caps on what clients can make the daemon hold. */
/* Caps on what clients can make the daemon hold (connections: connections.h). Every client is root
 * (the socket is 0600 and the server takes root only); at boot udev and the kernel's helper ask many
 * at once. */
#define REQUESTS_MAX 8192U

int manager_varlink_init(Manager *m);
void manager_free_requests(Manager *m);

/* Appends one module's result to a reply's modules array, as Load gives it. */
int module_result_build_json(const ModuleResult *r, sd_json_variant **array);
