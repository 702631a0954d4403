/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "manager.h"

/* Starts the reply of io.modgate.Manager.Status for link: what the daemon is and does now, read from
 * the manager and the kernel. The roots' identities (read under each root's lock, and possibly from
 * the prober) are read on the reader pool; the reply is sent when they are. Returns 0 (the reply
 * follows), the result of a Busy reply when the caller's uid has too many calls in progress, or
 * -errno. */
int status_start(Manager *m, sd_varlink *link);
