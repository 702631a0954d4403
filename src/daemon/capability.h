/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Leaves the process with CAP_SYS_MODULE alone: in the bounding, permitted and effective sets, nothing
 * inheritable or ambient. Returns 0 or -errno. */
int capability_keep_only_sys_module(void);
