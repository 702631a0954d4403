/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>

#include "origin.h"

/* Where modgate-probe listens (modgate-probe.socket). */
#define PROBE_ADDRESS "/run/modgate/io.modgate.Probe"

/* Asks the prober at address for the device-mapper table of o's block device (o->device_dev, of the
 * instance o->diskseq), into o->dm. Blocking; one connection per call, so that it may run on any
 * worker thread. What goes wrong is recorded in o->dm.error and error_detail; returns 0, or -ENOMEM. */
int probe_dm_table(const char *address, Origin *o);

/* Pure: the prober's answer to DescribeDevice (its error, or its reply) into t, which is empty (as
 * dm_table_done() leaves it). Returns 0 or -ENOMEM, as probe_dm_table(). */
int probe_reply_parse(const char *error_id, sd_json_variant *reply, DmTable *t);
