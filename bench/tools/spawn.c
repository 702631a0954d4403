/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* spawn: runs a command N times, one after the other, as udevd runs a RUN program (fork, exec,
 * wait), and measures each run from spawn to reaped, with the CPU the children used.
 *
 *   spawn N SAMPLES -- COMMAND [ARG...]
 *   spawn --keys FILE SAMPLES -- COMMAND [ARG...]   one run per line of FILE, with each argument
 *                                                   "{}" replaced by the line
 *
 * The environment is passed on as it is. SAMPLES gets one line per run: wall ns and exit status.
 * Prints one JSON line: runs, failures, wall_ns, and the children's user and system CPU (ns). */

#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000000000ULL + (uint64_t) tv.tv_usec * 1000ULL;
}

static char **keys_read(const char *path, long *ret_n) {
        FILE *f = fopen(path, "re");
        char **keys = NULL, *line = NULL;
        size_t size = 0;
        long n = 0;
        ssize_t k;

        if (!f) {
                fprintf(stderr, "spawn: %s: %s\n", path, strerror(errno));
                exit(1);
        }
        while ((k = getline(&line, &size, f)) >= 0) {
                if (k > 0 && line[k - 1] == '\n')
                        line[--k] = '\0';
                if (k == 0)
                        continue;
                keys = realloc(keys, (size_t) (n + 1) * sizeof(char *));
                if (!keys)
                        exit(1);
                keys[n++] = strdup(line);
        }
        free(line);
        fclose(f);
        *ret_n = n;
        return keys;
}

int main(int argc, char *argv[]) {
        posix_spawn_file_actions_t fa;
        struct rusage ru;
        uint64_t t0, total = 0;
        long n, failures = 0;
        char **keys = NULL, **args;
        int a0 = 1;
        FILE *f;

        if (argc > 2 && strcmp(argv[1], "--keys") == 0) {
                keys = keys_read(argv[2], &n);
                a0 = 2;
        }
        if (argc < a0 + 4 || strcmp(argv[a0 + 2], "--") != 0) {
                fprintf(stderr, "usage: spawn N|--keys FILE SAMPLES -- COMMAND [ARG...]\n");
                return 2;
        }
        if (!keys)
                n = atol(argv[1]);
        args = calloc((size_t) (argc - a0 - 3 + 1), sizeof(char *));
        if (!args)
                return 1;
        f = fopen(argv[a0 + 1], "we");
        if (!f) {
                fprintf(stderr, "spawn: %s: %s\n", argv[a0 + 1], strerror(errno));
                return 1;
        }
        /* udevd gives a RUN program /dev/null for stdin and its own pipes for stdout and stderr;
         * /dev/null for all three is as cheap as it gets. */
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);

        for (long i = 0; i < n; i++) {
                pid_t pid;
                int status, r;

                for (int j = a0 + 3; j < argc; j++)
                        args[j - a0 - 3] = keys && strcmp(argv[j], "{}") == 0 ? keys[i] : argv[j];
                t0 = now_ns();
                r = posix_spawn(&pid, args[0], &fa, NULL, args, environ);
                if (r != 0) {
                        fprintf(stderr, "spawn: %s: %s\n", args[0], strerror(r));
                        return 1;
                }
                if (waitpid(pid, &status, 0) < 0) {
                        fprintf(stderr, "spawn: waitpid: %s\n", strerror(errno));
                        return 1;
                }
                t0 = now_ns() - t0;
                total += t0;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        failures++;
                fprintf(f, "%llu %d\n", (unsigned long long) t0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        fclose(f);
        getrusage(RUSAGE_CHILDREN, &ru);
        printf("{\"runs\":%ld,\"failures\":%ld,\"wall_ns\":%llu,\"user_ns\":%llu,\"system_ns\":%llu}\n", n, failures,
               (unsigned long long) total, (unsigned long long) tv_ns(ru.ru_utime),
               (unsigned long long) tv_ns(ru.ru_stime));
        return 0;
}
