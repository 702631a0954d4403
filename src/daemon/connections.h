/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

/* What clients can hold of the daemon through its varlink connections: how many in total and per uid
 * ([Manager] MaxConnections=, MaxConnectionsPerUser=; sd-varlink accepts one more and hangs up at
 * once), and how long one may stay silent with no call in flight ([Manager] IdleConnectionSec=)
 * before it is closed; and how much one may send without the NUL that ends a message
 * (CONNECTION_INPUT_MAX) before it is closed. */

/* The largest valid call is a Load whose modalias is at MODALIAS_MAX (64 KiB) and whose parameters,
 * path and context strings are at their caps of 4 KiB: about 90 KiB of JSON. 128 KiB takes it with
 * room for escapes, and 16 connections of a uid hold at most 2 MiB. */
#define CONNECTION_INPUT_MAX (128U * 1024U)

typedef struct Manager Manager;
typedef struct Connections Connections;

/* Sets the caps on s from m's configuration and the fd limit, and watches s's connections for
 * silence (m->connections). Returns 0 or -errno. */
int manager_connections_init(Manager *m, sd_varlink_server *s);

Connections *connections_free(Connections *cs);
