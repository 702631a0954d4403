/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "compression.h"

/* The kernel boundary: the only code that calls module syscalls, reads /sys/module or touches
 * kernel.modules_disabled. */

typedef enum ModuleState {
        MODULE_STATE_ABSENT,
        MODULE_STATE_LIVE,
        MODULE_STATE_COMING,
        MODULE_STATE_GOING,
        MODULE_STATE_BUILTIN,   /* /sys/module/NAME exists, without initstate */
        _MODULE_STATE_MAX,
} ModuleState;

const char *module_state_to_string(ModuleState s);

/* Reads /sys/module/NAME/initstate. name must be valid and canonical. */
int kernel_module_state(const char *name, ModuleState *ret);

/* The algorithm the kernel decompresses in finit_module(): /sys/module/compression, or
 * COMPRESSION_NONE when the kernel has none. */
int kernel_compression(Compression *ret);

/* What an error of finit_module(2) (a positive errno) says, for records and alerting: "signature" (the
 * kernel rejected or could not check the module's signature), "refused" (the kernel's policy:
 * modules_disabled, lockdown, LoadPin, IPE, an LSM), "format" (not a module for this kernel: bad ELF,
 * version magic, compression the kernel cannot undo), "symbol" (it needs a symbol no loaded module
 * exports), "busy" (another load of the same name), "resource" (out of memory or address space), or
 * "init" (the module's own init function failed: often no such device). */
const char *kernel_error_class(int error);

/* finit_module(2). Returns 0 or -errno. */
int kernel_finit_module(int fd, const char *params, unsigned flags);

/* delete_module(2) with O_NONBLOCK: never waits for users to go away, never forced. */
int kernel_delete_module(const char *name);

/* The modules that use name (/sys/module/NAME/holders), as a NULL-terminated array. */
int kernel_module_holders(const char *name, char ***ret);

/* /sys/module/NAME/refcnt. */
int kernel_module_refcount(const char *name, unsigned *ret);

/* The modules in the kernel that were loaded (not builtin): those of /sys/module with an initstate
 * other than going, by name. Returns 0 or -errno. */
int kernel_loaded_modules(char ***ret);

/* /sys/module/NAME/taint: the taint flags the module brought (E: unsigned, O: out of tree, ...),
 * "" when none. Returns 0 or -errno. */
int kernel_module_taint(const char *name, char *buf, size_t size);

/* kernel.modules_disabled: 1 once the kernel is sealed. Returns 1 or 0; 0 too for a kernel without
 * module support (no such sysctl); or -errno. */
int kernel_modules_disabled(void);
/* The same sysctl kept open, for a daemon that reads it at every request: the fd, or -errno (-ENOENT
 * for a kernel without module support). */
int kernel_modules_disabled_open(void);
/* Reads it through that fd. Returns 1 or 0, or -errno. */
int kernel_modules_disabled_at(int fd);

/* Seals the kernel: writes 1 to kernel.modules_disabled, after which finit_module(2) and
 * delete_module(2) fail with EPERM for everyone until reboot, and reads it back. Returns 0 or -errno
 * (-EIO when it does not read 1 afterwards). */
int kernel_disable_modules(void);
