/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loadgen: a varlink load generator that costs the server as little as a client can. One thread, one
 * epoll set, C persistent connections, each with one call in flight (closed loop): a reply sends the
 * next call on the same connection. Calls are read from a file, one JSON message per line, and sent
 * in file order, cycling.
 *
 *   loadgen SOCKET C N REQUESTS [SAMPLES]     N calls over C connections; each call's latency
 *                                             (ns) and whether it was an error reply go to SAMPLES
 *   loadgen --storm SOCKET C REQUESTS SAMPLES C connections made first, then one call on each, all
 *                                             sent at once; per connection the send and answer
 *                                             times (CLOCK_MONOTONIC ns) and error flag
 *
 * Prints one JSON line: calls, errors, wall_ns, and in storm mode the release time. Exits 1 when a
 * connection fails: a number measured on a broken run is not reported. */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 65536

typedef struct Conn {
        int fd;
        char *in;
        size_t n_in, size_in;
        const char *out;        /* the call being sent, NUL included */
        size_t n_out, sent;
        uint64_t start;
        long index;             /* which sample this call fills */
} Conn;

typedef struct Calls {
        char **text;            /* each with its NUL terminator counted in len */
        size_t *len;
        size_t n;
} Calls;

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void die(const char *what) {
        fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void calls_read(const char *path, Calls *c) {
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t size = 0;
        ssize_t k;

        if (!f)
                die(path);
        *c = (Calls) {};
        while ((k = getline(&line, &size, f)) >= 0) {
                if (k > 0 && line[k - 1] == '\n')
                        line[--k] = '\0';
                if (k == 0)
                        continue;
                c->text = realloc(c->text, (c->n + 1) * sizeof(char *));
                c->len = realloc(c->len, (c->n + 1) * sizeof(size_t));
                if (!c->text || !c->len)
                        die("realloc");
                c->text[c->n] = strdup(line);   /* strdup keeps the NUL, which ends the message */
                c->len[c->n] = (size_t) k + 1;
                c->n++;
        }
        free(line);
        fclose(f);
        if (c->n == 0) {
                fprintf(stderr, "loadgen: no calls in %s\n", path);
                exit(1);
        }
}

static int conn_open(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                die("socket");
        /* Blocking: a full backlog makes connect() wait for the server to accept, not fail. */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("connect");
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
                die("fcntl");
        return fd;
}

static void conn_send(Conn *c) {
        while (c->sent < c->n_out) {
                ssize_t k = write(c->fd, c->out + c->sent, c->n_out - c->sent);
                if (k < 0) {
                        if (errno == EAGAIN)
                                return;
                        die("write");
                }
                c->sent += (size_t) k;
        }
}

static void conn_start(Conn *c, const Calls *calls, long seq, long index) {
        c->out = calls->text[seq % (long) calls->n];
        c->n_out = calls->len[seq % (long) calls->n];
        c->sent = 0;
        c->index = index;
        c->start = now_ns();
        conn_send(c);
}

/* Reads what is there; returns 1 with *ret_error set when a whole reply arrived, 0 when not yet. */
static int conn_receive(Conn *c, bool *ret_error) {
        for (;;) {
                char *nul;
                ssize_t k;

                nul = c->n_in > 0 ? memchr(c->in, '\0', c->n_in) : NULL;
                if (nul) {
                        size_t used = (size_t) (nul - c->in) + 1;

                        *ret_error = memmem(c->in, used, "\"error\"", 7) != NULL;
                        memmove(c->in, c->in + used, c->n_in - used);
                        c->n_in -= used;
                        return 1;
                }
                if (c->size_in - c->n_in < READ_CHUNK) {
                        c->size_in = c->size_in * 2 + READ_CHUNK;
                        c->in = realloc(c->in, c->size_in);
                        if (!c->in)
                                die("realloc");
                }
                k = read(c->fd, c->in + c->n_in, c->size_in - c->n_in);
                if (k < 0) {
                        if (errno == EAGAIN)
                                return 0;
                        die("read");
                }
                if (k == 0) {
                        errno = ECONNRESET;
                        die("connection closed by the server");
                }
                c->n_in += (size_t) k;
        }
}

static Conn *conns_open(const char *path, int n, int *ret_ep) {
        Conn *conns = calloc((size_t) n, sizeof(Conn));
        int ep = epoll_create1(EPOLL_CLOEXEC);

        if (!conns || ep < 0)
                die("setup");
        for (int i = 0; i < n; i++) {
                struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = conns + i };

                conns[i].fd = conn_open(path);
                if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0)
                        die("epoll_ctl");
        }
        *ret_ep = ep;
        return conns;
}

static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int run_closed(const char *path, int n_conns, long total, const Calls *calls, const char *samples) {
        uint64_t *lat = calloc((size_t) total, sizeof(uint64_t));
        bool *err = calloc((size_t) total, sizeof(bool));
        struct epoll_event evs[256];
        long next = 0, done = 0, errors = 0;
        uint64_t t0, t1;
        Conn *conns;
        int ep;

        if (!lat || !err)
                die("calloc");
        conns = conns_open(path, n_conns, &ep);
        t0 = now_ns();
        for (int i = 0; i < n_conns && next < total; i++, next++)
                conn_start(conns + i, calls, next, next);
        while (done < total) {
                int k = epoll_wait(ep, evs, (int) (sizeof(evs) / sizeof(evs[0])), 60000);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        die("epoll_wait");
                }
                if (k == 0) {
                        errno = ETIMEDOUT;
                        die("no reply within 60 s");
                }
                for (int i = 0; i < k; i++) {
                        Conn *c = evs[i].data.ptr;
                        bool e;

                        if (evs[i].events & EPOLLOUT)
                                conn_send(c);
                        if (!(evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                                continue;
                        /* A reply may come in the same read as nothing else: one call in flight. */
                        while (c->out && conn_receive(c, &e) > 0) {
                                lat[c->index] = now_ns() - c->start;
                                err[c->index] = e;
                                errors += e;
                                done++;
                                c->out = NULL;
                                if (next < total) {
                                        conn_start(c, calls, next, next);
                                        next++;
                                }
                        }
                }
        }
        t1 = now_ns();

        if (samples) {
                FILE *f = fopen(samples, "we");
                if (!f)
                        die(samples);
                for (long i = 0; i < total; i++)
                        fprintf(f, "%llu %d\n", (unsigned long long) lat[i], err[i]);
                fclose(f);
        }
        printf("{\"calls\":%ld,\"errors\":%ld,\"connections\":%d,\"wall_ns\":%llu}\n", total, errors, n_conns,
               (unsigned long long) (t1 - t0));
        return 0;
}

static int run_storm(const char *path, int n_conns, const Calls *calls, const char *samples) {
        uint64_t *answered = calloc((size_t) n_conns, sizeof(uint64_t)), *sent = calloc((size_t) n_conns,
                                                                                        sizeof(uint64_t));
        bool *err = calloc((size_t) n_conns, sizeof(bool));
        struct epoll_event evs[256];
        long done = 0, errors = 0;
        uint64_t released;
        Conn *conns;
        FILE *f;
        int ep;

        if (!answered || !sent || !err)
                die("calloc");
        conns = conns_open(path, n_conns, &ep);
        /* Let the server accept every connection before the calls go: a storm of calls, not of
         * connects. */
        usleep(200 * 1000);
        released = now_ns();
        for (int i = 0; i < n_conns; i++) {
                conn_start(conns + i, calls, i, i);
                sent[i] = conns[i].start;
        }
        while (done < n_conns) {
                int k = epoll_wait(ep, evs, (int) (sizeof(evs) / sizeof(evs[0])), 120000);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        die("epoll_wait");
                }
                if (k == 0) {
                        errno = ETIMEDOUT;
                        die("no reply within 120 s");
                }
                for (int i = 0; i < k; i++) {
                        Conn *c = evs[i].data.ptr;
                        bool e;

                        if (evs[i].events & EPOLLOUT)
                                conn_send(c);
                        if (c->out && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && conn_receive(c, &e) > 0) {
                                answered[c->index] = now_ns();
                                err[c->index] = e;
                                errors += e;
                                done++;
                                c->out = NULL;
                        }
                }
        }

        f = fopen(samples, "we");
        if (!f)
                die(samples);
        for (int i = 0; i < n_conns; i++)
                fprintf(f, "%llu %llu %d\n", (unsigned long long) sent[i], (unsigned long long) answered[i], err[i]);
        fclose(f);
        printf("{\"calls\":%d,\"errors\":%ld,\"connections\":%d,\"released_ns\":%llu}\n", n_conns, errors, n_conns,
               (unsigned long long) released);
        return 0;
}

int main(int argc, char *argv[]) {
        Calls calls;

        raise_nofile();
        if (argc == 6 && strcmp(argv[1], "--storm") == 0) {
                calls_read(argv[4], &calls);
                return run_storm(argv[2], atoi(argv[3]), &calls, argv[5]);
        }
        if (argc == 5 || argc == 6) {
                calls_read(argv[4], &calls);
                return run_closed(argv[1], atoi(argv[2]), atol(argv[3]), &calls, argc == 6 ? argv[5] : NULL);
        }
        fprintf(stderr, "usage: loadgen SOCKET CONNECTIONS CALLS REQUESTS [SAMPLES]\n"
                        "       loadgen --storm SOCKET CONNECTIONS REQUESTS SAMPLES\n");
        return 2;
}
