/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>

#include "manager.h"

/* The reply of Status: what the daemon is and does now, read from the manager and the kernel. */
int manager_status(Manager *m, sd_json_variant **ret);
