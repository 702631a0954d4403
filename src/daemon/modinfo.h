/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The name a module file gives itself (the "name" key of its .modinfo section), which is the name
 * the kernel will load it as, read with libkmod from the already-open fd (through /proc/self/fd, so
 * the same inode, decompressed as libkmod does). A private libkmod context with no configuration:
 * safe on any thread. *ret is NULL when the file names no module (kernels before 5.x did not write
 * the key). -errno when the file cannot be read as a module. */
int modinfo_name_from_fd(int fd, char **ret);
