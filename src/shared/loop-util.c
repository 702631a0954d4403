/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "loop-util.h"
#include "macro.h"

int loop_backing_identity(int fd, dev_t *ret_dev, ino_t *ret_ino) {
        struct loop_info64 info = {};
        uint64_t d;

        assert(ret_dev);
        assert(ret_ino);

        if (ioctl(fd, LOOP_GET_STATUS64, &info) < 0)
                return negative_errno();
        /* The kernel's own encoding of the device number (new_encode_dev()): 12 bits of major, 20 of
         * minor, the minor's low byte lowest. */
        d = info.lo_device;
        *ret_dev = makedev((unsigned) ((d & 0xfff00) >> 8), (unsigned) ((d & 0xff) | ((d >> 12) & 0xfff00)));
        *ret_ino = (ino_t) info.lo_inode;
        return 0;
}

int block_device_open(dev_t dev) {
        char sys[64], link[PATH_MAX], node[PATH_MAX];
        const char *name;
        struct stat st;
        ssize_t n;
        int fd;

        snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(dev), minor(dev));
        n = readlink(sys, link, sizeof(link) - 1);
        if (n < 0)
                return negative_errno();
        link[n] = '\0';
        name = strrchr(link, '/');
        name = name ? name + 1 : link;
        if (!name[0] || strlen(name) > 64)
                return -EINVAL;
        snprintf(node, sizeof(node), "/dev/%s", name);

        fd = open(node, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        /* A node of that name may be anything a writer of /dev put there. */
        if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != dev) {
                close(fd);
                return -ENODEV;
        }
        return fd;
}
