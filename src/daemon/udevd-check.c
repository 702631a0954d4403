/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>

#include "fileio.h"
#include "macro.h"
#include "udevd-check.h"

#define UDEVD_COMM "systemd-udevd"

int proc_status_cap_bnd(const char *status, uint64_t *ret) {
        assert(ret);

        for (const char *line = status; line && *line;
             line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char *end;
                uint64_t v;

                if (strncmp(line, "CapBnd:", strlen("CapBnd:")) != 0)
                        continue;

                line += strlen("CapBnd:");
                line += strspn(line, " \t");
                errno = 0;
                v = strtoull(line, &end, 16);
                if (errno != 0 || end == line || (*end != '\n' && *end != '\0'))
                        return -EBADMSG;
                *ret = v;
                return 0;
        }
        return -EBADMSG;
}

/* 1 or 0 for a systemd-udevd process with or without CAP_SYS_MODULE, -ESRCH for another process or one
 * that went away meanwhile. */
static int check_pid(int procfd, const char *pid) {
        char path[64], buf[4096];
        uint64_t bnd;
        int r;

        snprintf(path, sizeof(path), "%s/comm", pid);
        r = read_small_file_at(procfd, path, buf, sizeof(buf));
        if (r < 0)
                return -ESRCH;
        buf[strcspn(buf, "\n")] = '\0';
        if (strcmp(buf, UDEVD_COMM) != 0)
                return -ESRCH;

        snprintf(path, sizeof(path), "%s/status", pid);
        r = read_small_file_at(procfd, path, buf, sizeof(buf));
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        r = proc_status_cap_bnd(buf, &bnd);
        if (r < 0)
                return r;

        return !!(bnd & (UINT64_C(1) << CAP_SYS_MODULE));
}

int udevd_check_cap_sys_module_at(const char *proc_dir) {
        _cleanup_close_ int procfd = -EBADF;
        struct dirent *de;
        DIR *d;
        int dfd, r, result = -ESRCH;

        procfd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
                return negative_errno();
        dfd = fcntl(procfd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return negative_errno();
        d = fdopendir(dfd);
        if (!d) {
                r = negative_errno();
                safe_close(dfd);
                return r;
        }

        /* Workers are called "(udev-worker)"; the daemon's own bounding set is what they inherit. */
        while ((de = readdir(d))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
                    strspn(de->d_name, "0123456789") != strlen(de->d_name))
                        continue;

                r = check_pid(procfd, de->d_name);
                if (r == -ESRCH)
                        continue;
                if (r < 0 || r == 1) {
                        result = r;
                        break;
                }
                result = 0;
        }

        closedir(d);
        return result;
}

int udevd_check_cap_sys_module(void) {
        return udevd_check_cap_sys_module_at("/proc");
}
