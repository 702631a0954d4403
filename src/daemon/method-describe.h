/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "manager.h"
#include "time-util.h"

/* A Describe waits at most this long for the .modinfo of a module just loaded (read after the load
 * where the evidence binds the file's name to its bytes), and no more Describe calls than this wait
 * at once: beyond either, the entry is answered as it is, modinfoPending. */
#define DESCRIBE_WAIT_USEC (2 * USEC_PER_SEC)
#define DESCRIBE_WAITING_MAX 64U

/* Describe of name (valid, canonical) by a reader, answered on link. */
int manager_describe(Manager *m, sd_varlink *link, const char *name);

/* name's file's .modinfo was read and its entry completed: the Describe calls waiting for it are
 * answered. */
void manager_describe_recorded(Manager *m, const char *name);

/* Answers every Describe still waiting with the entry as it is. */
void manager_describe_flush(Manager *m);
