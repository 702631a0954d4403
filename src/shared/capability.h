/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Leaves the process with the capability keep alone (CAP_SYS_MODULE for modgated, CAP_SYS_ADMIN for
 * its prober): in the bounding, permitted and effective sets, nothing inheritable or ambient. Returns
 * 0 or -errno. */
int capability_keep_only(int keep);

/* The same for the n capabilities of keep: the first must be held, the others are kept where they are
 * (a kernel or a unit without them leaves them out). A process that cannot change its bounding set any more
 * (it dropped CAP_SETPCAP in an earlier call) leaves it as it is: what matters is the permitted and
 * effective sets, and a process that execs nothing under NoNewPrivileges= gains nothing from the
 * bounding set. Returns 0 or -errno. */
int capability_keep(const int *keep, size_t n);
