/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Leaves the process with the capability keep alone (CAP_SYS_MODULE for modgated, CAP_SYS_ADMIN for
 * its prober): in the bounding, permitted and effective sets, nothing inheritable or ambient. Returns
 * 0 or -errno. */
int capability_keep_only(int keep);
