/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* modgate is the single place where modules are loaded only if udevd cannot load them itself: its
 * kmod builtin calls finit_module() whenever systemd-udevd still holds CAP_SYS_MODULE. */

/* Returns 1 if a running systemd-udevd has CAP_SYS_MODULE in its bounding set, 0 if every one found
 * runs without it, -ESRCH if none runs, or another -errno. Does not log. */
int udevd_check_cap_sys_module(void);

/* The same, with proc_dir in place of /proc. */
int udevd_check_cap_sys_module_at(const char *proc_dir);

/* Parses the CapBnd: line of the text of a /proc/PID/status file. Returns 0 or -EBADMSG. */
int proc_status_cap_bnd(const char *status, uint64_t *ret);
