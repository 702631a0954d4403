/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "varlink-plain.h"

static int connect_unix(int fd, const char *address, uint64_t timeout_usec) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = {};
        size_t n = strlen(address);

        if (n == 0 || n >= sizeof(sa.sun_path))
                return -EINVAL;
        memcpy(sa.sun_path, address, n);

        /* A blocking connect to an AF_UNIX socket waits only while the listener's backlog is full,
         * for at most SO_SNDTIMEO (the socket is made nonblocking after). */
        if (timeout_usec != USEC_INFINITY) {
                tv.tv_sec = (time_t) (timeout_usec / USEC_PER_SEC);
                tv.tv_usec = (suseconds_t) (timeout_usec % USEC_PER_SEC);
                if (tv.tv_sec == 0 && tv.tv_usec == 0)
                        tv.tv_usec = 1;
        }
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;

        for (;;) {
                if (connect(fd, (struct sockaddr *) &sa, offsetof(struct sockaddr_un, sun_path) + n + 1) >=
                    0)
                        break;
                if (errno == EISCONN)
                        break;          /* an earlier attempt, interrupted, went through */
                if (errno != EINTR)
                        return errno == EINPROGRESS ? -EAGAIN : -errno;
        }

        tv = (struct timeval) {};
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int varlink_conn_open(VarlinkConn *c, const char *address, char *message, size_t len,
                      uint64_t timeout_usec) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        assert(c);

        *c = (VarlinkConn) { .fd = -EBADF, .out = message, .out_len = len + 1 };

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        r = connect_unix(fd, address, timeout_usec);
        if (r < 0)
                return r;
        c->fd = TAKE_FD(fd);
        return 0;
}

short varlink_conn_events(const VarlinkConn *c) {
        assert(c);

        return c->out_done < c->out_len ? POLLOUT : POLLIN;
}

static int conn_write(VarlinkConn *c) {
        while (c->out_done < c->out_len) {
                /* message's NUL terminator is the frame's end: out_len counts it. */
                ssize_t k = send(c->fd, c->out + c->out_done, c->out_len - c->out_done,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return errno == EPIPE ? -ECONNRESET : -errno;
                }
                c->out_done += (size_t) k;
        }
        return 0;
}

int varlink_frame_end(const char *buf, size_t len, size_t *ret_len) {
        const char *nul = memchr(buf, 0, len);

        assert(ret_len);

        if (!nul)
                return 0;
        *ret_len = (size_t) (nul - buf);
        return 1;
}

static int conn_read(VarlinkConn *c) {
        for (;;) {
                size_t seen = c->in_len;
                ssize_t k;

                if (c->in_cap - c->in_len < 4096) {
                        size_t cap =
                                MIN(MAX(c->in_cap * 2, (size_t) 8192), (size_t) VARLINK_PLAIN_REPLY_MAX + 1);
                        char *b;

                        if (cap <= c->in_len)
                                return -EMSGSIZE;
                        b = realloc(c->in, cap);
                        if (!b)
                                return -ENOMEM;
                        c->in = b;
                        c->in_cap = cap;
                }
                k = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                if (k == 0)
                        return -ECONNRESET;
                c->in_len += (size_t) k;
                if (varlink_frame_end(c->in + seen, c->in_len - seen, &c->reply_len) > 0) {
                        c->reply_len += seen;
                        return c->reply_len <= VARLINK_PLAIN_REPLY_MAX ? 1 : -EMSGSIZE;
                }
                if (c->in_len > VARLINK_PLAIN_REPLY_MAX)
                        return -EMSGSIZE;
        }
}

int varlink_conn_io(VarlinkConn *c) {
        int r;

        r = conn_write(c);
        if (r < 0 || c->out_done < c->out_len)
                return r;
        return conn_read(c);
}

void varlink_conn_close(VarlinkConn *c) {
        assert(c);

        c->fd = safe_close(c->fd);
        free(c->out);
        free(c->in);
        *c = VARLINK_CONN_NULL;
}

int varlink_reply_parse(const char *text, size_t len, VarlinkReply *ret, const char **ret_reason) {
        _cleanup_(json_freep) JsonValue *j = NULL;
        const JsonValue *error, *parameters, *continues;
        const char *reason = NULL;
        int r;

        assert(ret);

        r = json_parse(text, len, &j, &reason);
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = reason;
                return r;
        }

        error = json_by_key(j, "error");
        parameters = json_by_key(j, "parameters");
        continues = json_by_key(j, "continues");
        if (!json_is_object(j))
                reason = "reply is not a JSON object";
        else if (error && (!json_string(error) || !*json_string(error)))
                reason = "reply's error is not a name";
        else if (parameters && !json_is_object(parameters))
                reason = "reply's parameters are not an object";
        else if (continues && (continues->type != JSON_BOOLEAN || continues->boolean))
                reason = "reply continues a call that asked for one reply";
        if (reason) {
                if (ret_reason)
                        *ret_reason = reason;
                return -EPROTO;
        }

        *ret = (VarlinkReply) {
                .error = json_string(error),
                .parameters = parameters,
                .json = TAKE_PTR(j),
        };
        return 0;
}

void varlink_reply_done(VarlinkReply *r) {
        json_free(r->json);
        *r = (VarlinkReply) {};
}
