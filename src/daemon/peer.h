/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "authorize.h"

/* The identity of the connection's peer, from its pidfd (SO_PEERPIDFD): the process, its
 * capabilities and user namespace, its parent, its cgroup. What cannot be read leaves it unknown,
 * which authorize() refuses. Returns 0 or -ENOMEM. */
int peer_identify(sd_varlink *link, PeerIdentity *ret);

/* The device udev names, for a udev request: whether /sys{devpath} is a device (it has a uevent
 * file), the MODALIAS= of its uevent and its subsystem (each NULL when it has none). Returns 0 or
 * -ENOMEM. */
int peer_read_device(const char *devpath, bool *ret_exists, char **ret_modalias, char **ret_subsystem);

/* The module names the installed udev rules pass to modgate-udev (RUN+=".../modgate-udev NAME..."),
 * each with its rule's SUBSYSTEM== and KERNEL== matches, from the first of rule_files that exists
 * (the administrator's hides the package's). Returns 0 or -ENOMEM. */
int peer_udev_rule_names(const char *const *rule_files, UdevRuleName **ret, size_t *ret_n);
