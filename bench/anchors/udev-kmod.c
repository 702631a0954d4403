/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* udev-kmod: what udev's kmod builtin does in a worker for one event (systemd v257,
 * src/udev/udev-builtin-kmod.c calling module_load_and_warn() of src/shared/module-util.c): a
 * libkmod lookup of the modalias in a context that was made and loaded once, then for each module
 * found its initstate from /sys/module, and kmod_module_probe_insert_module() with
 * KMOD_PROBE_APPLY_BLACKLIST for one that is neither live nor builtin. The process's own CPU over
 * the loop is the in-process work, with no IPC at all.
 *
 *   udev-kmod DIR lookup KEYS SAMPLES   each line of KEYS as one event, in order; SAMPLES gets, per
 *                                       event, the wall ns and how many modules the lookup found
 *   udev-kmod DIR storm N KEY           N workers (forked after the context is loaded, as udevd's
 *                                       workers are) each handle one event for KEY, all released at
 *                                       once: one load attempt per event, as udev makes
 *
 * Module syscalls go wherever syscall(2) goes: under the integration tier's shim, to it. */

#include <errno.h>
#include <libkmod.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return ((uint64_t) ru.ru_utime.tv_sec + (uint64_t) ru.ru_stime.tv_sec) * 1000000000ULL +
               ((uint64_t) ru.ru_utime.tv_usec + (uint64_t) ru.ru_stime.tv_usec) * 1000ULL;
}

/* module_load_and_warn(), less its logging. Returns the number of modules the lookup found. */
static int module_load(struct kmod_ctx *ctx, const char *key) {
        struct kmod_list *list = NULL, *itr;
        int n = 0;

        if (kmod_module_new_from_lookup(ctx, key, &list) < 0 || !list)
                return 0;
        kmod_list_foreach(itr, list) {
                struct kmod_module *mod = kmod_module_get_module(itr);
                int state = kmod_module_get_initstate(mod);

                n++;
                if (state != KMOD_MODULE_BUILTIN && state != KMOD_MODULE_LIVE)
                        (void) kmod_module_probe_insert_module(mod, KMOD_PROBE_APPLY_BLACKLIST, NULL, NULL, NULL,
                                                               NULL);
                kmod_module_unref(mod);
        }
        kmod_module_unref_list(list);
        return n;
}

static int run_lookup(struct kmod_ctx *ctx, const char *keys, const char *samples) {
        FILE *in = fopen(keys, "re"), *out = fopen(samples, "we");
        char *line = NULL;
        size_t size = 0;
        long events = 0, hits = 0;
        uint64_t c0, w0, total = 0;
        ssize_t k;

        if (!in || !out) {
                perror("udev-kmod");
                return 1;
        }
        c0 = cpu_ns();
        while ((k = getline(&line, &size, in)) >= 0) {
                uint64_t t;
                int n;

                if (k > 0 && line[k - 1] == '\n')
                        line[--k] = '\0';
                if (k == 0)
                        continue;
                w0 = now_ns();
                n = module_load(ctx, line);
                t = now_ns() - w0;
                total += t;
                events++;
                hits += n > 0;
                fprintf(out, "%llu %d\n", (unsigned long long) t, n);
        }
        c0 = cpu_ns() - c0;
        free(line);
        fclose(in);
        fclose(out);
        printf("{\"events\":%ld,\"hits\":%ld,\"cpu_ns\":%llu,\"wall_ns\":%llu}\n", events, hits,
               (unsigned long long) c0, (unsigned long long) total);
        return 0;
}

static int run_storm(struct kmod_ctx *ctx, int n, const char *key) {
        int gate[2];
        uint64_t t0;

        if (pipe(gate) < 0) {
                perror("pipe");
                return 1;
        }
        fflush(stdout);
        for (int i = 0; i < n; i++) {
                pid_t pid = fork();
                char c;

                if (pid < 0) {
                        perror("fork");
                        return 1;
                }
                if (pid == 0) {
                        close(gate[1]);
                        (void) !read(gate[0], &c, 1);  /* returns 0 when the parent closes its end */
                        module_load(ctx, key);
                        _exit(0);
                }
        }
        close(gate[0]);
        t0 = now_ns();
        close(gate[1]);
        while (wait(NULL) > 0)
                ;
        printf("{\"events\":%d,\"wall_ns\":%llu}\n", n, (unsigned long long) (now_ns() - t0));
        return 0;
}

int main(int argc, char *argv[]) {
        struct kmod_ctx *ctx;
        int r;

        if (argc != 5 || (strcmp(argv[2], "lookup") != 0 && strcmp(argv[2], "storm") != 0)) {
                fprintf(stderr, "usage: udev-kmod DIR lookup KEYS SAMPLES | udev-kmod DIR storm N KEY\n");
                return 2;
        }
        /* udevd: kmod_new() and kmod_load_resources() once, when the builtin is initialized. */
        ctx = kmod_new(argv[1], NULL);
        if (!ctx || kmod_load_resources(ctx) < 0) {
                fprintf(stderr, "udev-kmod: cannot load the module index of %s\n", argv[1]);
                return 1;
        }
        if (strcmp(argv[2], "lookup") == 0)
                r = run_lookup(ctx, argv[3], argv[4]);
        else
                r = run_storm(ctx, atoi(argv[3]), argv[4]);
        kmod_unref(ctx);
        return r;
}
