/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "ctl-error.h"
#include "ctl-link.h"
#include "ctl-output.h"
#include "ctl.h"
#include "log.h"
#include "module-name.h"
#include "varlink-errors.h"

/* monitor: follows Monitor's events until SIGINT or SIGTERM, one line each (or the daemon's JSON). */

typedef struct Monitor {
        bool ready;
        int ret;
} Monitor;

/* A field of the event, or of the record a decision carries. */
static const char *ev_str(sd_json_variant *ev, const char *key) {
        return json_str(ev, key) ?: json_str(sd_json_variant_by_key(ev, "record"), key);
}

static bool ev_int(sd_json_variant *ev, const char *key, int64_t *ret) {
        return json_int(ev, key, ret) || json_int(sd_json_variant_by_key(ev, "record"), key, ret);
}

/* One more part of the line, after a comma unless it is the first: prefix, value, suffix. */
static void detail(FILE *f, bool *first, const char *prefix, const char *value, const char *suffix) {
        if (!value)
                return;
        fprintf(f, "%s%s%s%s", *first ? "" : ", ", prefix, value, suffix);
        *first = false;
}

static void print_request(FILE *f, sd_json_variant *ev) {
        bool first = true;
        int64_t pid, uid;

        fprintf(f, "%s%s%s", json_str(ev, "method") ?: "", json_str(ev, "method") ? " " : "",
                json_str(ev, "request") ?: "?");
        detail(f, &first, " from ", json_str(ev, "source"), "");
        first = false;
        detail(f, &first, "", json_str(ev, "devpath"), "");
        if (ev_int(ev, "peerPid", &pid) && ev_int(ev, "peerUid", &uid))
                fprintf(f, ", pid %" PRIi64 " uid %" PRIi64, pid, uid);
}

static void print_decision(FILE *f, const char *type, sd_json_variant *ev) {
        char span[TIMESTAMP_MAX];
        bool first = true;
        int64_t usec, pid;

        detail(f, &first, "", ev_str(ev, "role"), "");
        if (streq_ptr(type, "started"))
                detail(f, &first, "", ev_str(ev, "path"), "");
        detail(f, &first, "", ev_str(ev, "evidence"), " evidence");
        detail(f, &first, "", ev_str(ev, "errnoName"), "");
        detail(f, &first, "", ev_str(ev, "reason"), "");
        if (!ev_str(ev, "reason"))
                detail(f, &first, "", ev_str(ev, "rule"), "");
        if (json_str(ev, "policyDigest")) {
                char digest[13];

                snprintf(digest, sizeof(digest), "%s", json_str(ev, "policyDigest"));
                detail(f, &first, "policy ", digest, "");
        }
        if (streq_ptr(type, "refused_caller") && ev_int(ev, "peerPid", &pid))
                fprintf(f, "%spid %" PRIi64, first ? "" : ", ", pid);
        if (json_int(ev, "durationUSec", &usec))
                detail(f, &first, "", format_timespan(span, (uint64_t) usec), "");
}

static void print_event(sd_json_variant *ev) {
        const char *type = json_str(ev, "type"), *module = ev_str(ev, "module");
        _cleanup_free_ char *details = NULL;
        char ts[TIMESTAMP_MAX] = "?";
        size_t size = 0;
        int64_t time;
        FILE *f;

        f = open_memstream(&details, &size);
        if (!f) {
                (void) log_oom();
                return;
        }
        if (streq_ptr(type, "request"))
                print_request(f, ev);
        else if (streq_ptr(type, "sealed"))
                fputs("kernel.modules_disabled=1", f);
        else
                print_decision(f, type, ev);
        if (fclose(f) != 0)
                return;

        if (ev_int(ev, "time", &time) && time > 0)
                format_timestamp_precise(ts, (uint64_t) time);
        printf("%s %s%-16s%s ", ts, ansi(outcome_color(type)), type ?: "?",
               ansi(outcome_color(type) ? ANSI_NORMAL : NULL));
        if (details[0])
                printf("%-20s %s\n", module ?: "-", details);
        else
                printf("%s\n", module ?: "-");
}

static int on_event(sd_varlink *link, sd_json_variant *p, const char *error_id,
                    sd_varlink_reply_flags_t flags, void *userdata) {
        Monitor *m = userdata;
        sd_json_variant *ev = p ? sd_json_variant_by_key(p, "event") : NULL;

        if (error_id) {
                if (m->ready && streq_ptr(error_id, SD_VARLINK_ERROR_DISCONNECTED)) {
                        log_error("modgated went away (stopped or restarted).");
                        log_error("Run 'modgatectl monitor' again to follow the next instance.");
                        m->ret = ctl_fail(CTL_EXIT_NO_DAEMON, ECONNRESET);
                } else
                        m->ret = ctl_log_error("monitor", "monitor", error_id, p);
                return sd_event_exit(sd_varlink_get_event(link), 0);
        }

        if (json_output())
                json_dump(p);
        else if (streq_ptr(json_str(ev, "type"), "ready"))
                log_info("Following modgated's events on %s; Ctrl-C stops.", arg_address);
        else
                print_event(ev);
        fflush(stdout);
        m->ready = true;

        if (!(flags & SD_VARLINK_REPLY_CONTINUES)) {
                log_error("modgated ended the stream of events.");
                m->ret = ctl_fail(CTL_EXIT_FAILURE, EPIPE);
                return sd_event_exit(sd_varlink_get_event(link), 0);
        }
        return 0;
}

static int monitor_parameters(char **args, size_t n, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *names = NULL;

        for (size_t i = 0; i < n; i++) {
                if (!module_name_is_valid(args[i]))
                        return ctl_log_refusal(args[i], MANAGER_ERROR_INVALID_NAME, NULL);
                if (sd_json_variant_append_arrayb(&names, SD_JSON_BUILD_STRING(args[i])) < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        }
        if (sd_json_buildo(ret,
                           SD_JSON_BUILD_PAIR_CONDITION(!!names, "modules", SD_JSON_BUILD_VARIANT(names))) <
            0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        return 0;
}

int verb_monitor(char **args, size_t n) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;
        Monitor m = {};
        int r;

        r = monitor_parameters(args, n, &p);
        if (r < 0)
                return r;
        r = ctl_connect(&vl);
        if (r < 0)
                return r;

        r = sd_event_default(&e);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, NULL, NULL);
        if (r >= 0)
                r = sd_varlink_attach_event(vl, e, 0);
        if (r >= 0)
                r = sd_varlink_bind_reply(vl, on_event);
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_error_errno(r, "Failed to set up the event loop: %m"));
        (void) sd_varlink_set_userdata(vl, &m);
        /* Quiet hours are no timeout: events come when they come. */
        (void) sd_varlink_set_relative_timeout(vl, UINT64_MAX);

        r = sd_varlink_observe(vl, "io.modgate.Manager.Monitor", p);
        if (r < 0)
                return ctl_fail(CTL_EXIT_NO_DAEMON,
                                log_error_errno(r, "Failed to ask modgated for events: %m"));
        r = sd_event_loop(e);
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_error_errno(r, "Event loop failed: %m"));
        return m.ret;
}
