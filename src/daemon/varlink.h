/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Caps on what clients can make the daemon hold. */
#define VARLINK_CONNECTIONS_MAX 256U
#define VARLINK_CONNECTIONS_PER_UID_MAX 128U

int manager_varlink_init(Manager *m);
