/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What modgate-udev reads from its socket: the bytes of modgated's answer as they arrive, read up to
 * the NUL that ends the message (varlink-plain.c), parsed strictly into a reply, and turned into a
 * verdict and a line for the log (load-reply.c). Whatever arrives, the reader ends at the first NUL
 * or at the end with -ECONNRESET, a reply it takes is a JSON object whose error is a name and whose
 * parameters are an object, and every string it decoded writes back as JSON and reads the same. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "load-reply.h"
#include "varlink-plain.h"

/* Feeds data through a socket to the reader, as modgated's answer would come. */
static int read_through_socket(const uint8_t *data, size_t size, VarlinkConn *c) {
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        *c = (VarlinkConn) { .fd = sv[0] };
        for (size_t done = 0; done < size;) {
                ssize_t k = send(sv[1], data + done, size - done, MSG_NOSIGNAL);

                if (k <= 0)
                        abort();
                done += (size_t) k;
        }
        (void) close(sv[1]);
        do
                r = varlink_conn_io(c);
        while (r == 0);
        return r;
}

static void check_roundtrip(const char *s) {
        _cleanup_(json_freep) JsonValue *back = NULL;
        _cleanup_free_ char *text = NULL;
        JsonWriter w = {};
        size_t len;

        json_write_string(&w, s);
        fuzz_assert(json_writer_finish(&w, &text, &len) == 0);
        fuzz_assert(json_parse(text, len, &back, NULL) == 0);
        fuzz_assert(streq_ptr(json_string(back), s));
}

static void check_strings(const JsonValue *v) {
        if (v->type == JSON_STRING)
                check_roundtrip(v->text);
        for (size_t i = 0; i < v->n; i++) {
                if (v->keys)
                        check_roundtrip(v->keys[i]);
                check_strings(v->items + i);
        }
}

static void check_reply(const char *text, size_t len) {
        _cleanup_(varlink_reply_done) VarlinkReply reply = {};
        LoadResult res = {};
        const char *reason = NULL;
        int r;

        r = varlink_reply_parse(text, len, &reply, &reason);
        if (r < 0) {
                fuzz_assert(r == -EBADMSG || r == -EILSEQ || r == -ELOOP || r == -EPROTO || r == -ENOMEM);
                fuzz_assert(r == -ENOMEM || (reason && *reason));
                return;
        }
        fuzz_assert(json_is_object(reply.json));
        fuzz_assert(!reply.error || *reply.error);
        fuzz_assert(!reply.parameters || json_is_object(reply.parameters));
        check_strings(reply.json);

        r = load_result_from_reply(&res, reply.error, reply.parameters);
        fuzz_assert(r == 0 || r == -ENOMEM);
        if (r == 0) {
                fuzz_assert(res.detail && *res.detail);
                fuzz_assert((res.verdict == LOAD_VERDICT_LOADED) == !reply.error);
                fuzz_assert(streq_ptr(res.error_id, reply.error));
        }
        load_result_done(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        VarlinkConn c;
        const char *nul;
        int r;

        if (size > 256 * 1024)
                return 0;

        r = read_through_socket(data, size, &c);
        nul = memchr(data, 0, size);
        if (!nul)
                fuzz_assert(r == -ECONNRESET);
        else {
                fuzz_assert(r == 1 && c.reply_len == (size_t) (nul - (const char *) data));
                fuzz_assert(c.in[c.reply_len] == '\0');
                check_reply(c.in, c.reply_len);
        }
        varlink_conn_close(&c);
        return 0;
}
