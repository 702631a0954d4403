/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "ctl-error.h"
#include "ctl-link.h"
#include "ctl-output.h"
#include "ctl-pager.h"
#include "ctl-table.h"
#include "ctl.h"
#include "log.h"
#include "module-name.h"
#include "varlink-errors.h"

/* list and describe: this boot's record of each module (List, Describe). */

static bool matches(const char *name, char **patterns, size_t n) {
        if (n == 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (name && fnmatch(patterns[i], name, 0) == 0)
                        return true;
        return false;
}

static int table_add_record(Table *t, sd_json_variant *m) {
        const char *outcome = json_str(m, "outcome");
        char ts[TIMESTAMP_MAX] = "-";
        int64_t time;
        int r;

        if (json_int(m, "time", &time) && time > 0)
                format_timestamp_short(ts, (uint64_t) time);
        r = table_add(t, json_str(m, "module"), NULL);
        if (r >= 0)
                r = table_add(t, outcome, outcome_color(outcome));
        if (r >= 0)
                r = table_add(t, json_str(m, "source"), NULL);
        if (r >= 0)
                r = table_add(t, json_str(m, "evidence"), NULL);
        if (r >= 0)
                r = table_add(t, json_str(m, "signer"), NULL);
        if (r >= 0)
                r = table_add(t, ts, NULL);
        return r;
}

int verb_list(char **args, size_t n) {
        static const char *const headers[] = { "MODULE", "OUTCOME", "SOURCE", "EVIDENCE", "SIGNER", "TIME" };
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        _cleanup_(table_freep) Table *t = table_new(ELEMENTSOF(headers), headers);
        sd_json_variant *reply = NULL, *modules;
        int r;

        if (!t)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        r = ctl_call_simple("list", "io.modgate.Manager.List", &vl, &reply);
        if (r < 0)
                return r;

        pager_open();
        if (json_output()) {
                json_dump(reply);
                return 0;
        }
        modules = sd_json_variant_by_key(reply, "modules");
        for (size_t i = 0;
             modules && sd_json_variant_is_array(modules) && i < sd_json_variant_elements(modules); i++) {
                sd_json_variant *m = sd_json_variant_by_index(modules, i);

                if (!matches(json_str(m, "module"), args, n))
                        continue;
                if (table_add_record(t, m) < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        }
        if (table_rows(t) > 0)
                table_print(t, stdout, arg_legend);
        if (arg_legend)
                printf("%s%zu module%s listed.\n", table_rows(t) > 0 ? "\n" : "", table_rows(t),
                       table_rows(t) == 1 ? "" : "s");
        return 0;
}

/* "VALUE (NOTE)", or VALUE alone, or NULL: for the fields that carry a second one. */
static void print_field_noted(const char *key, const char *value, const char *note) {
        if (value && note)
                print_fieldf(key, "%s (%s)", value, note);
        else
                print_field(key, value ?: note);
}

static void print_request(sd_json_variant *m) {
        _cleanup_free_ char *hardware = NULL;

        if (json_str(m, "requestName"))
                print_field("Request", json_str(m, "requestName"));
        else if (json_str(m, "modalias"))
                print_fieldf("Request", "modalias %s", json_str(m, "modalias"));
        print_field("Alias", json_str(m, "alias"));
        print_field("Required by", json_str(m, "requiredBy"));
        if (json_str(m, "deviceVendor") || json_str(m, "deviceModel"))
                if (asprintf(&hardware, "%s%s%s", json_str(m, "deviceVendor") ?: "",
                             json_str(m, "deviceVendor") && json_str(m, "deviceModel") ? " " : "",
                             json_str(m, "deviceModel") ?: "") < 0)
                        hardware = NULL;
        print_field_noted("Device", json_str(m, "devpath"), hardware);
}

static void print_caller(sd_json_variant *m) {
        const char *command = json_str(m, "peerCommand"), *unit = json_str(m, "peerUnit");
        int64_t pid, uid;
        bool has_pid = json_int(m, "peerPid", &pid), has_uid = json_int(m, "peerUid", &uid);

        if (!has_pid && !has_uid && !unit)
                return;
        printf("%*s: ", FIELD_WIDTH, "Caller");
        if (has_pid)
                printf("pid %" PRIi64 "%s%s%s%s", pid, command ? " (" : "", command ?: "",
                       command ? ")" : "", has_uid || unit ? ", " : "");
        if (has_uid)
                printf("uid %" PRIi64 "%s", uid, unit ? ", " : "");
        if (unit)
                printf("unit %s", unit);
        fputc('\n', stdout);
}

static void print_file(sd_json_variant *m) {
        const char *signer = json_str(m, "signer"), *key = json_str(m, "signatureKey");
        int64_t inode;

        print_field("File", json_str(m, "path"));
        if (json_int(m, "inode", &inode))
                print_fieldf("Inode", "%" PRIi64 " on %s", inode, json_str(m, "device") ?: "?");
        print_field("Evidence", json_str(m, "evidence"));
        print_field("SHA256", json_str(m, "sha256"));
        if (signer)
                print_fieldf("Signer", "%s%s%s%s", signer, key ? " (key " : "", key ?: "", key ? ")" : "");
        else if (json_bool(m, "modinfoPending"))
                print_field("Signer", "not known yet (the file's .modinfo is read after the load)");
        /* What that read found: the kernel loaded another module than the file's name says. */
        print_field("After load", json_str(m, "afterLoad"));
}

/* systemctl status's shape: a dot in the outcome's colour and the name, then what is known. */
static void print_record(sd_json_variant *m) {
        const char *outcome = json_str(m, "outcome"), *role = json_str(m, "role");
        char ts[TIMESTAMP_MAX], ago[TIMESTAMP_MAX];
        int64_t time;

        printf("%s%s%s %s\n", ansi(outcome_color(outcome)), glyph_dot(),
               ansi(outcome_color(outcome) ? ANSI_NORMAL : NULL), json_str(m, "module") ?: "?");
        print_fieldf("Outcome", "%s%s%s", ansi(outcome_color(outcome)), outcome ?: "?",
                     ansi(outcome_color(outcome) ? ANSI_NORMAL : NULL));
        if (json_int(m, "time", &time) && time > 0)
                print_fieldf("When", "%s; %s", format_timestamp(ts, (uint64_t) time),
                             format_ago(ago, (uint64_t) time));
        if (json_str(m, "source"))
                print_fieldf("Source", "%s%s%s%s", json_str(m, "source"), role ? " (" : "", role ?: "",
                             role ? ")" : "");
        print_request(m);
        print_caller(m);
        print_file(m);
        print_field_noted("Parameters", json_str(m, "parameters"), json_str(m, "optionsSource"));
        print_field("Rule", json_str(m, "rule"));
        print_field("Reason", json_str(m, "reason"));
        print_field_noted("Error", json_str(m, "errnoName"), json_str(m, "errnoClass"));
        print_field("Taint", json_str(m, "taint"));
}

int verb_describe(char **args, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        bool first = true;
        int r, ret = 0;

        for (size_t i = 0; i < n; i++)
                if (!module_name_is_valid(args[i]))
                        return ctl_log_refusal(args[i], MANAGER_ERROR_INVALID_NAME, NULL);
        r = ctl_connect(&vl);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;
                sd_json_variant *reply = NULL;
                const char *error = NULL;

                if (sd_json_buildo(&p, SD_JSON_BUILD_PAIR_STRING("name", args[i])) < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
                r = ctl_call(vl, "io.modgate.Manager.Describe", p, &reply, &error);
                if (r >= 0 && error)
                        r = ctl_log_error("describe", args[i], error, reply);
                if (r < 0) {
                        ret = ret ?: r;
                        if (streq_ptr(error, SD_VARLINK_ERROR_DISCONNECTED))
                                break;
                        continue;
                }
                pager_open();
                if (json_output())
                        json_dump(reply);
                else {
                        printf("%s", first ? "" : "\n");
                        print_record(sd_json_variant_by_key(reply, "module"));
                }
                first = false;
        }
        return ret;
}
