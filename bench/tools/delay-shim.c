/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* delay-shim: per-module init times for the bulk-loading scenario, preloaded in front of the
 * integration tier's shim (LD_PRELOAD="delay-shim.so module-shim.so"), which has one delay for every
 * module ($MODGATE_SHIM_DELAY_MS). Each finit_module() first waits, as the kernel's
 * resolve_symbol_wait() does, until every module it depends on is live (at most 30 s, polled every
 * millisecond), then sleeps for the module's own time, then goes on to the shim.
 *
 * $MODGATE_BENCH_DELAYS names a file with one line per module: NAME MILLISECONDS [DEP,DEP...].
 *
 * What this cannot do from outside the shim: during its sleep the module is not yet in
 * /sys/module, where the kernel would show it "coming". A loader that looks at initstate between
 * the call and its end sees "absent" instead; the second finit_module() of the same module then
 * sleeps too and gets EEXIST from the shim when it wakes, where the kernel would have made it wait
 * for the first: the same end time. docs/benchmarks.md describes the knob the shim itself should
 * get. */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DELAYS_MAX 8192
#define DEP_WAIT_MAX_MS 30000

typedef struct Delay {
        char *name;
        long ms;
        char *deps;     /* comma-separated, or NULL */
} Delay;

static Delay delays[DELAYS_MAX];
static size_t n_delays;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void delays_read(void) {
        const char *path = getenv("MODGATE_BENCH_DELAYS");
        char name[128], deps[4096];
        FILE *f;
        long ms;
        int k;

        if (!path || !(f = fopen(path, "re")))
                return;
        while (n_delays < DELAYS_MAX && (k = fscanf(f, "%127s %ld%4095[^\n]", name, &ms, deps)) >= 2) {
                char *d = k == 3 ? deps + strspn(deps, " \t") : NULL;

                delays[n_delays++] = (Delay) { strdup(name), ms, d && *d ? strdup(d) : NULL };
        }
        fclose(f);
}

static const Delay *delay_find(const char *name) {
        for (size_t i = 0; i < n_delays; i++)
                if (strcmp(delays[i].name, name) == 0)
                        return delays + i;
        return NULL;
}

static void name_of_fd(int fd, char *name, size_t size) {
        char proc[64], path[PATH_MAX], *base, *dot;
        ssize_t k;

        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        k = readlink(proc, path, sizeof(path) - 1);
        path[k > 0 ? k : 0] = '\0';
        base = strrchr(path, '/');
        snprintf(name, size, "%s", base ? base + 1 : path);
        dot = strstr(name, ".ko");
        if (dot)
                *dot = '\0';
        for (char *p = name; *p; p++)
                if (*p == '-')
                        *p = '_';
}

static int is_live(const char *name) {
        char path[256], buf[16] = "";
        int fd, live;

        snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        live = read(fd, buf, sizeof(buf) - 1) > 0 && strncmp(buf, "live", 4) == 0;
        close(fd);
        return live;
}

static void sleep_ms(long ms) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void wait_deps(const char *deps) {
        char *copy = strdup(deps), *save = NULL;

        for (char *d = strtok_r(copy, ",", &save); d; d = strtok_r(NULL, ",", &save))
                for (int waited = 0; !is_live(d) && waited < DEP_WAIT_MAX_MS; waited++)
                        sleep_ms(1);
        free(copy);
}

long syscall(long number, ...) {
        static long (*next)(long, ...) = NULL;
        long a[6];
        va_list ap;

        va_start(ap, number);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);

        if (number == SYS_finit_module) {
                const Delay *d;
                char name[256];
                int saved = errno;

                pthread_once(&once, delays_read);
                name_of_fd((int) a[0], name, sizeof(name));
                d = delay_find(name);
                if (d) {
                        if (d->deps)
                                wait_deps(d->deps);
                        sleep_ms(d->ms);
                }
                errno = saved;
        }
        if (!next)
                next = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
        return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
