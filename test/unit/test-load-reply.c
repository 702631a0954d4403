/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "load-reply.h"
#include "macro.h"
#include "tests.h"

static JsonValue *parse(const char *text) {
        JsonValue *v = NULL;

        check(json_parse(text, strlen(text), &v, NULL) >= 0);
        return v;
}

static LoadVerdict verdict(const char *error_id, const char *params) {
        _cleanup_(json_freep) JsonValue *v = params ? parse(params) : NULL;

        return load_verdict_from_reply(error_id, v);
}

static char *describe(const char *error_id, const char *params, size_t *n_loaded) {
        _cleanup_(json_freep) JsonValue *v = params ? parse(params) : NULL;
        char *s = NULL;

        check(load_reply_describe(error_id, v, &s, n_loaded) == 0);
        return s;
}

TEST(verdicts) {
        check(verdict(NULL, "{\"modules\":[]}") == LOAD_VERDICT_LOADED);
        check(verdict("io.modgate.Manager.ModuleNotFound", "{\"modalias\":\"pci:v1\"}") == LOAD_VERDICT_NOT_FOUND);
        check(verdict("io.modgate.Manager.ModuleNotFound", "{\"blacklisted\":[]}") == LOAD_VERDICT_NOT_FOUND);
        check(verdict("io.modgate.Manager.ModuleNotFound", "{\"blacklisted\":[\"nouveau\"]}") ==
              LOAD_VERDICT_BLACKLISTED);
        check(verdict("io.modgate.Manager.UntrustedOrigin", "{}") == LOAD_VERDICT_DENIED);
        check(verdict("io.modgate.Manager.PolicyDenied", "{}") == LOAD_VERDICT_DENIED);
        check(verdict("io.modgate.Manager.ParameterDenied", "{}") == LOAD_VERDICT_DENIED);
        check(verdict("io.modgate.Manager.InstallCommandRefused", "{}") == LOAD_VERDICT_INSTALL_REFUSED);
        check(verdict("io.modgate.Manager.Timeout", "{\"pending\":[\"a\"]}") == LOAD_VERDICT_TIMEOUT);
        check(verdict("io.modgate.Manager.LoadFailed", "{}") == LOAD_VERDICT_FAILED);
        check(verdict("io.modgate.Manager.InvalidName", "{}") == LOAD_VERDICT_INVALID);
        check(verdict("io.modgate.Manager.InvalidModalias", "{}") == LOAD_VERDICT_INVALID);
        check(verdict("io.modgate.Manager.InvalidRequest", "{}") == LOAD_VERDICT_INVALID);
        check(verdict("org.varlink.service.InvalidParameter", "{\"parameter\":\"context\"}") ==
              LOAD_VERDICT_INVALID);
        check(verdict("org.varlink.service.MethodNotFound", NULL) == LOAD_VERDICT_INVALID);
        check(verdict("io.systemd.TimedOut", NULL) == LOAD_VERDICT_NO_REPLY);
        check(verdict("io.systemd.Disconnected", NULL) == LOAD_VERDICT_UNREACHABLE);
        /* An error this client does not know is a failure, never a success. */
        check(verdict("io.modgate.Manager.SomethingNew", NULL) == LOAD_VERDICT_FAILED);
        check(verdict("io.modgate.Manager.ModuleNotFoundX", NULL) == LOAD_VERDICT_FAILED);
        check(verdict("com.example.ModuleNotFound", NULL) == LOAD_VERDICT_FAILED);
}

TEST(describe_success) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        size_t n;

        a = describe(NULL, "{\"modules\":[{\"name\":\"crc\",\"outcome\":\"already_loaded\"},"
                           "{\"name\":\"e1000e\",\"outcome\":\"loaded\"}]}", &n);
        check_streq(a, "loaded e1000e");
        check(n == 1);

        b = describe(NULL, "{\"modules\":[{\"name\":\"crc\",\"outcome\":\"loaded\"},"
                           "{\"name\":\"e1000e\",\"outcome\":\"loaded\"}],\"blacklisted\":[\"x\",\"y\"]}", &n);
        check_streq(b, "loaded crc, e1000e; blacklisted: x, y");
        check(n == 2);

        c = describe(NULL, "{\"modules\":[{\"name\":\"ext4\",\"outcome\":\"builtin\"}]}", &n);
        check_streq(c, "ext4 is built into the kernel");
        check(n == 0);

        /* The requested module, not the softdep loaded after it. */
        d = describe(NULL, "{\"modules\":[{\"name\":\"a\",\"outcome\":\"already_loaded\",\"role\":\"requested\"},"
                           "{\"name\":\"b\",\"outcome\":\"already_loaded\",\"role\":\"softdep_post\"}]}", &n);
        check_streq(d, "a is loaded already");
}

TEST(describe_errors) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL, *g = NULL;

        a = describe("io.modgate.Manager.ModuleNotFound", "{\"blacklisted\":[\"nouveau\"]}", NULL);
        check_streq(a, "every match is blacklisted in modprobe.d: nouveau");
        b = describe("io.modgate.Manager.UntrustedOrigin",
                     "{\"module\":\"dummy\",\"path\":\"/x/dummy.ko\",\"reason\":\"superblock is writable\","
                     "\"modules\":[]}", NULL);
        check_streq(b, "modgate refused dummy: superblock is writable (/x/dummy.ko)");
        c = describe("io.modgate.Manager.LoadFailed",
                     "{\"module\":\"veth\",\"reason\":\"finit_module failed\",\"errnoName\":\"ENOEXEC\"}", NULL);
        check_streq(c, "veth: finit_module failed (ENOEXEC)");
        d = describe("io.modgate.Manager.Timeout", "{\"pending\":[\"slow\",\"slower\"]}", NULL);
        check_streq(d, "still loading in modgated: slow, slower");
        e = describe("org.varlink.service.InvalidParameter", "{\"parameter\":\"context\"}", NULL);
        check_streq(e, "modgated refused the request: org.varlink.service.InvalidParameter (context)");
        f = describe("io.modgate.Manager.InstallCommandRefused",
                     "{\"module\":\"m\",\"command\":\"/bin/true\",\"modules\":[]}", NULL);
        check_streq(f, "modprobe.d has an install command for m, which modgate does not run: /bin/true");
        g = describe("io.modgate.Manager.PolicyDenied",
                     "{\"module\":\"vxlan\",\"rule\":\"/etc/modgate/modgate.conf:3 (Deny=udp_tunnel)\","
                     "\"reason\":\"vxlan needs udp_tunnel, denied by /etc/modgate/modgate.conf:3 (Deny=udp_tunnel)\"}",
                     NULL);
        check_streq(g, "the module policy denies it: vxlan needs udp_tunnel, denied by /etc/modgate/modgate.conf:3 "
                    "(Deny=udp_tunnel)");
}

TEST(daemon_timeout) {
        /* A tenth is kept back, at most two seconds. */
        check(load_daemon_timeout(60 * USEC_PER_SEC) == 45 * USEC_PER_SEC);
        check(load_daemon_timeout(15 * USEC_PER_SEC) == 11250 * USEC_PER_MSEC);
        check(load_daemon_timeout(USEC_PER_SEC) == 750 * USEC_PER_MSEC);
        check(load_daemon_timeout(USEC_INFINITY) == USEC_INFINITY);
        check(load_daemon_timeout(4) == 3);
}

TEST(timeouts) {
        uint64_t u = 0;

        check(parse_timeout("60", &u) == 0 && u == 60 * USEC_PER_SEC);
        check(parse_timeout("60s", &u) == 0 && u == 60 * USEC_PER_SEC);
        check(parse_timeout("1.5", &u) == 0 && u == 1500 * USEC_PER_MSEC);
        check(parse_timeout("500ms", &u) == 0 && u == 500 * USEC_PER_MSEC);
        check(parse_timeout("0.25s", &u) == 0 && u == 250 * USEC_PER_MSEC);
        check(parse_timeout("3600", &u) == 0 && u == 3600 * USEC_PER_SEC);
        check(parse_timeout("0", &u) == -ERANGE);
        check(parse_timeout("3601", &u) == -ERANGE);
        check(parse_timeout("99999999999999999999", &u) == -ERANGE);
        check(parse_timeout("", &u) == -EINVAL);
        check(parse_timeout("-1", &u) == -EINVAL);
        check(parse_timeout("1.", &u) == -EINVAL);
        check(parse_timeout("1min", &u) == -EINVAL);
        check(parse_timeout(" 1", &u) == -EINVAL);
}

TEST(refusal_words) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        check(load_refusal_describe(&(LoadRefusal) { .error = "io.modgate.Manager.InvalidModalias",
                                                     .reason = "modalias starts with '-'" }, &a) == 0);
        check_streq(a, "refused before asking modgated: io.modgate.Manager.InvalidModalias "
                       "(modalias starts with '-')");
        check(load_refusal_describe(&(LoadRefusal) { .error = "io.modgate.Manager.InvalidName" }, &b) == 0);
        check_streq(b, "refused before asking modgated: io.modgate.Manager.InvalidName");
        check(load_refusal_describe(&(LoadRefusal) { .error = "org.varlink.service.InvalidParameter",
                                                     .field = "context" }, &c) == 0);
        check_streq(c, "refused before asking modgated: org.varlink.service.InvalidParameter (context)");
}

int main(void) {
        RUN(verdicts);
        RUN(describe_success);
        RUN(describe_errors);
        RUN(daemon_timeout);
        RUN(timeouts);
        RUN(refusal_words);
        return tests_done();
}
