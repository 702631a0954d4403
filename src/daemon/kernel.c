/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fileio.h"
#include "kernel.h"
#include "macro.h"
#include "strv.h"

#define MODULES_DISABLED "/proc/sys/kernel/modules_disabled"

static const char *const state_table[_MODULE_STATE_MAX] = {
        [MODULE_STATE_ABSENT] = "absent",
        [MODULE_STATE_LIVE] = "live",
        [MODULE_STATE_COMING] = "coming",
        [MODULE_STATE_GOING] = "going",
        [MODULE_STATE_BUILTIN] = "builtin",
};

const char *module_state_to_string(ModuleState s) {
        return s >= 0 && s < _MODULE_STATE_MAX ? state_table[s] : NULL;
}

/* One line of /sys/module/NAME/ATTR. */
static int read_module_attribute(const char *name, const char *attr, char *buf, size_t size) {
        char path[128];

        snprintf(path, sizeof(path), "/sys/module/%s/%s", name, attr);
        return read_line_at(AT_FDCWD, path, buf, size);
}

int kernel_module_state(const char *name, ModuleState *ret) {
        char path[128], buf[32];
        int r;

        assert(name);
        assert(ret);

        r = read_module_attribute(name, "initstate", buf, sizeof(buf));
        if (r == -ENOENT) {
                /* Builtin modules with parameters have a directory but no initstate. */
                snprintf(path, sizeof(path), "/sys/module/%s", name);
                *ret = access(path, F_OK) >= 0 ? MODULE_STATE_BUILTIN : MODULE_STATE_ABSENT;
                return 0;
        }
        if (r < 0)
                return r;

        for (ModuleState s = MODULE_STATE_LIVE; s <= MODULE_STATE_GOING; s++)
                if (strcmp(buf, state_table[s]) == 0) {
                        *ret = s;
                        return 0;
                }
        return -EBADMSG;
}

int kernel_compression(Compression *ret) {
        char buf[32];
        int r;

        assert(ret);

        r = read_line_at(AT_FDCWD, "/sys/module/compression", buf, sizeof(buf));
        if (r == -ENOENT) {
                *ret = COMPRESSION_NONE;
                return 0;
        }
        if (r < 0)
                return r;

        *ret = compression_from_sysfs(buf);
        return 0;
}

int kernel_finit_module(int fd, const char *params, unsigned flags) {
        /* glibc has no wrapper. There is deliberately no init_module() anywhere in modgate: a blob of
         * memory has no origin to check. */
        if (syscall(SYS_finit_module, fd, params ?: "", flags) < 0)
                return negative_errno();
        return 0;
}

int kernel_delete_module(const char *name) {
        if (syscall(SYS_delete_module, name, O_NONBLOCK) < 0)
                return negative_errno();
        return 0;
}

int kernel_module_holders(const char *name, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        struct dirent *de;
        char path[128];
        DIR *d;
        int r = 0;

        snprintf(path, sizeof(path), "/sys/module/%s/holders", name);
        d = opendir(path);
        if (!d && errno != ENOENT)
                return negative_errno();

        while (d && (de = readdir(d)) && r >= 0)
                if (de->d_name[0] != '.')
                        r = strv_extend(&l, de->d_name);
        if (d)
                closedir(d);
        if (r < 0)
                return r;

        /* Always an array, empty when nothing holds the module. */
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int kernel_module_refcount(const char *name, unsigned *ret) {
        char buf[32];
        int r;

        assert(name);
        assert(ret);

        r = read_module_attribute(name, "refcnt", buf, sizeof(buf));
        if (r < 0)
                return r;
        *ret = (unsigned) strtoul(buf, NULL, 10);
        return 0;
}

int kernel_loaded_modules(char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *d = opendir("/sys/module");
        struct dirent *de;
        int r = 0;

        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                ModuleState s;

                if (de->d_name[0] == '.' || kernel_module_state(de->d_name, &s) < 0)
                        continue;
                if (s != MODULE_STATE_LIVE && s != MODULE_STATE_COMING)
                        continue;
                r = strv_extend(&l, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

int kernel_module_taint(const char *name, char *buf, size_t size) {
        char path[128];
        int r;

        snprintf(path, sizeof(path), "/sys/module/%s/taint", name);
        r = read_line_at(AT_FDCWD, path, buf, size);
        if (r == -ENOENT && size > 0) {
                buf[0] = '\0';
                return 0;
        }
        return r;
}

const char *kernel_error_class(int error) {
        switch (error) {
        case EKEYREJECTED:
        case ENOKEY:
        case EBADMSG:
        case EKEYEXPIRED:
        case ENOPKG:
                return "signature";
        case EPERM:
        case EACCES:
        case ENOSYS:
                return "refused";
        case ENOEXEC:
        case EINVAL:
        case EFBIG:
        case E2BIG:
        case EOPNOTSUPP:
                return "format";
        case ENOENT:
                return "symbol";
        case EEXIST:
        case EBUSY:
        case ETIMEDOUT:
        case ETXTBSY:
        case EINTR:
                return "busy";
        case ENOMEM:
        case ENOSPC:
                return "resource";
        case EBADF:
        case EFAULT:
                return "internal";
        default:
                return "init";
        }
}

int kernel_modules_disabled(void) {
        char buf[16];
        int r;

        r = read_line_at(AT_FDCWD, MODULES_DISABLED, buf, sizeof(buf));
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return strcmp(buf, "1") == 0;
}

int kernel_modules_disabled_open(void) {
        int fd = open(MODULES_DISABLED, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        return fd < 0 ? negative_errno() : fd;
}

int kernel_modules_disabled_at(int fd) {
        char buf[16];
        ssize_t n;

        /* A sysctl file prints the value as it is now at every read from offset 0. */
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return strcmp(buf, "1") == 0;
}

int kernel_disable_modules(void) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;
        int r;

        /* The kernel takes only the transition from 0 to 1 (and 1 again); nothing ever writes 0. */
        fd = open(MODULES_DISABLED, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        n = write(fd, "1\n", 2);
        if (n < 0)
                return negative_errno();
        if (n != 2)
                return -EIO;
        r = kernel_modules_disabled();
        if (r < 0)
                return r;
        return r == 1 ? 0 : -EIO;
}
