/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* LD_PRELOAD shim for the integration tier: the only fake part. It stands in for the kernel's module
 * syscalls, which modgated makes through syscall(2), and leaves every other syscall alone.
 *
 *  finit_module   appends a JSON line to $MODGATE_SHIM_LOG with the identity of the file behind the
 *                 fd (path, device, inode), params and flags, then marks the module live by writing
 *                 /sys/module/NAME/initstate (a private tmpfs in the test's mount namespace), as the
 *                 kernel would. A module that is live already gives EEXIST, as in the kernel. The
 *                 line also has "start" and "end", CLOCK_MONOTONIC in nanoseconds before and after
 *                 the module's init (the delay below), so that tests can tell which loads
 *                 overlapped; it is written when the call returns.
 *  init_module    is recorded and fails with ENOSYS: modgated must never call it.
 *  delete_module  is recorded and removes /sys/module/NAME.
 *
 * $MODGATE_SHIM_FAIL=NAME:ERRNO[,NAME:ERRNO...] makes finit_module of each NAME fail with its errno.
 * $MODGATE_SHIM_DELAY_MS=N makes every finit_module take N ms, as a module's init does: the module is
 * "coming" in /sys/module meanwhile, and live after. */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static void json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static unsigned long long now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec;
}

/* One write(2) per record, with O_APPEND, so that records from several threads or processes do not
 * interleave. start and end are 0 for calls that are not timed. */
static void record(const char *call, const char *path, const struct stat *st, const char *params, long flags,
                   const char *name, int result, unsigned long long start, unsigned long long end) {
        const char *log = getenv("MODGATE_SHIM_LOG");
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int fd;

        if (!log)
                return;
        f = open_memstream(&buf, &size);
        if (!f)
                return;
        fprintf(f, "{\"call\":\"%s\",\"pid\":%d", call, (int) getpid());
        if (path) {
                fputs(",\"path\":", f);
                json_string(f, path);
        }
        if (st)
                fprintf(f, ",\"dev\":\"%u:%u\",\"ino\":%llu", major(st->st_dev), minor(st->st_dev),
                        (unsigned long long) st->st_ino);
        if (params) {
                fputs(",\"params\":", f);
                json_string(f, params);
        }
        fprintf(f, ",\"flags\":%ld", flags);
        if (name) {
                fputs(",\"name\":", f);
                json_string(f, name);
        }
        fprintf(f, ",\"result\":%d", result);
        if (start > 0)
                fprintf(f, ",\"start\":%llu,\"end\":%llu", start, end);
        fputs("}\n", f);
        fclose(f);

        fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
                (void) !write(fd, buf, size);
                close(fd);
        }
        free(buf);
}

/* The kernel takes the name from the module's .modinfo; for real module trees that is the file name
 * without its .ko suffix, with '-' as '_'. */
static void name_from_path(const char *path, char *name, size_t size) {
        const char *base = strrchr(path, '/');
        char *dot;

        snprintf(name, size, "%s", base ? base + 1 : path);
        dot = strstr(name, ".ko");
        if (dot)
                *dot = '\0';
        for (char *p = name; *p; p++)
                if (*p == '-')
                        *p = '_';
}

static int forced_failure(const char *name) {
        const char *e = getenv("MODGATE_SHIM_FAIL");
        size_t n = strlen(name);

        for (; e && *e; e = strchr(e, ',') ? strchr(e, ',') + 1 : NULL)
                if (strncmp(e, name, n) == 0 && e[n] == ':')
                        return atoi(e + n + 1);
        return 0;
}

static void write_state(const char *path, const char *state) {
        char tmp[600];
        int fd;

        /* Renamed into place, so that a reader never sees an empty file. */
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int) gettid());
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
        if (fd < 0)
                return;
        (void) !write(fd, state, strlen(state));
        close(fd);
        (void) rename(tmp, path);
}

static long fake_finit_module(int fd, const char *params, long flags) {
        char link[64], path[4096] = "", name[256], state[512];
        unsigned long long start;
        const char *delay;
        struct stat st;
        ssize_t n;
        int err;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (n >= 0)
                path[n] = '\0';
        if (fstat(fd, &st) < 0) {
                start = now_nsec();
                record("finit_module", NULL, NULL, params, flags, NULL, -EBADF, start, start);
                errno = EBADF;
                return -1;
        }

        name_from_path(path, name, sizeof(name));
        snprintf(state, sizeof(state), "/sys/module/%s/initstate", name);

        err = forced_failure(name);
        if (err == 0 && access(state, F_OK) >= 0)
                err = EEXIST;
        if (err != 0) {
                start = now_nsec();
                record("finit_module", path, &st, params ?: "", flags, name, -err, start, start);
                errno = err;
                return -1;
        }

        snprintf(state, sizeof(state), "/sys/module/%s", name);
        (void) mkdir(state, 0755);
        snprintf(state, sizeof(state), "/sys/module/%s/initstate", name);
        start = now_nsec();
        delay = getenv("MODGATE_SHIM_DELAY_MS");
        if (delay && atoi(delay) > 0) {
                write_state(state, "coming\n");
                usleep((useconds_t) atoi(delay) * 1000);
        }
        write_state(state, "live\n");
        record("finit_module", path, &st, params ?: "", flags, name, 0, start, now_nsec());
        return 0;
}

static long fake_delete_module(const char *name, long flags) {
        char path[512];

        record("delete_module", NULL, NULL, NULL, flags, name, 0, 0, 0);
        snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
        if (unlink(path) < 0)
                return -1;
        snprintf(path, sizeof(path), "/sys/module/%s", name);
        (void) rmdir(path);
        return 0;
}

long syscall(long number, ...) {
        static long (*real)(long, ...) = NULL;
        long a[6];
        va_list ap;

        va_start(ap, number);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);

        switch (number) {
        case SYS_finit_module:
                return fake_finit_module((int) a[0], (const char *) a[1], a[2]);
        case SYS_init_module:
                record("init_module", NULL, NULL, (const char *) a[2], 0, NULL, -ENOSYS, 0, 0);
                errno = ENOSYS;
                return -1;
        case SYS_delete_module:
                return fake_delete_module((const char *) a[0], a[1]);
        default:
                break;
        }

        if (!real)
                real = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
        return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
