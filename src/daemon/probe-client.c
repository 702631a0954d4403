/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "dm-verity.h"
#include "macro.h"
#include "parse-util.h"
#include "probe-client.h"

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
                { "type", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(TargetReply, type), SD_JSON_MANDATORY },
                { "verity", SD_JSON_VARIANT_OBJECT, sd_json_dispatch_variant_noref, offsetof(TargetReply, verity), 0 },
                {}
        };
        static const sd_json_dispatch_field verity_table[] = {
                { "rootHash", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(VerityReply, root_hash), SD_JSON_MANDATORY },
                { "algorithm", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(VerityReply, algorithm), SD_JSON_MANDATORY },
                { "options", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(VerityReply, options), 0 },
                { "ignoreCorruption", SD_JSON_VARIANT_BOOLEAN, sd_json_dispatch_stdbool, offsetof(VerityReply, ignore_corruption), SD_JSON_MANDATORY },
                { "corrupted", SD_JSON_VARIANT_BOOLEAN, sd_json_dispatch_stdbool, offsetof(VerityReply, corrupted), SD_JSON_MANDATORY },
                {}
        };
        TargetReply first = {};
        VerityReply v = {};
        int r;

        t->n_targets = sd_json_variant_elements(targets);
        if (t->n_targets == 0)
                return 0;
        r = sd_json_dispatch(sd_json_variant_by_index(targets, 0), target_table, SD_JSON_ALLOW_EXTENSIONS, &first);
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
                if (strcmp(error_id, "io.modgate.Probe.DeviceChanged") == 0)
                        return probe_failed(t, ESTALE, "it is another device than the one the file is on (its diskseq "
                                            "changed: removed and made again)");
                if (strcmp(error_id, "io.modgate.Probe.NoSuchDevice") == 0)
                        return probe_failed(t, ENODEV, "it is gone");
                if (strcmp(error_id, "io.modgate.Probe.NotDeviceMapper") == 0)
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

int probe_dm_table(const char *address, Origin *o) {
        _cleanup_(sd_varlink_unrefp) sd_varlink *link = NULL;
        sd_json_variant *reply = NULL;
        const char *error_id = NULL;
        DmTable *t = &o->dm;
        int r;

        dm_table_done(t);
        r = sd_varlink_connect_address(&link, address);
        if (r < 0)
                return probe_failed(t, r, "the prober at %s cannot be reached (%s; is modgate-probe.socket "
                                    "enabled?)", address, strerrordesc_np(-r) ?: "unknown error");
        (void) sd_varlink_set_relative_timeout(link, PROBE_TIMEOUT_USEC);

        r = sd_varlink_callbo(link, "io.modgate.Probe.DescribeDevice", &reply, &error_id,
                              SD_JSON_BUILD_PAIR_UNSIGNED("major", major(o->device_dev)),
                              SD_JSON_BUILD_PAIR_UNSIGNED("minor", minor(o->device_dev)),
                              SD_JSON_BUILD_PAIR_CONDITION(o->diskseq != 0, "diskseq",
                                                           SD_JSON_BUILD_UNSIGNED(o->diskseq)));
        if (r < 0)
                return probe_failed(t, r, "the prober at %s did not answer: %s", address,
                                    strerrordesc_np(-r) ?: "unknown error");
        return probe_reply_parse(error_id, reply, t);
}
