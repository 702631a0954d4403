/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

/* What clients can hold of the daemon through its varlink connections: how many in total and per uid
 * ([Manager] MaxConnections=, MaxConnectionsPerUser=; sd-varlink accepts one more and hangs up at
 * once), and how long one may stay silent with no call in flight ([Manager] IdleConnectionSec=)
 * before it is closed. A message is capped by sd-varlink itself: a connection that has sent 16 MiB
 * without the NUL that ends a message is closed. */

typedef struct Manager Manager;
typedef struct Connections Connections;

/* Sets the caps on s from m's configuration and the fd limit, and watches s's connections for
 * silence (m->connections). Returns 0 or -errno. */
int manager_connections_init(Manager *m, sd_varlink_server *s);

Connections *connections_free(Connections *cs);
