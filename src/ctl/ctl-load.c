/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
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
#include "load-parameters.h"
#include "log.h"
#include "macro.h"
#include "module-name.h"
#include "varlink-errors.h"

/* load, unload and explain: one call per argument, on one connection. */

typedef struct Request {
        const char *verb;
        const char *method;
        /* Builds the parameters for one argument, or refuses it as the daemon would. */
        int (*build)(const char *arg, sd_json_variant **ret);
        /* Shows one reply; error_id is NULL on success. Returns 0 or -errno with the exit status
         * recorded. */
        int (*show)(struct Request *req, const char *what, sd_json_variant *reply, const char *error_id);
        Table *table;
        size_t shown;           /* replies shown so far */
        bool patient;           /* wait as long as the kernel takes, as systemctl start waits for its job */
} Request;

/* What the daemon would refuse as invalid is refused here, in its words, and not sent. */
static int build_load(const char *arg, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;
        const char *key = arg_modalias ? "modalias" : arg[0] == '/' ? "path" : "name";
        LoadParameters lp;
        LoadRefusal f = {};
        int r;

        r = sd_json_buildo(&p, SD_JSON_BUILD_PAIR_STRING(key, arg),
                           SD_JSON_BUILD_PAIR_CONDITION(!!arg_parameters, "parameters",
                                                        SD_JSON_BUILD_STRING(arg_parameters)),
                           SD_JSON_BUILD_PAIR_CONDITION(!!arg_source, "context",
                                                        SD_JSON_BUILD_OBJECT(SD_JSON_BUILD_PAIR_STRING(
                                                                        "source", arg_source))));
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        r = load_parameters_parse(p, &lp, &f);
        if (r < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        if (r > 0)
                return ctl_log_refusal(arg, f.error, f.reason ?: f.field);

        *ret = TAKE_PTR(p);
        return 0;
}

static int build_unload(const char *arg, sd_json_variant **ret) {
        if (!module_name_is_valid(arg))
                return ctl_log_refusal(arg, MANAGER_ERROR_INVALID_NAME, NULL);
        if (sd_json_buildo(ret, SD_JSON_BUILD_PAIR_STRING("name", arg)) < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        return 0;
}

const char *const module_headers[MODULE_COLUMNS] = { "MODULE", "OUTCOME", "ROLE", "DETAIL" };

/* The modules of a Load reply (or of an error that carries them), as table rows. */
int table_add_modules(Table *t, sd_json_variant *modules) {
        for (size_t i = 0;
             modules && sd_json_variant_is_array(modules) && i < sd_json_variant_elements(modules); i++) {
                sd_json_variant *m = sd_json_variant_by_index(modules, i);
                const char *outcome = json_str(m, "outcome");
                int r;

                r = table_add(t, json_str(m, "name"), NULL);
                if (r >= 0)
                        r = table_add(t, outcome, outcome_color(outcome));
                if (r >= 0)
                        r = table_add(t, json_str(m, "role"), NULL);
                if (r >= 0)
                        r = table_add(t, json_str(m, "reason") ?: json_str(m, "path") ?: "(builtin)", NULL);
                if (r < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        }
        return 0;
}

/* Softdeps the policy left out, and alias matches modprobe.d blacklists: said, not failed. */
static void show_left_out(const char *what, sd_json_variant *reply) {
        sd_json_variant *denied = reply ? sd_json_variant_by_key(reply, "denied") : NULL;
        _cleanup_free_ char *blacklisted = json_join(reply, "blacklisted", ", ");

        for (size_t i = 0;
             denied && sd_json_variant_is_array(denied) && i < sd_json_variant_elements(denied); i++) {
                sd_json_variant *d = sd_json_variant_by_index(denied, i);

                log_notice("%s: softdep %s left out: %s", what, json_str(d, "name") ?: "?",
                           json_str(d, "reason") ?: json_str(d, "rule") ?: "denied");
        }
        if (blacklisted)
                log_notice("%s: not loaded, blacklisted by modprobe.d: %s", what, blacklisted);
}

static int show_load(Request *req, const char *what, sd_json_variant *reply, const char *error_id) {
        int r;

        if (json_output())
                json_dump(reply);
        else {
                r = table_add_modules(req->table, reply ? sd_json_variant_by_key(reply, "modules") : NULL);
                if (r < 0)
                        return r;
                show_left_out(what, reply);
        }
        return error_id ? ctl_log_error(req->verb, what, error_id, reply) : 0;
}

static void print_origin(sd_json_variant *o) {
        const char *signer = json_str(o, "signer"), *key = json_str(o, "signatureKey"),
                   *sha = json_str(o, "sha256");

        if (!o || !sd_json_variant_is_object(o))
                return;
        if (json_bool(o, "trusted"))
                printf("    file: %strusted%s by %s evidence (%s on %s)\n", ansi(ANSI_GREEN),
                       ansi(ANSI_NORMAL), json_str(o, "evidence") ?: "?", json_str(o, "fstype") ?: "?",
                       json_str(o, "backing")        ?:
                               json_str(o, "device") ?:
                                                       "?");
        else
                printf("    file: %snot trusted%s: %s\n", ansi(ANSI_RED), ansi(ANSI_NORMAL),
                       json_str(o, "reason") ?: "?");
        if (sha)
                printf("    sha256 %s%s%s%s%s%s\n", sha, signer ? ", signed by " : "", signer ?: "",
                       signer && key ? " (key " : "", signer && key ? key : "", signer && key ? ")" : "");
}

static void print_explained_module(sd_json_variant *m) {
        _cleanup_free_ char *requires = json_join(m, "requires", " "), *after = json_join(m, "after", " ");
        const char *policy = json_str(m, "policy"), *rule = json_str(m, "rule");

        printf("  %-22s %-12s %-8s policy %s%s%s%s%s\n", json_str(m, "name") ?: "-",
               json_str(m, "role") ?: "-", json_str(m, "state") ?: "-",
               ansi(streq_ptr(policy, "deny") ? ANSI_RED : NULL), policy ?: "-",
               ansi(streq_ptr(policy, "deny") ? ANSI_NORMAL : NULL), rule ? " by " : "", rule ?: "");
        if (requires)
                printf("    requires: %s\n", requires);
        if (after)
                printf("    after: %s\n", after);
        if (json_str(m, "options"))
                printf("    options: %s\n", json_str(m, "options"));
        print_origin(sd_json_variant_by_key(m, "origin"));
}

/* The exit status of a verdict: what a load would run into. */
static CtlExit verdict_status(const char *verdict) {
        if (streq_ptr(verdict, "denied") || streq_ptr(verdict, "untrusted"))
                return CTL_EXIT_DENIED;
        if (streq_ptr(verdict, "not_found"))
                return CTL_EXIT_NOT_FOUND;
        if (streq_ptr(verdict, "failed"))
                return CTL_EXIT_LOAD_FAILED;
        if (streq_ptr(verdict, "sealed"))
                return CTL_EXIT_REFUSED;
        return CTL_EXIT_SUCCESS;
}

/* What a load would do, for a person: the verdict first, then each module with its checks. */
static int show_explanation(Request *req, const char *what, sd_json_variant *reply, const char *error_id) {
        sd_json_variant *mods = reply ? sd_json_variant_by_key(reply, "modules") : NULL;
        const char *verdict = json_str(reply, "verdict"), *reason = json_str(reply, "reason");
        CtlExit status = verdict_status(verdict);

        /* Only once there is something to page: an error alone goes straight to the terminal. */
        if (!error_id)
                pager_open();
        if (json_output() || error_id) {
                if (json_output())
                        json_dump(reply);
                if (error_id)
                        return ctl_log_error(req->verb, what, error_id, reply);
        } else {
                /* Several explanations read apart. */
                if (req->shown++ > 0)
                        fputc('\n', stdout);
                printf("%s: %s%s%s%s%s\n", what, ansi(outcome_color(verdict)), verdict ?: "?",
                       ansi(outcome_color(verdict) ? ANSI_NORMAL : NULL), reason ? ": " : "", reason ?: "");
                printf("  source %s, mode %s, policy %.12s\n", json_str(reply, "source") ?: "?",
                       json_str(reply, "mode") ?: "?", json_str(reply, "policyDigest") ?: "?");
                if (json_str(reply, "key"))
                        printf("  key %s: %s\n", json_str(reply, "key"),
                               json_str(reply, "keyPolicy") ?: "allow");
                for (size_t i = 0;
                     mods && sd_json_variant_is_array(mods) && i < sd_json_variant_elements(mods); i++)
                        print_explained_module(sd_json_variant_by_index(mods, i));
        }
        return status == CTL_EXIT_SUCCESS ? 0 : ctl_fail(status, EPERM);
}

static int show_unload(Request *req, const char *what, sd_json_variant *reply, const char *error_id) {
        if (json_output())
                json_dump(reply);
        return error_id ? ctl_log_error(req->verb, what, error_id, reply) : 0;
}

/* Asks for each argument whose request was built; connects only when there is one. */
static int request_all(Request *req, char **args, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        int r, ret = 0;

        for (size_t i = 0; i < n; i++) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *params = NULL;
                sd_json_variant *reply = NULL;
                const char *error = NULL;

                r = req->build(args[i], &params);
                if (r >= 0 && !vl) {
                        r = ctl_connect(&vl);
                        if (r >= 0 && req->patient)
                                (void) sd_varlink_set_relative_timeout(vl, UINT64_MAX);
                }
                if (r >= 0)
                        r = ctl_call(vl, req->method, params, &reply, &error);
                if (r >= 0)
                        r = req->show(req, args[i], reply, error);
                if (r < 0 && ret == 0)
                        ret = r;
                /* A connection that failed fails every later call the same way: say it once. */
                if (streq_ptr(error, SD_VARLINK_ERROR_DISCONNECTED) || (!vl && r < 0 && params))
                        break;
        }
        return ret;
}

int verb_load(char **args, size_t n) {
        _cleanup_(table_freep) Table *t = table_new(MODULE_COLUMNS, module_headers);
        Request req = { "load", "io.modgate.Manager.Load", build_load, show_load, t, .patient = true };
        int r;

        if (!t)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        r = request_all(&req, args, n);
        if (table_rows(t) > 0)
                table_print(t, stdout, arg_legend);
        return r;
}

int verb_explain(char **args, size_t n) {
        Request req = { "explain", "io.modgate.Manager.Explain", build_load, show_explanation, NULL };

        return request_all(&req, args, n);
}

int verb_unload(char **args, size_t n) {
        Request req = { "unload",       "io.modgate.Manager.Unload", build_unload, show_unload, NULL,
                        .patient = true };

        return request_all(&req, args, n);
}
