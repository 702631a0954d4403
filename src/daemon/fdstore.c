/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "fdstore.h"
#include "macro.h"
#include "parse-util.h"
#include "strv.h"

/* What PID 1 passed at start, by name. The store holds a few fds of our own; more is not ours. */
#define PASSED_MAX 16

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

static int take_exact(const char *name) {
        for (size_t i = 0; i < n_passed; i++)
                if (passed[i].fd >= 0 && streq_ptr(passed[i].name, name))
                        return TAKE_FD(passed[i].fd);
        return -ENOENT;
}

static int notify(const char *what, const char *name, const int *fd) {
        _cleanup_free_ char *msg = NULL;
        int r;

        if (!fdstore_available())
                return -EOPNOTSUPP;
        if (asprintf(&msg, "%s\nFDNAME=%s", what, name) < 0)
                return -ENOMEM;
        r = fd ? sd_pid_notify_with_fds(0, false, msg, fd, 1) : sd_notify(false, msg);
        if (r < 0)
                return r;
        return r == 0 ? -EOPNOTSUPP : 0;
}

int fdstore_take(const char *name) {
        _cleanup_free_ char *new = NULL;
        int fd, other;

        if (asprintf(&new, "%s.new", name) < 0)
                return -ENOMEM;
        fd = take_exact(name);
        other = take_exact(new);
        if (fd >= 0) {
                if (other >= 0) {
                        (void) safe_close(other);
                        (void) notify("FDSTOREREMOVE=1", new, NULL);
                }
                return fd;
        }
        if (other < 0)
                return -ENOENT;
        /* A replacement cut short after its first step: the new record is whole, finish it. */
        (void) notify("FDSTORE=1", name, &other);
        (void) notify("FDSTOREREMOVE=1", new, NULL);
        return other;
}

void fdstore_done(void) {
        for (size_t i = 0; i < n_passed; i++) {
                if (passed[i].fd >= 0) {
                        (void) safe_close(passed[i].fd);
                        (void) notify("FDSTOREREMOVE=1", passed[i].name, NULL);
                }
                free(passed[i].name);
        }
        n_passed = 0;
}

int fdstore_put(int fd, const char *name) {
        return notify("FDSTORE=1", name, &fd);
}

int fdstore_remove(const char *name) {
        return notify("FDSTOREREMOVE=1", name, NULL);
}

int fdstore_replace(int fd, const char *name) {
        _cleanup_free_ char *new = NULL;
        int r;

        if (asprintf(&new, "%s.new", name) < 0)
                return -ENOMEM;
        r = notify("FDSTORE=1", new, &fd);
        if (r >= 0)
                r = notify("FDSTOREREMOVE=1", name, NULL);
        if (r >= 0)
                r = notify("FDSTORE=1", name, &fd);
        if (r >= 0)
                r = notify("FDSTOREREMOVE=1", new, NULL);
        return r;
}
