/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "fdstore.h"
#include "macro.h"
#include "parse-util.h"
#include "strv.h"

/* What PID 1 passed at start, by name. The store holds a few fds of our own; more is not ours. */
#define PASSED_MAX 32

typedef struct Passed {
        int fd;
        char *name;
} Passed;

static Passed passed[PASSED_MAX];
static size_t n_passed;

/* PID 1 passes the sockets first and the store after them. What is left described in $LISTEN_FDS
 * is the varlink sockets alone, for sd_varlink_server_listen_auto(), which sets FD_CLOEXEC on every
 * fd described there and fails on one that was taken and closed since. */
static int describe_only(size_t n_varlink, char **names) {
        _cleanup_free_ char *joined = NULL, *count = NULL;
        size_t len = 0;

        for (size_t i = 0; i < n_varlink; i++)
                len += strlen(names[i]) + 1;
        joined = calloc(len + 1, 1);
        if (!joined || asprintf(&count, "%zu", n_varlink) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_varlink; i++) {
                if (i > 0)
                        strcat(joined, ":");
                strcat(joined, names[i]);
        }
        if (setenv("LISTEN_FDS", count, 1) < 0 || setenv("LISTEN_FDNAMES", joined, 1) < 0)
                return negative_errno();
        return 0;
}

int fdstore_init(void) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n_varlink = 0;
        int n, r;

        n = sd_listen_fds_with_names(false, &names);
        if (n <= 0)
                return 0;
        while (n_varlink < (size_t) n && streq_ptr(names[n_varlink], "varlink"))
                n_varlink++;
        for (int i = (int) n_varlink; i < n; i++)
                if (streq_ptr(names[i], "varlink"))
                        return -EINVAL;         /* not PID 1's order: nothing is taken */
        r = describe_only(n_varlink, names);
        if (r < 0)
                return r;
        for (int i = (int) n_varlink; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;

                if (n_passed >= PASSED_MAX) {
                        (void) safe_close(fd);
                        continue;
                }
                passed[n_passed].name = strdup(names[i]);
                if (!passed[n_passed].name)
                        return -ENOMEM;
                passed[n_passed++].fd = fd;
        }
        return 0;
}

bool fdstore_available(void) {
        const char *e = getenv("FDSTORE");
        unsigned n;

        return e && parse_unsigned(e, &n) >= 0 && n > 0 && getenv("NOTIFY_SOCKET");
}

/* The generation name is stored as now, -1 for none; names are few. */
#define NAMES_MAX 16

typedef struct Kept {
        char name[32];
        long generation;
} Kept;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static Kept kept[NAMES_MAX];
static size_t n_kept;

static Kept *kept_find(const char *name) {
        for (size_t i = 0; i < n_kept; i++)
                if (streq_ptr(kept[i].name, name))
                        return &kept[i];
        if (n_kept >= NAMES_MAX || strlen(name) >= sizeof(kept[0].name))
                return NULL;
        snprintf(kept[n_kept].name, sizeof(kept[0].name), "%s", name);
        kept[n_kept].generation = -1;
        return &kept[n_kept++];
}

/* The generation of a passed fd's name for name, or -1 when it is not name's. */
static long generation_of(const char *stored, const char *name) {
        size_t n = strlen(name);
        unsigned g;

        if (strncmp(stored, name, n) != 0 || stored[n] != '.' || parse_unsigned(stored + n + 1, &g) < 0)
                return -1;
        return (long) g;
}

static int notify(const char *what, const char *name, long generation, const int *fd) {
        _cleanup_free_ char *msg = NULL;
        int r;

        if (!fdstore_available())
                return -EOPNOTSUPP;
        if (asprintf(&msg, "%s\nFDNAME=%s.%ld", what, name, generation) < 0)
                return -ENOMEM;
        r = fd ? sd_pid_notify_with_fds(0, false, msg, fd, 1) : sd_notify(false, msg);
        if (r < 0)
                return r;
        return r == 0 ? -EOPNOTSUPP : 0;
}

int fdstore_take(const char *name) {
        long best = -1;
        size_t at = 0;
        Kept *k;
        int fd;

        for (size_t i = 0; i < n_passed; i++) {
                long g = passed[i].fd >= 0 ? generation_of(passed[i].name, name) : -1;

                if (g > best) {
                        best = g;
                        at = i;
                }
        }
        if (best < 0)
                return -ENOENT;
        fd = TAKE_FD(passed[at].fd);
        for (size_t i = 0; i < n_passed; i++)
                if (passed[i].fd >= 0 && generation_of(passed[i].name, name) >= 0) {
                        (void) safe_close(TAKE_FD(passed[i].fd));
                        (void) notify("FDSTOREREMOVE=1", name, generation_of(passed[i].name, name), NULL);
                }
        pthread_mutex_lock(&kept_lock);
        k = kept_find(name);
        if (k)
                k->generation = best;
        pthread_mutex_unlock(&kept_lock);
        return fd;
}

void fdstore_done(void) {
        for (size_t i = 0; i < n_passed; i++) {
                if (passed[i].fd >= 0) {
                        (void) safe_close(passed[i].fd);
                        if (fdstore_available())
                                (void) sd_notifyf(false, "FDSTOREREMOVE=1\nFDNAME=%s", passed[i].name);
                }
                free(passed[i].name);
        }
        n_passed = 0;
}

int fdstore_put_full(int fd, const char *name, bool poll) {
        Kept *k;
        int r;

        pthread_mutex_lock(&kept_lock);
        k = kept_find(name);
        if (!k)
                r = -E2BIG;
        else {
                r = notify(poll ? "FDSTORE=1" : "FDSTORE=1\nFDPOLL=0", name, k->generation + 1, &fd);
                if (r >= 0 && k->generation >= 0)
                        (void) notify("FDSTOREREMOVE=1", name, k->generation, NULL);
                if (r >= 0)
                        k->generation++;
        }
        pthread_mutex_unlock(&kept_lock);
        return r;
}

int fdstore_put(int fd, const char *name) {
        return fdstore_put_full(fd, name, true);
}

int fdstore_remove(const char *name) {
        Kept *k;
        int r = 0;

        pthread_mutex_lock(&kept_lock);
        k = kept_find(name);
        if (k && k->generation >= 0)
                r = notify("FDSTOREREMOVE=1", name, k->generation, NULL);
        pthread_mutex_unlock(&kept_lock);
        return r;
}
