/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "dm-verity.h"
#include "fileio.h"
#include "macro.h"
#include "parse-util.h"
#include "probe-client.h"
#include "varlink-errors.h"

#define PROBE_TIMEOUT_USEC (10 * USEC_PER_SEC)

static int probe_failed(DmTable *t, int error, const char *fmt, ...) _printf_(3, 4);
static int probe_failed(DmTable *t, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        t->error = -abs(error);
        free(t->error_detail);
        va_start(ap, fmt);
        r = vasprintf(&t->error_detail, fmt, ap);
        va_end(ap);
        if (r < 0) {
                t->error_detail = NULL;
                return -ENOMEM;
        }
        return 0;
}

typedef struct VerityReply {
        const char *root_hash;
        const char *algorithm;
        const char *options;
        bool ignore_corruption;
        bool corrupted;
} VerityReply;

typedef struct TargetReply {
        const char *type;
        sd_json_variant *verity;
} TargetReply;

static int copy_string(char *buf, size_t size, const char *s) {
        if (!s || strlen(s) >= size)
                return -EBADMSG;
        memcpy(buf, s, strlen(s) + 1);
        return 0;
}

static int parse_targets(sd_json_variant *targets, DmTable *t) {
        static const sd_json_dispatch_field target_table[] = {
                { "type", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(TargetReply, type),
                  SD_JSON_MANDATORY },
                { "verity", SD_JSON_VARIANT_OBJECT, sd_json_dispatch_variant_noref,
                  offsetof(TargetReply, verity), 0 },
                {}
        };
        static const sd_json_dispatch_field verity_table[] = {
                { "rootHash", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(VerityReply, root_hash), SD_JSON_MANDATORY },
                { "algorithm", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(VerityReply, algorithm), SD_JSON_MANDATORY },
                { "options", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(VerityReply, options), 0 },
                { "ignoreCorruption", SD_JSON_VARIANT_BOOLEAN, sd_json_dispatch_stdbool,
                  offsetof(VerityReply, ignore_corruption), SD_JSON_MANDATORY },
                { "corrupted", SD_JSON_VARIANT_BOOLEAN, sd_json_dispatch_stdbool,
                  offsetof(VerityReply, corrupted), SD_JSON_MANDATORY },
                {}
        };
        TargetReply first = {};
        VerityReply v = {};
        int r;

        t->n_targets = sd_json_variant_elements(targets);
        if (t->n_targets == 0)
                return 0;
        r = sd_json_dispatch(sd_json_variant_by_index(targets, 0), target_table, SD_JSON_ALLOW_EXTENSIONS,
                             &first);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || copy_string(t->target, sizeof(t->target), first.type) < 0)
                return -EBADMSG;
        if (strcmp(first.type, "verity") != 0)
                return 0;
        if (!first.verity)
                return -EBADMSG;
        r = sd_json_dispatch(first.verity, verity_table, SD_JSON_ALLOW_EXTENSIONS, &v);
        if (r == -ENOMEM)
                return r;
        /* As the prober read them from the kernel's table: anything else is a malformed answer. */
        if (r < 0 || !dm_verity_root_hash_is_valid(v.root_hash) || !v.algorithm[0] ||
            copy_string(t->root_hash, sizeof(t->root_hash), v.root_hash) < 0 ||
            copy_string(t->algorithm, sizeof(t->algorithm), v.algorithm) < 0)
                return -EBADMSG;
        if (v.options) {
                t->options = strdup(v.options);
                if (!t->options)
                        return -ENOMEM;
        }
        t->ignore_corruption = v.ignore_corruption;
        t->corrupted = v.corrupted;
        return 0;
}

int probe_reply_parse(const char *error_id, sd_json_variant *reply, DmTable *t) {
        sd_json_variant *targets;
        const char *s;
        int r;

        if (error_id) {
                if (strcmp(error_id, PROBE_ERROR_DEVICE_CHANGED) == 0)
                        return probe_failed(t, ESTALE,
                                            "it is another device than the one the file is on (its diskseq "
                                            "changed: removed and made again)");
                if (strcmp(error_id, PROBE_ERROR_NO_SUCH_DEVICE) == 0)
                        return probe_failed(t, ENODEV, "it is gone");
                if (strcmp(error_id, PROBE_ERROR_NOT_DEVICE_MAPPER) == 0)
                        return probe_failed(t, ENODEV, "the prober says it is not a device-mapper device");
                s = sd_json_variant_string(sd_json_variant_by_key(reply, "reason"));
                return probe_failed(t, EIO, "the prober answered %s%s%s", error_id, s ? ": " : "", s ?: "");
        }

        s = sd_json_variant_string(sd_json_variant_by_key(reply, "name"));
        if (s)
                snprintf(t->name, sizeof(t->name), "%s", s);
        s = sd_json_variant_string(sd_json_variant_by_key(reply, "uuid"));
        if (s)
                snprintf(t->uuid, sizeof(t->uuid), "%s", s);
        targets = sd_json_variant_by_key(reply, "targets");
        r = targets && sd_json_variant_is_array(targets) ? parse_targets(targets, t) : -EBADMSG;
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                dm_table_done(t);
                return probe_failed(t, EBADMSG, "the prober's answer is malformed");
        }
        return 0;
}

const char *probe_expected_cgroup(void) {
        const char *e = getenv("MODGATE_PROBE_CGROUP");

        return e && e[0] == '/' ? e : PROBE_CGROUP;
}

const char *probe_peer_failure(uid_t uid, const char *cgroups, const char *expected, char *buf,
                               size_t size) {
        const char *line = NULL;
        size_t n;

        if (uid != 0) {
                snprintf(buf, size, "it is uid %u, not root", (unsigned) uid);
                return buf;
        }
        /* The unified hierarchy's line, "0::PATH": the only one systemd places units by. */
        for (const char *p = cgroups; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "0::", 3) == 0) {
                        line = p + 3;
                        break;
                }
        if (!line) {
                snprintf(buf, size, "its cgroup in the unified hierarchy cannot be read");
                return buf;
        }
        n = strcspn(line, "\n");
        if (n == strlen(expected) && strncmp(line, expected, n) == 0)
                return NULL;
        snprintf(buf, size, "it runs in cgroup %.*s, not %s", (int) MIN(n, (size_t) 200), line, expected);
        return buf;
}

/* Who wrote the first bytes waiting on fd: SCM_CREDENTIALS, which the kernel fills in with the
 * writer's own pid and uid (a lie needs CAP_SYS_ADMIN), unlike SO_PEERCRED, which names whoever
 * called listen(): PID 1 for a socket unit, whatever process now accepts on it. */
static int peek_writer(int fd, struct ucred *ret) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(struct ucred))];
        } control = {};
        char c;
        struct iovec iov = { .iov_base = &c, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        struct cmsghdr *cmsg;
        ssize_t n;
        int r;

        r = poll(&pfd, 1, (int) (PROBE_TIMEOUT_USEC / 1000));
        if (r < 0)
                return negative_errno();
        if (r == 0)
                return -ETIMEDOUT;
        n = recvmsg(fd, &mh, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return negative_errno();
        if (n == 0)
                return -ECONNRESET;
        for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg))
                if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS &&
                    cmsg->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
                        memcpy(ret, CMSG_DATA(cmsg), sizeof(*ret));
                        return 0;
                }
        return -ENODATA;
}

/* Whether the process that answers on fd is the prober's unit's (0); else 1, and failure says who. */
static int check_writer(int fd, char *failure, size_t size) {
        char path[64], cgroups[4096];
        struct ucred cred = {};
        int r;

        r = peek_writer(fd, &cred);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) cred.pid);
        r = read_small_file_at(AT_FDCWD, path, cgroups, sizeof(cgroups));
        if (r < 0)
                cgroups[0] = '\0';
        if (probe_peer_failure(cred.uid, cgroups, probe_expected_cgroup(), failure, size)) {
                char who[32];

                /* The pid after the reason: "process 1234: it runs in cgroup ..." */
                snprintf(who, sizeof(who), "process %d: ", (int) cred.pid);
                if (strlen(who) + strlen(failure) < size) {
                        memmove(failure + strlen(who), failure, strlen(failure) + 1);
                        memcpy(failure, who, strlen(who));
                }
                return 1;
        }
        return 0;
}

typedef struct LoopReply {
        unsigned major;
        unsigned minor;
        uint64_t inode;
        uint64_t diskseq;
} LoopReply;

/* The loop layer o's backing file is not identified: why, in words. Returns 0 or -ENOMEM. */
static int set_unknown(Origin *o, const char *fmt, ...) _printf_(2, 3);
static int set_unknown(Origin *o, const char *fmt, ...) {
        va_list ap;
        int r;

        free(o->backing_unknown);
        va_start(ap, fmt);
        r = vasprintf(&o->backing_unknown, fmt, ap);
        va_end(ap);
        if (r < 0) {
                o->backing_unknown = NULL;
                return -ENOMEM;
        }
        return 0;
}

typedef struct ProbeCall {
        bool done;
        char *error_id;
        sd_json_variant *reply;
} ProbeCall;

static int probe_reply(sd_varlink *link, sd_json_variant *parameters, const char *error_id,
                       sd_varlink_reply_flags_t flags, void *userdata) {
        ProbeCall *c = userdata;

        c->done = true;
        c->reply = sd_json_variant_ref(parameters);
        if (error_id) {
                c->error_id = strdup(error_id);
                if (!c->error_id)
                        return -ENOMEM;
        }
        return 0;
}

/* One call to the prober at address, believed only from the prober's process. Returns 0 with the
 * answer (an error id, or NULL, and the parameters) in c; or -errno, with what went wrong in words in
 * ret_failure, or -ENOMEM. */
static int probe_call(const char *address, const char *method, sd_json_variant *parameters, ProbeCall *c,
                      char **ret_failure) {
        _cleanup_(sd_varlink_unrefp) sd_varlink *link = NULL;
        char failure[512];
        int r, fd, one = 1;

        r = sd_varlink_connect_address(&link, address);
        if (r < 0) {
                if (asprintf(ret_failure, "the prober at %s cannot be reached (%s; is modgate-probe.socket "
                             "enabled?)", address, strerrordesc_np(-r) ?: "unknown error") < 0)
                        return -ENOMEM;
                return r;
        }
        (void) sd_varlink_set_relative_timeout(link, PROBE_TIMEOUT_USEC);
        sd_varlink_set_userdata(link, c);
        fd = sd_varlink_get_fd(link);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
            sd_varlink_bind_reply(link, probe_reply) < 0) {
                if (asprintf(ret_failure, "the connection to the prober at %s cannot be set up", address) <
                    0)
                        return -ENOMEM;
                return -EIO;
        }

        r = sd_varlink_invoke(link, method, parameters);
        if (r >= 0)
                r = sd_varlink_flush(link);
        /* Before a byte of the answer is believed: who wrote it. Anyone who may bind in /run (a root
         * process without CAP_SYS_MODULE) could have put its own socket at this path. */
        if (r >= 0)
                r = check_writer(fd, failure, sizeof(failure));
        if (r > 0) {
                if (asprintf(ret_failure, "the answer on %s is not from the prober, so not believed (%s)",
                             address, failure) < 0)
                        return -ENOMEM;
                return -EPERM;
        }
        /* A disconnect or the timeout comes to probe_reply() as an error of sd-varlink's own. */
        while (r >= 0 && !c->done) {
                r = sd_varlink_process(link);
                if (r == 0)
                        r = sd_varlink_wait(link, UINT64_MAX);
        }
        if (r < 0 && !c->done) {
                if (asprintf(ret_failure, "the prober at %s did not answer: %s", address,
                             strerrordesc_np(-r) ?: "unknown error") < 0)
                        return -ENOMEM;
                return r;
        }
        return 0;
}

static void probe_call_done(ProbeCall *c) {
        free(c->error_id);
        sd_json_variant_unref(c->reply);
        *c = (ProbeCall) {};
}

int probe_dm_table(const char *address, Origin *o) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *parameters = NULL;
        _cleanup_free_ char *failure = NULL;
        ProbeCall c = {};
        DmTable *t = &o->dm;
        int r;

        dm_table_done(t);
        r = sd_json_buildo(&parameters, SD_JSON_BUILD_PAIR_UNSIGNED("major", major(o->device_dev)),
                           SD_JSON_BUILD_PAIR_UNSIGNED("minor", minor(o->device_dev)),
                           SD_JSON_BUILD_PAIR_CONDITION(o->diskseq != 0, "diskseq",
                                                        SD_JSON_BUILD_UNSIGNED(o->diskseq)));
        if (r < 0)
                return r;
        r = probe_call(address, "io.modgate.Probe.DescribeDevice", parameters, &c, &failure);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return probe_failed(t, r, "%s", failure);
        r = probe_reply_parse(c.error_id, c.reply, t);
        probe_call_done(&c);
        return r;
}

int probe_loop_reply_parse(const char *error_id, sd_json_variant *reply, Origin *o) {
        static const sd_json_dispatch_field table[] = {
                { "backingMajor", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint,
                  offsetof(LoopReply, major), SD_JSON_MANDATORY },
                { "backingMinor", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint,
                  offsetof(LoopReply, minor), SD_JSON_MANDATORY },
                { "backingInode", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint64,
                  offsetof(LoopReply, inode), SD_JSON_MANDATORY },
                { "diskseq", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint64,
                  offsetof(LoopReply, diskseq), 0 },
                {}
        };
        LoopReply l = {};
        const char *why;
        int r;

        if (error_id) {
                const char *s = sd_json_variant_string(sd_json_variant_by_key(reply, "reason"));

                if (strcmp(error_id, PROBE_ERROR_DEVICE_CHANGED) == 0)
                        why = "the prober says it is another loop device than the one the file system is on "
                              "(its "
                              "diskseq changed: detached and bound again)";
                else if (strcmp(error_id, PROBE_ERROR_NO_SUCH_DEVICE) == 0)
                        why = "the prober says it is gone";
                else if (strcmp(error_id, PROBE_ERROR_NOT_LOOP) == 0)
                        why = "the prober says it is not a loop device, or reads no file";
                else
                        return set_unknown(o, "the prober answered %s%s%s", error_id, s ? ": " : "",
                                           s ?: "");
                return set_unknown(o, "%s", why);
        }
        r = sd_json_dispatch(reply, table, SD_JSON_ALLOW_EXTENSIONS, &l);
        if (r == -ENOMEM)
                return r;
        /* The answer is about the instance asked for, or it is not believed. */
        if (r < 0 || (o->loop_diskseq != 0 && l.diskseq != o->loop_diskseq))
                return set_unknown(o, "the prober's answer is malformed");
        o->backing_dev = makedev(l.major, l.minor);
        o->backing_ino = (ino_t) l.inode;
        o->backing_known = true;
        return 0;
}

int probe_loop_backing(const char *address, Origin *o) {
        for (; o; o = o->below) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *parameters = NULL;
                _cleanup_free_ char *failure = NULL;
                ProbeCall c = {};
                int r;

                if (!origin_loop_needs_probe(o))
                        continue;
                r = sd_json_buildo(&parameters,
                                   SD_JSON_BUILD_PAIR_UNSIGNED("major", major(o->loop_dev)),
                                   SD_JSON_BUILD_PAIR_UNSIGNED("minor", minor(o->loop_dev)),
                                   SD_JSON_BUILD_PAIR_CONDITION(o->loop_diskseq != 0, "diskseq",
                                                                SD_JSON_BUILD_UNSIGNED(o->loop_diskseq)));
                if (r < 0)
                        return r;
                r = probe_call(address, "io.modgate.Probe.DescribeLoop", parameters, &c, &failure);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        r = set_unknown(o, "%s", failure);
                else
                        r = probe_loop_reply_parse(c.error_id, c.reply, o);
                probe_call_done(&c);
                if (r < 0)
                        return r;
        }
        return 0;
}
