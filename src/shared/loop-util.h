/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/* The file a loop device reads, as the kernel holds it: the device and inode of its struct file
 * (LOOP_GET_STATUS64 on a fd of the loop device, which needs read access to the device node only).
 * Unlike /sys/block/loopN/loop/backing_file, a path that the reader opens again, nothing in the
 * reader's mount namespace changes them. Returns -ENXIO for an unbound loop device, -ENOTTY for a
 * device that is no loop device, or another -errno. */
int loop_backing_identity(int fd, dev_t *ret_dev, ino_t *ret_ino);

/* Opens the block device MAJOR:MINOR by its kernel name under /dev, checked to be that very device.
 * Returns the fd, or -errno: -ENOENT where /dev has no such node (PrivateDevices=yes). */
int block_device_open(dev_t dev);
