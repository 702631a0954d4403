/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connections.h"
#include "hashmap.h"
#include "log.h"
#include "manager.h"
#include "peer.h"
#include "time-util.h"

/* A connection watched for silence and for input without end. sd-varlink reads what the client sends
 * and says nothing of it: a duplicate of the socket, watched edge-triggered, is woken by each arrival
 * without taking any of it. */
typedef struct Connection {
        Connections *owner;
        sd_varlink *link;
        int fd;
        sd_event_source *input;
        sd_event_source *timer;         /* NULL when IdleConnectionSec=0 */
        uint64_t last_input_usec;       /* CLOCK_MONOTONIC */
        size_t unterminated;            /* bytes received since the last NUL */
        bool in_call;                   /* a call was in flight at the last look */
} Connection;

struct Connections {
        sd_event *event;
        uint64_t idle_usec;
        Hashmap *by_link;               /* "%p" of the link → Connection */
        uint64_t trimmed_usec;          /* when the heap was last given back */
        unsigned per_user_max;          /* MaxConnectionsPerUser=, as the fd limit leaves it */
        Hashmap *per_uid;               /* "UID" → the number of its connections (uid 0 not counted) */
};

/* Connections made and closed in bursts left glibc's heap fragmented: with 64 new connections every
 * 10,000 calls RSS crept up by 50 to 160 KiB a burst, without end (bench/run 6). When the last
 * connection of a burst is gone, what is free goes back to the kernel; at most once a second, so
 * that one-call clients (a udev event each) do not pay for it every time. */
#define TRIM_INTERVAL_USEC USEC_PER_SEC

static void connection_free(void *p) {
        Connection *c = p;

        if (!c)
                return;
        sd_event_source_disable_unref(c->input);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        sd_varlink_unref(c->link);
        free(c);
}

Connections *connections_free(Connections *cs) {
        if (!cs)
                return NULL;
        hashmap_free(cs->by_link);
        hashmap_free(cs->per_uid);
        sd_event_unref(cs->event);
        free(cs);
        return NULL;
}

static void link_key(sd_varlink *link, char key[static 32]) {
        snprintf(key, 32, "%p", (void *) link);
}

/* A call the client waits for (a Load in progress, a Monitor) is no silence of its own. */
static bool link_in_call(sd_varlink *link) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;

        return sd_varlink_get_current_parameters(link, &p) >= 0;
}

static int connection_arm(Connection *c, uint64_t when) {
        int r;

        r = sd_event_source_set_time(c->timer, when);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/* sd-varlink buffers up to 16 MiB of a message before it gives up (VARLINK_BUFFER_MAX, fixed: libsystemd
 * has no call to lower it), and reads whatever arrives; so the bytes a client sends are counted here,
 * as they arrive, and a connection past CONNECTION_INPUT_MAX without a NUL is closed. The bytes are
 * peeked, not taken: with SO_PEEK_OFF each peek starts where the last one ended, and sd-varlink's reads
 * move that point back by what they took, so each byte is seen once, before sd-varlink takes it (this
 * source runs at a higher priority than sd-varlink's). One recv() per arrival, and nothing to copy
 * between us and sd-varlink (accepting connections and relaying them to it would cost two more
 * system calls a message, and a buffer of our own).
 *
 * What this leaves: bytes that arrive after the loop woke, and that sd-varlink reads in that same
 * iteration, are taken before they are peeked, and not counted. A client that streams without a break
 * thus gets some bytes past the count, so the cap is exact for what arrives between iterations, and
 * approximate for a stream; the unit's MemoryMax= is what bounds the rest. */
static char peek_buffer[64 * 1024];     /* event loop thread only */

/* Returns -EMSGSIZE when the connection is past the cap, else 0. */
static int connection_count_input(Connection *c) {
        for (;;) {
                const char *nul;
                ssize_t n;

                n = recv(c->fd, peek_buffer, sizeof(peek_buffer), MSG_PEEK | MSG_DONTWAIT);
                if (n <= 0)     /* nothing more (EAGAIN), the end, or an error that sd-varlink will see */
                        return 0;
                nul = memrchr(peek_buffer, 0, (size_t) n);
                c->unterminated = nul ? (size_t) (peek_buffer + n - nul - 1) : c->unterminated + (size_t) n;
                if (c->unterminated > CONNECTION_INPUT_MAX)
                        return -EMSGSIZE;
                if ((size_t) n < sizeof(peek_buffer))
                        return 0;
        }
}

static void connection_close_oversized(Connection *c) {
        pid_t pid = 0;
        uid_t uid = (uid_t) -1;

        (void) sd_varlink_get_peer_pid(c->link, &pid);
        (void) sd_varlink_get_peer_uid(c->link, &uid);
        log_info("Closing the connection of pid %d (uid %u): more than %u bytes without the NUL that ends a "
                 "message.", (int) pid, (unsigned) uid, CONNECTION_INPUT_MAX);
        /* The disconnect callback frees c. */
        (void) sd_varlink_close(c->link);
}

static int on_input(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;

        c->last_input_usec = now_usec();
        if (connection_count_input(c) < 0)
                connection_close_oversized(c);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Connection *c = userdata;
        uint64_t idle = c->owner->idle_usec, now = now_usec();
        pid_t pid = 0;
        uid_t uid = (uid_t) -1;

        if (link_in_call(c->link)) {
                /* Looked at again soon after, so that the silence is counted from about the reply. */
                c->in_call = true;
                return connection_arm(c, now + MAX(idle / 4, USEC_PER_SEC / 10));
        }
        if (c->in_call) {
                c->in_call = false;
                c->last_input_usec = now;
        }
        if (now < c->last_input_usec + idle)
                return connection_arm(c, c->last_input_usec + idle);

        (void) sd_varlink_get_peer_pid(c->link, &pid);
        (void) sd_varlink_get_peer_uid(c->link, &uid);
        log_info(
                "Closing the connection of pid %d (uid %u): nothing sent for %llu s, and no call in flight.",
                (int) pid, (unsigned) uid, (unsigned long long) (idle / USEC_PER_SEC));
        /* The disconnect callback frees c. */
        (void) sd_varlink_close(c->link);
        return 0;
}

/* One uid may hold MaxConnectionsPerUser= connections, so that a user's client cannot take every
 * connection from the others; root is not held to it (only to MaxConnections=): udev runs a helper
 * per event as root, and a coldplug on a machine with 1,536 CPUs runs more than a thousand at once
 * (udevd's children_max grows with the CPUs). Root can end the daemon anyway. sd-varlink's own
 * per-uid cap knows no exception, so the count is kept here. */
static int count_connection(Connections *cs, sd_varlink *link) {
        char uid_key[16];
        unsigned *n;
        uid_t uid;
        int r;

        r = sd_varlink_get_peer_uid(link, &uid);
        if (r < 0)
                return r;
        if (uid == 0)
                return 0;
        snprintf(uid_key, sizeof(uid_key), "%u", (unsigned) uid);
        n = hashmap_get(cs->per_uid, uid_key);
        if (!n) {
                n = calloc(1, sizeof(*n));
                if (!n || hashmap_put(cs->per_uid, uid_key, n) < 0) {
                        free(n);
                        return -ENOMEM;
                }
        }
        /* Counted even when refused: sd-varlink calls the disconnect callback for it too, which
         * takes it off again. */
        if (++*n > cs->per_user_max) {
                log_debug("Refusing a connection of uid %u: it holds %u (MaxConnectionsPerUser=).",
                          (unsigned) uid, *n - 1);
                return -EDQUOT;
        }
        return 0;
}

static void uncount_connection(Connections *cs, sd_varlink *link) {
        char uid_key[16];
        unsigned *n;
        uid_t uid;

        if (sd_varlink_get_peer_uid(link, &uid) < 0 || uid == 0)
                return;
        snprintf(uid_key, sizeof(uid_key), "%u", (unsigned) uid);
        n = hashmap_get(cs->per_uid, uid_key);
        if (n && --*n == 0)
                free(hashmap_remove(cs->per_uid, uid_key));
}

/* Before sd-varlink's own source (SD_EVENT_PRIORITY_NORMAL), so that what arrived is peeked before
 * sd-varlink reads it. */
static int connection_watch_input(Connections *cs, Connection *c) {
        static const int zero = 0;
        int r;

        if (setsockopt(c->fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
                return negative_errno();
        r = sd_event_add_io(cs->event, &c->input, c->fd, EPOLLIN | EPOLLET, on_input, c);
        if (r < 0)
                return r;
        return sd_event_source_set_priority(c->input, SD_EVENT_PRIORITY_IMPORTANT);
}

/* Who connected, read once as the connection is accepted (peer.c): what grants more than reading
 * must hold then as well as at each call. */
static int connection_identify(Manager *m, sd_varlink *link) {
        int r;

        r = peer_cache_connect(m->peers, link);
        if (r < 0)
                return log_warning_errno(r, "Failed to read a new connection's peer, closing it: %m");
        return 0;
}

static int on_connect(sd_varlink_server *server, sd_varlink *link, void *userdata) {
        Connections *cs = ((Manager *) userdata)->connections;
        Connection *c;
        char key[32];
        int fd, r;

        if (!cs)
                return 0;
        r = count_connection(cs, link);
        if (r < 0)
                return r; /* sd-varlink hangs up */
        r = connection_identify(userdata, link);
        if (r < 0)
                return r;
        fd = sd_varlink_get_fd(link);
        if (fd < 0)
                return fd;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (Connection) { .owner = cs, .link = sd_varlink_ref(link), .last_input_usec = now_usec() };
        c->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        r = c->fd < 0 ? negative_errno() : 0;
        if (r >= 0)
                r = connection_watch_input(cs, c);
        if (r >= 0 && cs->idle_usec > 0)
                r = sd_event_add_time(cs->event, &c->timer, CLOCK_MONOTONIC,
                                      c->last_input_usec + cs->idle_usec, USEC_PER_SEC / 10, on_timer, c);
        link_key(link, key);
        if (r >= 0)
                r = hashmap_put(cs->by_link, key, c);
        if (r < 0) {
                /* sd-varlink hangs up on the client: an fd more is what every connection costs here. */
                connection_free(c);
                return log_warning_errno(r, "Failed to watch a new connection, closing it: %m");
        }
        return 0;
}

static void on_disconnect(sd_varlink_server *server, sd_varlink *link, void *userdata) {
        Manager *m = userdata;
        Connections *cs = m->connections;
        char key[32];

        /* A Monitor call ends with its connection. */
        monitors_forget(m->monitors, link);
        peer_cache_forget(m->peers, link);
        if (!cs)
                return;
        uncount_connection(cs, link);
        link_key(link, key);
        connection_free(hashmap_remove(cs->by_link, key));
        if (sd_varlink_server_current_connections(server) == 0 &&
            now_usec() >= cs->trimmed_usec + TRIM_INTERVAL_USEC) {
                (void) malloc_trim(0);
                cs->trimmed_usec = now_usec();
        }
}

/* Every connection is an fd, three more for its peer's /proc (peer.c) and one more to watch its input;
 * so is every module file a worker opens: stay below the fd limit, or accepting fails and sd-varlink
 * stops listening. */
static unsigned fd_budget(const Config *config) {
        rlim_t spare = 64 + 2 * (rlim_t) config->workers, per = 5;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 16;
        if (rl.rlim_cur > spare * 2)
                return (unsigned) MIN((rl.rlim_cur - spare) / per, (rlim_t) CONFIG_CONNECTIONS_LIMIT);
        /* A limit too low for the usual spare: half of it for connections, at least one, so that
         * accept() itself never runs out (sd-varlink stops listening when it does). */
        return MAX((unsigned) (rl.rlim_cur / 2 / per), 1u);
}

int manager_connections_init(Manager *m, sd_varlink_server *s) {
        const Config *config = &m->config;
        unsigned total, per_user;
        Connections *cs;
        int r;

        assert(m);

        /* A quarter stays for the others when one uid holds its whole share: root is served while a
         * reader's client hangs on to what it may. */
        total = MIN(config->connections_max, fd_budget(config));
        per_user = MIN(config->connections_per_user_max, total > 1 ? total - MAX(total / 4, 1u) : 1u);
        if (total < config->connections_max || per_user < config->connections_per_user_max)
                log_notice(
                        "At most %u connections, %u per user: MaxConnections=%u and "
                        "MaxConnectionsPerUser=%u "
                        "are more than the fd limit (%u) leaves, or than three quarters of the connections.",
                        total, per_user, config->connections_max, config->connections_per_user_max,
                        fd_budget(config));
        r = sd_varlink_server_set_connections_max(s, total);
        if (r >= 0)  /* the per-uid count is kept here (count_connection()) */
                r = sd_varlink_server_set_connections_per_uid_max(s, total);
        if (r < 0)
                return r;

        cs = calloc(1, sizeof(*cs));
        if (!cs)
                return -ENOMEM;
        cs->event = sd_event_ref(m->event);
        cs->idle_usec = config->idle_connection_usec;
        cs->per_user_max = per_user;
        cs->by_link = hashmap_new(connection_free);
        cs->per_uid = hashmap_new(free);
        if (!cs->by_link || !cs->per_uid) {
                connections_free(cs);
                return -ENOMEM;
        }
        m->connections = cs;

        r = sd_varlink_server_bind_connect(s, on_connect);
        if (r >= 0)
                r = sd_varlink_server_bind_disconnect(s, on_disconnect);
        if (r < 0)
                return r;
        log_debug("Connections: at most %u, %u per user, idle ones closed after %llu ms.", total, per_user,
                  (unsigned long long) (cs->idle_usec / USEC_PER_MSEC));
        return 0;
}
