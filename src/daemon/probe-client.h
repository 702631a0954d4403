/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>
#include <systemd/sd-json.h>

#include "origin.h"

/* Where modgate-probe listens (modgate-probe.socket). */
#define PROBE_ADDRESS "/run/modgate/io.modgate.Probe"

/* The cgroup modgate-probe.socket starts modgate-probe.service in: the only process whose answers are
 * believed. MODGATE_PROBE_CGROUP in the daemon's environment (an absolute cgroup path) replaces it:
 * the integration tier, which starts the prober itself, sets it; the units never do. Whoever can
 * set modgated's environment writes its unit, and could as well change its ExecStart=. */
#define PROBE_CGROUP "/system.slice/modgate-probe.service"

const char *probe_expected_cgroup(void);

/* Pure: why a process of uid with /proc/PID/cgroup text cgroups is not the prober (in cgroup
 * expected of the unified hierarchy, as root), written to buf; NULL when it is. */
const char *probe_peer_failure(uid_t uid, const char *cgroups, const char *expected, char *buf, size_t size);

/* Asks the prober at address for the device-mapper table of o's block device (o->device_dev, of the
 * instance o->diskseq), into o->dm. Blocking; one connection per call, so that it may run on any
 * worker thread. What goes wrong is recorded in o->dm.error and error_detail; returns 0, or -ENOMEM. */
int probe_dm_table(const char *address, Origin *o);

/* Pure: the prober's answer to DescribeDevice (its error, or its reply) into t, which is empty (as
 * dm_table_done() leaves it). Returns 0 or -ENOMEM, as probe_dm_table(). */
int probe_reply_parse(const char *error_id, sd_json_variant *reply, DmTable *t);

/* Asks the prober which file each loop device in o's stack reads, where the daemon could not find out
 * itself (backing_known unset): into backing_dev and backing_ino, or why not into backing_unknown.
 * Blocking, as probe_dm_table(). Returns 0, or -ENOMEM. Then origin_verify_backing() compares. */
int probe_loop_backing(const char *address, Origin *o);

/* Pure: the prober's answer to DescribeLoop for the loop layer o. Returns 0 or -ENOMEM. */
int probe_loop_reply_parse(const char *error_id, sd_json_variant *reply, Origin *o);
