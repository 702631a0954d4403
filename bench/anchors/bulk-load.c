/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* bulk-load: the boot list loaded as the loaders modgate is compared with load it, with libkmod and
 * the module syscalls wherever syscall(2) goes (the integration tier's shim).
 *
 *   bulk-load DIR sequential 1 LIST   systemd-modules-load before v259: one module after the other,
 *                                     each with module_load_and_warn() (lookup, initstate,
 *                                     kmod_module_probe_insert_module(), which loads the module's
 *                                     dependencies first, one by one)
 *   bulk-load DIR parallel T LIST     systemd-modules-load v259: T threads (v259 takes the online
 *                                     CPUs, clamped to 1..16) taking the next name from the list,
 *                                     each with its own context and module_load_and_warn(); no
 *                                     order between threads: a thread that needs a dependency
 *                                     another thread is loading waits in the kernel
 *   bulk-load DIR waves T LIST        Android's libmodprobe LoadModulesParallel(): every module of
 *                                     the list and its dependencies, in waves; a wave is every
 *                                     module whose dependencies are all loaded, inserted alone by
 *                                     T threads, and the next wave starts when all T have joined
 *
 * Prints one JSON line with the wall time and how many finit_module calls this process made. */

#include <errno.h>
#include <libkmod.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODULES_MAX 4096

static const char *arg_dir;
static char *names[MODULES_MAX];
static size_t n_names;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t next_name;

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static struct kmod_ctx *context_new(void) {
        struct kmod_ctx *ctx = kmod_new(arg_dir, NULL);

        if (!ctx || kmod_load_resources(ctx) < 0) {
                fprintf(stderr, "bulk-load: cannot load the module index of %s\n", arg_dir);
                exit(1);
        }
        return ctx;
}

/* module_load_and_warn() of systemd's src/shared/module-util.c, less its logging. */
static void module_load(struct kmod_ctx *ctx, const char *name) {
        struct kmod_list *list = NULL, *itr;

        if (kmod_module_new_from_lookup(ctx, name, &list) < 0 || !list) {
                fprintf(stderr, "bulk-load: %s not found\n", name);
                return;
        }
        kmod_list_foreach(itr, list) {
                struct kmod_module *mod = kmod_module_get_module(itr);
                int state = kmod_module_get_initstate(mod);

                if (state != KMOD_MODULE_BUILTIN && state != KMOD_MODULE_LIVE)
                        (void) kmod_module_probe_insert_module(mod, KMOD_PROBE_APPLY_BLACKLIST, NULL, NULL, NULL,
                                                               NULL);
                kmod_module_unref(mod);
        }
        kmod_module_unref_list(list);
}

static void *parallel_thread(void *userdata) {
        struct kmod_ctx *ctx = context_new();

        for (;;) {
                size_t i;

                pthread_mutex_lock(&lock);
                i = next_name++;
                pthread_mutex_unlock(&lock);
                if (i >= n_names)
                        break;
                module_load(ctx, names[i]);
        }
        kmod_unref(ctx);
        return NULL;
}

static void threads_run(unsigned n, void *(*fn)(void *), void *userdata) {
        pthread_t t[64];

        n = n < 1 ? 1 : n > 64 ? 64 : n;
        for (unsigned i = 0; i < n; i++)
                if (pthread_create(t + i, NULL, fn, userdata) != 0) {
                        fprintf(stderr, "bulk-load: pthread_create failed\n");
                        exit(1);
                }
        for (unsigned i = 0; i < n; i++)
                pthread_join(t[i], NULL);
}

/* Android's waves: each module with its dependencies (modules.dep), by index into mods[]. */
typedef struct Wave {
        struct kmod_module *mods[MODULES_MAX];
        size_t n_mods;
        bool loaded[MODULES_MAX];
        size_t *deps[MODULES_MAX];
        size_t n_deps[MODULES_MAX];
        size_t todo[MODULES_MAX], n_todo, next;
} Wave;

static size_t wave_add(Wave *w, struct kmod_module *mod) {
        for (size_t i = 0; i < w->n_mods; i++)
                if (strcmp(kmod_module_get_name(w->mods[i]), kmod_module_get_name(mod)) == 0) {
                        kmod_module_unref(mod);
                        return i;
                }
        if (w->n_mods >= MODULES_MAX) {
                fprintf(stderr, "bulk-load: too many modules\n");
                exit(1);
        }
        w->mods[w->n_mods] = mod;
        return w->n_mods++;
}

static void wave_collect(Wave *w, struct kmod_ctx *ctx) {
        for (size_t i = 0; i < n_names; i++) {
                struct kmod_list *list = NULL, *itr;

                if (kmod_module_new_from_lookup(ctx, names[i], &list) < 0 || !list)
                        continue;
                kmod_list_foreach(itr, list)
                        wave_add(w, kmod_module_get_module(itr));
                kmod_module_unref_list(list);
        }
        /* Dependencies join the list as they are found; their own are found when the loop gets there. */
        for (size_t i = 0; i < w->n_mods; i++) {
                struct kmod_list *deps = kmod_module_get_dependencies(w->mods[i]), *itr;
                size_t n = 0;

                kmod_list_foreach(itr, deps)
                        n++;
                w->deps[i] = calloc(n ?: 1, sizeof(size_t));
                kmod_list_foreach(itr, deps)
                        w->deps[i][w->n_deps[i]++] = wave_add(w, kmod_module_get_module(itr));
                kmod_module_unref_list(deps);
        }
}

static void *wave_thread(void *userdata) {
        Wave *w = userdata;

        for (;;) {
                size_t i;

                pthread_mutex_lock(&lock);
                i = w->next < w->n_todo ? w->todo[w->next++] : SIZE_MAX;
                pthread_mutex_unlock(&lock);
                if (i == SIZE_MAX)
                        break;
                (void) kmod_module_insert_module(w->mods[i], 0, NULL);
        }
        return NULL;
}

static void run_waves(unsigned threads) {
        struct kmod_ctx *ctx = context_new();
        static Wave w;
        size_t left;

        wave_collect(&w, ctx);
        /* Already live or builtin: loaded before the list, as Android checks too. */
        left = w.n_mods;
        for (size_t i = 0; i < w.n_mods; i++) {
                int s = kmod_module_get_initstate(w.mods[i]);
                if (s == KMOD_MODULE_LIVE || s == KMOD_MODULE_BUILTIN) {
                        w.loaded[i] = true;
                        left--;
                }
        }
        while (left > 0) {
                w.n_todo = w.next = 0;
                for (size_t i = 0; i < w.n_mods; i++) {
                        bool ready = !w.loaded[i];

                        for (size_t d = 0; ready && d < w.n_deps[i]; d++)
                                ready = w.loaded[w.deps[i][d]];
                        if (ready)
                                w.todo[w.n_todo++] = i;
                }
                if (w.n_todo == 0) {
                        fprintf(stderr, "bulk-load: dependency loop\n");
                        exit(1);
                }
                threads_run(threads, wave_thread, &w);
                for (size_t k = 0; k < w.n_todo; k++)
                        w.loaded[w.todo[k]] = true;
                left -= w.n_todo;
        }
        kmod_unref(ctx);
}

static void names_read(const char *path) {
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t size = 0;
        ssize_t k;

        if (!f) {
                perror(path);
                exit(1);
        }
        while ((k = getline(&line, &size, f)) >= 0 && n_names < MODULES_MAX) {
                if (k > 0 && line[k - 1] == '\n')
                        line[--k] = '\0';
                if (k > 0 && line[0] != '#')
                        names[n_names++] = strdup(line);
        }
        free(line);
        fclose(f);
}

int main(int argc, char *argv[]) {
        unsigned threads;
        uint64_t t0;

        if (argc != 5) {
                fprintf(stderr, "usage: bulk-load DIR sequential|parallel|waves THREADS LIST\n");
                return 2;
        }
        arg_dir = argv[1];
        threads = (unsigned) atoi(argv[3]);
        names_read(argv[4]);

        t0 = now_ns();
        if (strcmp(argv[2], "sequential") == 0) {
                struct kmod_ctx *ctx = context_new();

                for (size_t i = 0; i < n_names; i++)
                        module_load(ctx, names[i]);
                kmod_unref(ctx);
        } else if (strcmp(argv[2], "parallel") == 0)
                threads_run(threads, parallel_thread, NULL);
        else if (strcmp(argv[2], "waves") == 0)
                run_waves(threads);
        else {
                fprintf(stderr, "bulk-load: unknown mode %s\n", argv[2]);
                return 2;
        }
        printf("{\"mode\":\"%s\",\"threads\":%u,\"listed\":%zu,\"wall_ns\":%llu}\n", argv[2], threads, n_names,
               (unsigned long long) (now_ns() - t0));
        return 0;
}
