/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>

/* The context of a Load request for a device event, from the values udev puts in the environment of
 * a RUN program (each NULL when unset): source "udev", and devpath, subsystem, seqnum and action
 * where udev set them. A value the daemon would not take as context (request_context_check()) is
 * left out. Pure. Returns 0 or -ENOMEM. */
int udev_context_build(const char *devpath, const char *subsystem, const char *seqnum, const char *action,
                       sd_json_variant **ret);
