/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The plain client's JSON writer and strict reader, its varlink reply, and the call it makes
 * (src/client/json-plain.c, varlink-plain.c, load-plain.c). */

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "json-plain.h"
#include "load-plain.h"
#include "macro.h"
#include "tests.h"
#include "varlink-plain.h"

#if defined(__SANITIZE_ADDRESS__)
#  define SANITIZED 1
#elif defined(__has_feature)
#  define SANITIZED __has_feature(address_sanitizer)
#else
#  define SANITIZED 0
#endif

static char *written(const char *s, int *ret_error) {
        JsonWriter w = {};
        char *text = NULL;

        json_write_string(&w, s);
        *ret_error = json_writer_finish(&w, &text, NULL);
        return text;
}

TEST(writer_escapes) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "plain", "\"plain\"" },
                { "q\"b\\s/", "\"q\\\"b\\\\s/\"" },
                { "\n\t\r\b\f\x01\x1f\x7f", "\"\\u000a\\u0009\\u000d\\u0008\\u000c\\u0001\\u001f\\u007f\"" },
                { "caf\xc3\xa9 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"" },     /* UTF-8 passes */
                { "", "\"\"" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = NULL;
                int r;

                s = written(cases[i].in, &r);
                check(r == 0);
                check_streq(s, cases[i].out);
        }
}

TEST(writer_refuses_invalid_utf8) {
        static const char *const bad[] = {
                "caf\xe9",              /* Latin-1 */
                "\xc0\xaf",             /* overlong '/' */
                "\xed\xa0\x80",         /* a surrogate */
                "\xf4\x90\x80\x80",     /* past U+10FFFF */
                "\xe2\x82",             /* cut short */
                "\x80",                 /* a lone continuation byte */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r;

                check(!written(bad[i], &r));
                check(r == -EILSEQ);
        }
}

TEST(writer_structure) {
        _cleanup_free_ char *text = NULL;
        JsonWriter w = {};
        size_t len;

        json_write_open(&w, '{');
        json_write_key(&w, "a");
        json_write_unsigned(&w, UINT64_MAX);
        json_write_key(&w, "b");
        json_write_open(&w, '[');
        json_write_string(&w, "x");
        json_write_string(&w, "y");
        json_write_close(&w, ']');
        json_write_key(&w, "c");
        json_write_open(&w, '{');
        json_write_close(&w, '}');
        json_write_close(&w, '}');
        check(json_writer_finish(&w, &text, &len) == 0);
        check_streq(text, "{\"a\":18446744073709551615,\"b\":[\"x\",\"y\"],\"c\":{}}");
        check(len == strlen(text));
}

static int parsed(const char *text, const char **ret_reason) {
        _cleanup_(json_freep) JsonValue *v = NULL;

        *ret_reason = NULL;
        return json_parse(text, strlen(text), &v, ret_reason);
}

TEST(parser_accepts) {
        static const char *const good[] = {
                "{}", "[]", " {\"a\" : [1, -0.5e+10, true, false, null, \"s\"]}\n", "\"\\u00e9\\ud83d\\ude00\"",
                "0", "-0", "1E5", "{\"a\":{\"b\":{}}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                const char *reason;

                check(parsed(good[i], &reason) == 0);
        }
}

TEST(parser_refuses) {
        static const struct {
                const char *text;
                int error;
        } bad[] = {
                { "", -EBADMSG },
                { "{} x", -EBADMSG },           /* trailing bytes */
                { "{}{}", -EBADMSG },
                { "{\"a\":1,}", -EBADMSG },     /* trailing comma */
                { "[1,]", -EBADMSG },
                { "{a:1}", -EBADMSG },
                { "\"\\x\"", -EBADMSG },        /* bad escape */
                { "\"\\u12g4\"", -EBADMSG },
                { "\"\\ud800\"", -EBADMSG },    /* lone surrogate */
                { "\"\\udc00\\ud800\"", -EBADMSG },
                { "\"\\u0000\"", -EBADMSG },    /* not in a C string */
                { "\"tab\there\"", -EBADMSG },  /* raw control character */
                { "\"unterminated", -EBADMSG },
                { "01", -EBADMSG },
                { "1.", -EBADMSG },
                { "-", -EBADMSG },
                { "tru", -EBADMSG },
                { "nul", -EBADMSG },
                { "\"\xc3\x28\"", -EILSEQ },
                { "\"\xed\xa0\x80\"", -EILSEQ },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                const char *reason;

                check(parsed(bad[i].text, &reason) == bad[i].error);
                check(reason && *reason);
        }
}

TEST(parser_depth) {
        char deep[2 * (JSON_DEPTH_MAX + 1) + 1] = {};
        const char *reason;

        memset(deep, '[', JSON_DEPTH_MAX);
        memset(deep + JSON_DEPTH_MAX, ']', JSON_DEPTH_MAX);
        check(parsed(deep, &reason) == 0);

        memset(deep, '[', JSON_DEPTH_MAX + 1);
        memset(deep + JSON_DEPTH_MAX + 1, ']', JSON_DEPTH_MAX + 1);
        check(parsed(deep, &reason) == -ELOOP);
        check_streq(reason, "nested too deeply");
}

/* A reply near the size cap made of many small strings: each costs its own size, not the rest of
 * the input's (with which 100,000 strings in half a MiB asked for tens of GiB). */
TEST(parser_many_strings) {
        _cleanup_(json_freep) JsonValue *v = NULL;
        size_t n = 100000, len = 0;
        _cleanup_free_ char *text = malloc(n * 5 + 2);
        int r;

        check(text);
        text[len++] = '[';
        for (size_t i = 0; i < n; i++)
                len += (size_t) sprintf(text + len, "%s\"a\"", i > 0 ? "," : "");
        text[len++] = ']';
        /* Untouched allocations cost no memory: only a cap on the address space shows them. The
         * sanitizers reserve terabytes of it for themselves. */
#if !SANITIZED
        struct rlimit old, cap;

        check(getrlimit(RLIMIT_AS, &old) == 0);
        cap = (struct rlimit) { .rlim_cur = 1024UL * 1024 * 1024, .rlim_max = old.rlim_max };
        check(setrlimit(RLIMIT_AS, &cap) == 0);
#endif
        r = json_parse(text, len, &v, NULL);
#if !SANITIZED
        check(setrlimit(RLIMIT_AS, &old) == 0);
#endif
        check(r == 0);
        check(json_elements(v) == n);
        check_streq(json_string(json_by_index(v, n - 1)), "a");
}

TEST(parser_tree) {
        _cleanup_(json_freep) JsonValue *v = NULL;
        const char *text = "{\"s\":\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\",\"n\":-12.5,\"a\":[\"x\",{\"k\":true}],\"s\":\"last\"}";

        check(json_parse(text, strlen(text), &v, NULL) == 0);
        check_streq(json_string(json_by_key(v, "s")), "last");  /* a key twice: the last counts */
        check_streq(v->items[0].text, "a\"\\/\b\f\n\r\t\xc3\xa9");
        check(json_by_key(v, "n")->type == JSON_NUMBER);
        check_streq(json_by_key(v, "n")->text, "-12.5");
        check(json_elements(json_by_key(v, "a")) == 2);
        check_streq(json_string(json_by_index(json_by_key(v, "a"), 0)), "x");
        check(json_by_key(json_by_index(json_by_key(v, "a"), 1), "k")->boolean);
        check(!json_by_index(json_by_key(v, "a"), 2));
        check(!json_by_key(json_by_key(v, "a"), "x"));          /* an array has no keys */
        check(!json_string(json_by_key(v, "n")));
        check(json_elements(v) == 0);                           /* an object is no array */
}

TEST(reply) {
        static const struct {
                const char *text;
                int error;
                const char *error_id;
        } cases[] = {
                { "{\"parameters\":{\"modules\":[]}}", 0, NULL },
                { "{\"error\":\"io.modgate.Manager.Busy\",\"parameters\":{}}", 0, "io.modgate.Manager.Busy" },
                { "{\"error\":\"io.modgate.Manager.Busy\"}", 0, "io.modgate.Manager.Busy" },
                { "{\"parameters\":{},\"continues\":false}", 0, NULL },
                { "{\"parameters\":{},\"continues\":true}", -EPROTO, NULL },
                { "[]", -EPROTO, NULL },
                { "{\"error\":\"\"}", -EPROTO, NULL },
                { "{\"error\":7}", -EPROTO, NULL },
                { "{\"parameters\":[]}", -EPROTO, NULL },
                { "{\"parameters\":{}} garbage", -EBADMSG, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(varlink_reply_done) VarlinkReply reply = {};
                const char *reason = NULL;

                check(varlink_reply_parse(cases[i].text, strlen(cases[i].text), &reply, &reason) == cases[i].error);
                if (cases[i].error == 0)
                        check(streq_ptr(reply.error, cases[i].error_id));
                else
                        check(reason && *reason);
        }
}

TEST(frame) {
        size_t len = 0;

        check(varlink_frame_end("{}", 2, &len) == 0);
        check(varlink_frame_end("{}\0{\"a\":1}\0", 11, &len) == 1 && len == 2);
        check(varlink_frame_end("\0", 1, &len) == 1 && len == 0);
}

/* The call every helper sends: Load's parameters, in JSON. */
TEST(message) {
        const RequestContext ctx = {
                .source = SOURCE_UDEV,
                .devpath = "/devices/pci0000:00/0000:00:03.0 \"q\"",
                .subsystem = "pci",
                .action = "add",
                .seqnum = 4711,
        };
        _cleanup_free_ char *a = NULL, *b = NULL;
        LoadRefusal refusal = {};
        size_t len;

        check(plain_request_message(&(PlainRequest) { .modalias = "pci:v00008086d0000100E", .context = &ctx },
                                    45000000, &a, &len, &refusal) == 0);
        check_streq(a, "{\"method\":\"io.modgate.Manager.Load\",\"parameters\":{\"modalias\":\"pci:v00008086d0000100E\","
                       "\"context\":{\"source\":\"udev\",\"devpath\":\"/devices/pci0000:00/0000:00:03.0 \\\"q\\\"\","
                       "\"subsystem\":\"pci\",\"action\":\"add\",\"seqnum\":4711},\"timeoutUSec\":45000000}}");
        check(len == strlen(a));
        check(plain_request_message(&(PlainRequest) { .name = "e1000" }, USEC_INFINITY, &b, &len, &refusal) == 0);
        check_streq(b, "{\"method\":\"io.modgate.Manager.Load\",\"parameters\":{\"name\":\"e1000\"}}");
}

/* What the daemon would refuse is refused here with its error, and not sent. */
TEST(message_refused) {
        const RequestContext bad_ctx = { .source = SOURCE_UDEV, .devpath = "/x\n", .seqnum = -1 };
        static const struct {
                PlainRequest req;
                const char *error, *reason;
        } cases[] = {
                { { .name = "a name with spaces" }, "io.modgate.Manager.InvalidName", NULL },
                { { .name = "caf\xe9" }, "io.modgate.Manager.InvalidName", "not UTF-8" },
                { { .modalias = "pci:v\xff" }, "io.modgate.Manager.InvalidModalias", "not UTF-8" },
                { { .modalias = "pci:v1 pci:v2" }, "io.modgate.Manager.InvalidModalias",
                  "modalias contains a space, a control character or a non-ASCII byte" },
                { {}, "io.modgate.Manager.InvalidRequest", "give exactly one of name, modalias and path" },
        };
        _cleanup_free_ char *text = NULL;
        LoadRefusal refusal = {};
        size_t len;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                check(plain_request_message(&cases[i].req, USEC_INFINITY, &text, &len, &refusal) == 1);
                check(!text);
                check_streq(refusal.error, cases[i].error);
                check(streq_ptr(refusal.reason, cases[i].reason));
        }
        check(plain_request_message(&(PlainRequest) { .name = "ok", .context = &bad_ctx }, USEC_INFINITY, &text,
                                    &len, &refusal) == 1);
        check_streq(refusal.error, "io.modgate.Manager.InvalidRequest");
}

/* A request the daemon would refuse is answered without a connection: the address leads nowhere,
 * and only the valid requests find that out; one bad request does not stop the others. */
TEST(run_unsent) {
        PlainRequest reqs[] = {
                { .name = "ok_name" },
                { .name = "caf\xe9" },
                { .modalias = "pci:v1 pci:v2" },
                { .name = "other" },
        };
        const PlainOptions o = { .address = "/nonexistent/modgate.sock", .timeout_usec = USEC_PER_SEC,
                                 .max_parallel = 2 };
        static const LoadVerdict expect[] = {
                LOAD_VERDICT_UNREACHABLE, LOAD_VERDICT_INVALID, LOAD_VERDICT_INVALID, LOAD_VERDICT_UNREACHABLE,
        };

        check(plain_requests_run(&o, reqs, ELEMENTSOF(reqs)) == 0);
        for (size_t i = 0; i < ELEMENTSOF(reqs); i++)
                check(reqs[i].result.verdict == expect[i] && reqs[i].result.detail);
        check(reqs[0].result.error == -ENOENT);
        check_streq(reqs[0].result.detail, "could not connect to modgated");
        check_streq(reqs[1].result.detail, "refused before asking modgated: io.modgate.Manager.InvalidName (not UTF-8)");
        plain_requests_done(reqs, ELEMENTSOF(reqs));
}

int main(void) {
        RUN(writer_escapes);
        RUN(writer_refuses_invalid_utf8);
        RUN(writer_structure);
        RUN(parser_accepts);
        RUN(parser_refuses);
        RUN(parser_depth);
        RUN(parser_many_strings);
        RUN(parser_tree);
        RUN(reply);
        RUN(frame);
        RUN(message);
        RUN(message_refused);
        RUN(run_unsent);
        return tests_done();
}
