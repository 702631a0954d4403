/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "ctl-error.h"
#include "ctl-link.h"
#include "ctl-output.h"
#include "ctl-pager.h"
#include "ctl.h"
#include "log.h"

/* status: the daemon's state as systemctl status shows a unit's, from Status. */

static int64_t int_or_zero(sd_json_variant *v, const char *key) {
        int64_t i = 0;

        (void) json_int(v, key, &i);
        return i;
}

static void print_root(sd_json_variant *root, bool first) {
        _cleanup_free_ char *evidence = json_join(root, "evidence", " ");
        const char *state = json_str(root, "state");
        const char *color = streq_ptr(state, "pinned") ? NULL :
                streq_ptr(state, "changed")            ? ANSI_RED :
                                                         ANSI_YELLOW;
        int64_t entries;

        printf("%*s%s", FIELD_WIDTH, first ? "Roots" : "", first ? ": " : "  ");
        printf("%s (%s%s%s)\n", json_str(root, "path") ?: "?", ansi(color), state ?: "?",
               ansi(color ? ANSI_NORMAL : NULL));
        if (evidence)
                printf("%*s    evidence: %s\n", FIELD_WIDTH, "", evidence);
        if (json_str(root, "identity"))
                printf("%*s    identity: %s\n", FIELD_WIDTH, "", json_str(root, "identity"));
        if (json_str(root, "verityRootHash"))
                printf("%*s    dm-verity root hash: %s\n", FIELD_WIDTH, "",
                       json_str(root, "verityRootHash"));
        if (json_str(root, "manifest")) {
                if (json_int(root, "manifestEntries", &entries))
                        printf("%*s    manifest: %s (%" PRIi64 " files)\n", FIELD_WIDTH, "",
                               json_str(root, "manifest"), entries);
                else
                        printf("%*s    manifest: %s\n", FIELD_WIDTH, "", json_str(root, "manifest"));
        }
}

static void print_counters(sd_json_variant *c) {
        if (!c)
                return;
        print_fieldf("Requests", "%" PRIi64 " since start, %" PRIi64 " of them joined a load in flight",
                     int_or_zero(c, "requests"), int_or_zero(c, "coalesced"));
        print_fieldf("Modules",
                     "%" PRIi64 " loaded, %" PRIi64 " answered at once (loaded, builtin or refused "
                     "before)",
                     int_or_zero(c, "loads"), int_or_zero(c, "cached"));
        print_fieldf("Refused", "%" PRIi64 " denied, %" PRIi64 " failed, %" PRIi64 " not found, %" PRIi64
                     " callers refused", int_or_zero(c, "denied"), int_or_zero(c, "failed"),
                     int_or_zero(c, "notFound"), int_or_zero(c, "refusedCallers"));
        print_fieldf("Outside", "%" PRIi64 " loaded by other loaders", int_or_zero(c, "outsideLoads"));
}

static void print_latency(sd_json_variant *l) {
        char p50[TIMESTAMP_MAX], p90[TIMESTAMP_MAX], p99[TIMESTAMP_MAX], max[TIMESTAMP_MAX];

        if (!l || int_or_zero(l, "samples") <= 0)
                return;
        print_fieldf("Latency", "p50 %s, p90 %s, p99 %s, max %s (of the last %" PRIi64 " load%s)",
                     format_timespan(p50, (uint64_t) int_or_zero(l, "p50USec")),
                     format_timespan(p90, (uint64_t) int_or_zero(l, "p90USec")),
                     format_timespan(p99, (uint64_t) int_or_zero(l, "p99USec")),
                     format_timespan(max, (uint64_t) int_or_zero(l, "maxUSec")), int_or_zero(l, "samples"),
                     int_or_zero(l, "samples") == 1 ? "" : "s");
}

/* "signatures: enforced; lockdown: none; ...": one item a line, as systemctl status lists values. */
static void print_enforcement(const char *e) {
        const char *key = "Enforcement";

        while (e && *e) {
                size_t n = strcspn(e, ";");

                printf("%*s%s%.*s\n", FIELD_WIDTH, key, key[0] ? ": " : "  ", (int) n, e);
                e += n;
                e += strspn(e, "; ");
                key = "";
        }
}

/* The modules on a worker now, each with how long: a module whose init hangs shows here. */
static void print_loading(sd_json_variant *loading) {
        size_t n = loading && sd_json_variant_is_array(loading) ? sd_json_variant_elements(loading) : 0;

        for (size_t i = 0; i < n; i++) {
                sd_json_variant *e = sd_json_variant_by_index(loading, i);
                char since[TIMESTAMP_MAX];

                printf("%*s%s%s (for %s)\n", FIELD_WIDTH, i == 0 ? "Loading" : "", i == 0 ? ": " : "  ",
                       json_str(e, "module") ?: "?",
                       format_timespan(since, (uint64_t) int_or_zero(e, "forUSec")));
        }
}

/* The guard: its mode, and since when it is attached; or why it is not. */
static void print_guard(sd_json_variant *g) {
        const char *mode = json_str(g, "mode"), *configured = json_str(g, "configured");
        const char *by = streq_ptr(json_str(g, "configuredBy"), "cmdline") ? "modgate.guard=" : "Mode=";
        char at[TIMESTAMP_MAX];

        if (json_bool(g, "attached"))
                print_fieldf("Guard", "%s%s%s (%s%s), attached since %s%s, %" PRIi64 " refusal%s recorded",
                             ansi(streq_ptr(mode, "enforce") ? ANSI_GREEN : ANSI_YELLOW), mode ?: "?",
                             ansi(ANSI_NORMAL), by, configured ?: "?",
                             format_timestamp(at, (uint64_t) int_or_zero(g, "attachedAt")),
                             json_bool(g, "kept") ? "" : " (not kept: detaches when modgated exits)",
                             int_or_zero(g, "refusals"), int_or_zero(g, "refusals") == 1 ? "" : "s");
        else if (streq_ptr(configured, "off"))
                print_fieldf("Guard", "off (%soff)", by);
        else
                print_fieldf("Guard", "%sunavailable%s (%s%s): %s", ansi(ANSI_YELLOW), ansi(ANSI_NORMAL), by,
                             configured ?: "?", json_str(g, "unavailable") ?: "?");
}

static void print_status(sd_json_variant *s) {
        const char *mode = json_str(s, "mode");
        const char *color = streq_ptr(mode, "enforce") ? ANSI_GREEN : ANSI_YELLOW;
        sd_json_variant *roots = sd_json_variant_by_key(s, "roots");
        char uptime[TIMESTAMP_MAX];
        bool sealed = json_bool(s, "sealed");

        printf("%s%s%s modgated %s - the kernel module loader\n", ansi(color), glyph_dot(),
               ansi(ANSI_NORMAL), json_str(s, "version") ?: "?");
        print_fieldf("Mode", "%s%s%s", ansi(color), mode ?: "?", ansi(ANSI_NORMAL));
        print_field("Policy", json_str(s, "policyDigest"));
        print_enforcement(json_str(s, "enforcement"));
        if (sd_json_variant_by_key(s, "guard"))
                print_guard(sd_json_variant_by_key(s, "guard"));
        print_fieldf("Sealed", "%s%s%s", ansi(sealed ? ANSI_BLUE : NULL),
                     sealed ? "yes: no module can be loaded or unloaded until reboot" : "no",
                     ansi(sealed ? ANSI_NORMAL : NULL));
        print_fieldf("Uptime", "%s", format_timespan(uptime, (uint64_t) int_or_zero(s, "uptimeUSec")));
        for (size_t i = 0; roots && sd_json_variant_is_array(roots) && i < sd_json_variant_elements(roots);
             i++)
                print_root(sd_json_variant_by_index(roots, i), i == 0);
        print_fieldf("Workers", "%" PRIi64 " (%" PRIi64 " busy), %" PRIi64 " jobs queued (%" PRIi64
                     " checked ahead), %" PRIi64 " requests waiting, %" PRIi64 " connection%s",
                     int_or_zero(s, "workers"), int_or_zero(s, "busyWorkers"), int_or_zero(s, "queuedJobs"),
                     int_or_zero(s, "checkedAheadJobs"), int_or_zero(s, "pendingRequests"),
                     int_or_zero(s, "connections"),
                     int_or_zero(s, "connections") == 1 ? "" : "s");
        print_loading(sd_json_variant_by_key(s, "loading"));
        print_counters(sd_json_variant_by_key(s, "counters"));
        print_latency(sd_json_variant_by_key(s, "latency"));
}

int verb_status(char **args, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        sd_json_variant *reply = NULL;
        int r;

        r = ctl_call_simple("status", "io.modgate.Manager.Status", &vl, &reply);
        if (r < 0)
                return r;
        pager_open();
        if (json_output())
                json_dump(reply);
        else
                print_status(reply);
        return 0;
}
