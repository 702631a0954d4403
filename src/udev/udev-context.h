/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "request.h"

/* The context of a Load request for a device event, from the values udev puts in the environment of
 * a RUN program (each NULL when unset): source "udev", and devpath, subsystem, seqnum and action
 * where udev set them. A value the daemon would not take as context (request_context_check()), or
 * that JSON cannot carry (not UTF-8), is left out. The strings are borrowed. Pure. */
void udev_context_build(const char *devpath, const char *subsystem, const char *seqnum, const char *action,
                        RequestContext *ret);
