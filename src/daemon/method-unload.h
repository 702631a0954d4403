/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "manager.h"
#include "request.h"

/* Unload of name (valid, canonical) for who, answered on link. */
int manager_unload(Manager *m, sd_varlink *link, const Requester *who, const char *name);
