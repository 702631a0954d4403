/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Load calls waiting for their modules at once (Busy beyond); connections are capped in
 * connections.h. At boot udev and the kernel's helper ask many at once. */
#define REQUESTS_MAX 8192U

int manager_varlink_init(Manager *m);
