/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-plain.h"

/* One varlink call over AF_UNIX without sd-varlink: the call goes out as JSON and a NUL byte, the
 * reply comes back the same way. For a client that makes one call per connection and wants no
 * library: nonblocking I/O driven by the caller's poll(). */

/* modgated's answers to Load are a few KiB; anything near this is not one. */
#define VARLINK_PLAIN_REPLY_MAX (1024U * 1024U)

typedef struct VarlinkConn {
        int fd;
        char *out;                      /* the call, its NUL included */
        size_t out_len, out_done;
        char *in;                       /* what came back so far */
        size_t in_len, in_cap;
        size_t reply_len;               /* the reply's length, without its NUL, once complete */
} VarlinkConn;

#define VARLINK_CONN_NULL ((VarlinkConn) { .fd = -EBADF })

/* Connects (waiting at most timeout_usec for room in a full backlog) and queues the call, which is
 * taken over (message is freed by varlink_conn_close()). Returns 0, or -errno: -EAGAIN when the
 * time ran out, anything else when there is no one listening. */
int varlink_conn_open(VarlinkConn *c, const char *address, char *message, size_t len, uint64_t timeout_usec);
/* The poll() events to wait for: POLLOUT while the call is not all out, POLLIN after. */
short varlink_conn_events(const VarlinkConn *c);
/* Writes and reads what can be without blocking. Returns 0 when more is to come, 1 when the reply is
 * complete (c->in, NUL-terminated, reply_len bytes), -ECONNRESET when the peer closed or reset
 * before it was, -EMSGSIZE when the reply passes VARLINK_PLAIN_REPLY_MAX, or another -errno. */
int varlink_conn_io(VarlinkConn *c);
void varlink_conn_close(VarlinkConn *c);

/* Where the first message of buf ends: its length without the NUL (1), or 0 when no NUL is in
 * buf yet. */
int varlink_frame_end(const char *buf, size_t len, size_t *ret_len);

typedef struct VarlinkReply {
        JsonValue *json;
        const char *error;              /* the error's name, or NULL */
        const JsonValue *parameters;    /* an object, or NULL */
} VarlinkReply;

/* A reply to a call made without "more": a JSON object whose "error", if there, is a non-empty
 * string, whose "parameters", if there, is an object, and whose "continues", if there, is false.
 * Other keys are left alone, as the protocol lets a server add them. Returns 0, or -EBADMSG,
 * -EILSEQ, -ELOOP (json_parse()) or -EPROTO with the reason in *ret_reason, or -ENOMEM. */
int varlink_reply_parse(const char *text, size_t len, VarlinkReply *ret, const char **ret_reason);
void varlink_reply_done(VarlinkReply *r);
