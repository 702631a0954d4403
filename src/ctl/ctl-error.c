/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-error.h"
#include "ctl-output.h"
#include "ctl.h"
#include "log.h"
#include "macro.h"
#include "varlink-errors.h"


static const struct {
        const char *error;
        CtlExit status;
} error_status[] = {
        { MANAGER_ERROR_INVALID_NAME, CTL_EXIT_INVALID },
        { MANAGER_ERROR_INVALID_MODALIAS, CTL_EXIT_INVALID },
        { MANAGER_ERROR_INVALID_PATH, CTL_EXIT_INVALID },
        { MANAGER_ERROR_INVALID_MODULE_PARAMETERS, CTL_EXIT_INVALID },
        { MANAGER_ERROR_INVALID_REQUEST, CTL_EXIT_INVALID },
        { "org.varlink.service.InvalidParameter", CTL_EXIT_INVALID },
        { MANAGER_ERROR_POLICY_DENIED, CTL_EXIT_DENIED },
        { MANAGER_ERROR_PARAMETER_DENIED, CTL_EXIT_DENIED },
        { MANAGER_ERROR_UNTRUSTED_ORIGIN, CTL_EXIT_DENIED },
        { MANAGER_ERROR_INSTALL_COMMAND_REFUSED, CTL_EXIT_DENIED },
        { MANAGER_ERROR_MODULE_NOT_FOUND, CTL_EXIT_NOT_FOUND },
        { MANAGER_ERROR_NO_RECORD, CTL_EXIT_NOT_FOUND },
        { MANAGER_ERROR_NOT_LOADED, CTL_EXIT_NOT_FOUND },
        { MANAGER_ERROR_LOAD_FAILED, CTL_EXIT_LOAD_FAILED },
        { MANAGER_ERROR_TIMEOUT, CTL_EXIT_LOAD_FAILED },
        { MANAGER_ERROR_UNLOAD_FAILED, CTL_EXIT_LOAD_FAILED },
        { MANAGER_ERROR_MODULE_IN_USE, CTL_EXIT_LOAD_FAILED },
        { MANAGER_ERROR_PERMISSION_DENIED, CTL_EXIT_REFUSED },
        { MANAGER_ERROR_SEALED, CTL_EXIT_REFUSED },
        { "io.systemd.Disconnected", CTL_EXIT_NO_DAEMON },
};

static CtlExit first_failure = CTL_EXIT_SUCCESS;

CtlExit ctl_exit_from_error(const char *error_id) {
        if (!error_id)
                return CTL_EXIT_SUCCESS;
        for (size_t i = 0; i < ELEMENTSOF(error_status); i++)
                if (strcmp(error_status[i].error, error_id) == 0)
                        return error_status[i].status;
        return CTL_EXIT_FAILURE;
}

int ctl_fail(CtlExit status, int error) {
        if (first_failure == CTL_EXIT_SUCCESS)
                first_failure = status;
        return -abs(error ?: EIO);
}

int ctl_exit_status(int r) {
        if (first_failure != CTL_EXIT_SUCCESS)
                return first_failure;
        return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_SUCCESS;
}

bool ctl_verb_is_read_only(const char *verb) {
        static const char *const readers[] = { "status", "list", "describe", "explain", "monitor" };

        for (size_t i = 0; i < ELEMENTSOF(readers); i++)
                if (streq_ptr(verb, readers[i]))
                        return true;
        return false;
}

/* How to ask for the same thing with explain, as the user would type it. */
static void explain_command(char *buf, size_t size, const char *what) {
        if (arg_modalias)
                snprintf(buf, size, "modgatectl explain -m '%s'", what);
        else
                snprintf(buf, size, "modgatectl explain %s", what);
}

typedef struct ErrorText {
        const char *verb, *what, *error;
        sd_json_variant *p;
} ErrorText;

static void text_policy_denied(const ErrorText *t) {
        char cmd[256];

        explain_command(cmd, sizeof(cmd), t->what);
        log_error("%s: %s: %s", t->what, t->error, json_str(t->p, "reason") ?: "denied by the policy");
        log_error("Denied by %s. '%s' shows the verdict on each module; change the rule and run "
                  "'modgatectl reload' to allow it.", json_str(t->p, "rule") ?: "the policy", cmd);
}

static void text_parameter_denied(const ErrorText *t) {
        const char *rule = json_str(t->p, "rule");

        log_error("%s: %s: %s: %s", t->what, t->error, json_str(t->p, "parameter") ?: "?",
                  json_str(t->p, "reason") ?: "refused");
        if (rule)
                log_error("Refused by %s. A [Parameters] section for %s in modgate.conf(5) says which "
                          "parameters a request may give it.", rule, json_str(t->p, "module") ?: t->what);
        else
                log_error("The administrator's option for it wins (modprobe.d or the kernel command line); "
                          "load without that -p parameter.");
}

static void text_untrusted(const ErrorText *t) {
        const char *module = json_str(t->p, "module") ?: t->what;
        char cmd[256];

        explain_command(cmd, sizeof(cmd), t->what);
        log_error("%s: %s: %s (%s)", t->what, t->error, json_str(t->p, "reason") ?: "untrusted",
                  json_str(t->p, "path") ?: module);
        log_error("Nothing that needs %s was loaded. '%s' shows the checks on its file; Evidence= in "
                  "modgate.conf(5) says what may vouch for a module file.", module, cmd);
}

static void text_install_command(const ErrorText *t) {
        const char *module = json_str(t->p, "module") ?: t->what;

        log_error("%s: %s: modprobe.d has a command for %s: %s", t->what, t->error, module,
                  json_str(t->p, "command") ?: "?");
        log_error("modgate never runs commands. Remove that line from modprobe.d ('modprobe -c | grep %s' "
                  "finds it), or load by name what the command would load.", module);
}

static void text_not_found(const ErrorText *t) {
        _cleanup_free_ char *blacklisted = json_join(t->p, "blacklisted", ", ");

        if (blacklisted) {
                log_error("%s: no such module: modprobe.d blacklists its only matches (%s).", t->what,
                          blacklisted);
                log_error("A blacklist hides alias matches only: load the module by its name.");
                return;
        }
        log_error("%s: no such module.", t->what);
        log_error("No module, alias or builtin of that name is in the module index of the first trusted "
                  "root; 'modinfo %s' looks it up as modprobe would.", t->what);
}

static void text_no_record(const ErrorText *t) {
        log_error("%s: no record of it this boot.", t->what);
        log_error("modgated has not loaded, refused or seen %s since boot; 'modgatectl list' shows the "
                  "modules it has records of.", t->what);
}

static void text_not_loaded(const ErrorText *t) {
        log_error("%s: not loaded.", t->what);
        log_error("'modgatectl list' or lsmod(8) shows what is loaded.");
}

static void text_load_failed(const ErrorText *t) {
        const char *module = json_str(t->p, "module") ?: t->what;

        log_error("%s: %s: %s: %s%s%s%s", t->what, t->error, module, json_str(t->p, "reason") ?: "failed",
                  json_str(t->p, "errnoName") ? " (" : "", json_str(t->p, "errnoName") ?: "",
                  json_str(t->p, "errnoName") ? ")" : "");
        log_error("The kernel's log may say why ('journalctl -k -g %s'); 'modgatectl describe %s' shows "
                  "the record.", module, module);
}

static void text_timeout(const ErrorText *t) {
        _cleanup_free_ char *pending = json_join(t->p, "pending", " ");

        log_error("%s: %s: still loading: %s", t->what, t->error, pending ?: "?");
        log_error("The load goes on in modgated: 'modgatectl monitor %s' follows it, 'modgatectl "
                  "describe NAME' shows how it ended.", pending ?: "");
}

static void text_in_use(const ErrorText *t) {
        _cleanup_free_ char *holders = json_join(t->p, "holders", ", ");
        _cleanup_free_ char *first = json_join(t->p, "holders", "\n");
        int64_t refcount = 0;

        if (first)
                first[strcspn(first, "\n")] = 0;
        (void) json_int(t->p, "refcount", &refcount);
        if (holders) {
                log_error("%s: in use by %s.", t->what, holders);
                log_error("Unload what uses it first, for example 'modgatectl unload %s'.", first);
        } else {
                log_error("%s: in use (%" PRIi64 " references).", t->what, refcount);
                log_error("Something holds it (a device, a mounted file system, a network interface, an "
                          "open file): release that first.");
        }
}

static void text_unload_failed(const ErrorText *t) {
        log_error("%s: %s: %s%s%s%s", t->what, t->error, json_str(t->p, "reason") ?: "failed",
                  json_str(t->p, "errnoName") ? " (" : "", json_str(t->p, "errnoName") ?: "",
                  json_str(t->p, "errnoName") ? ")" : "");
        log_error("A module that is still initializing, already going away, or has no exit function "
                  "cannot be unloaded; modgate never forces an unload.");
}

static void text_busy(const ErrorText *t) {
        const char *module = json_str(t->p, "module");

        log_error("%s: %s: %s", t->what, t->error, json_str(t->p, "reason") ?: "busy");
        if (module)
                log_error("Try again once the load of %s in flight has ended ('modgatectl monitor %s').",
                          module, module);
        else
                log_error("Too many requests are pending: try again in a moment.");
}

static void text_permission(const ErrorText *t) {
        log_error("%s: %s: %s", t->what, t->error, json_str(t->p, "reason") ?: "permission denied");
        if (ctl_verb_is_read_only(t->verb))
                log_error("status, list, describe, explain and monitor are for root and for the members of "
                          "the group that ReadGroup= in modgate.conf(5) names.");
        else
                log_error("%s needs CAP_SYS_MODULE: run it as root (sudo, run0), from a process that has "
                          "not dropped that capability.", t->verb);
}

static void text_sealed(const ErrorText *t) {
        char ts[TIMESTAMP_MAX] = "an earlier request";
        int64_t at;

        if (json_int(t->p, "sealedAt", &at) && at > 0)
                format_timestamp(ts, (uint64_t) at);
        log_error("%s: %s: the kernel was sealed at %s: no module can be loaded or unloaded.", t->what,
                  t->error, ts);
        log_error("kernel.modules_disabled=1 holds until the next boot: reboot to load or unload modules "
                  "again, and name what must still load with 'modgatectl seal --load=NAME'.");
}

static void text_configuration(const ErrorText *t) {
        log_error("%s: %s: %s", t->what, t->error, json_str(t->p, "reason") ?: "?");
        log_error("The running policy stays. Fix the file, check it with '" MODGATED_PATH " -n', and run "
                  "'modgatectl reload' again.");
}

static void text_invalid(const ErrorText *t) {
        static const struct {
                const char *error, *hint;
        } hints[] = {
                { MANAGER_ERROR_INVALID_NAME,
                  "A module name has letters, digits, '_' and '-', at most 55 of them; a modalias goes with "
                  "-m, a "
                  "module file as an absolute path." },
                { MANAGER_ERROR_INVALID_MODALIAS,
                  "A modalias is one word of printable ASCII, as a device's modalias file in sysfs holds "
                  "it." },
                { MANAGER_ERROR_INVALID_PATH,
                  "A module file is named by its absolute, normalized path beneath a trusted root, ending "
                  "in .ko, "
                  ".ko.xz, .ko.zst or .ko.gz." },
                { MANAGER_ERROR_INVALID_MODULE_PARAMETERS,
                  "Parameters are KEY=VALUE words separated by spaces, as modprobe takes them, without "
                  "control "
                  "characters." },
        };
        const char *reason = json_str(t->p, "reason"), *hint = "See modgatectl(1) for what each verb takes.";

        for (size_t i = 0; i < ELEMENTSOF(hints); i++)
                if (strcmp(hints[i].error, t->error) == 0)
                        hint = hints[i].hint;
        log_error("%s: %s%s%s", t->what, t->error, reason ? ": " : "", reason ?: "");
        log_error("%s", hint);
}

static void text_method_not_found(const ErrorText *t) {
        log_error("%s: modgated does not know %s.", t->what, json_str(t->p, "method") ?: "this method");
        log_error("It is older than this modgatectl (" PROJECT_VERSION "): update modgate and run "
                  "'systemctl restart modgated.service'.");
}

static void text_disconnected(const ErrorText *t) {
        log_error("%s: modgated closed the connection without an answer.", t->what);
        log_error("It may have failed to start or crashed: 'systemctl status modgated.service' and "
                  "'journalctl -u modgated.service' say why.");
}

static void text_other(const ErrorText *t) {
        const char *reason = json_str(t->p, "reason");

        log_error("%s: %s%s%s", t->what, t->error, reason ? ": " : "", reason ?: "");
        log_error("'journalctl -u modgated.service' may say more.");
}

static const struct {
        const char *error;
        void (*text)(const ErrorText *t);
} error_text[] = {
        { MANAGER_ERROR_POLICY_DENIED, text_policy_denied },
        { MANAGER_ERROR_PARAMETER_DENIED, text_parameter_denied },
        { MANAGER_ERROR_UNTRUSTED_ORIGIN, text_untrusted },
        { MANAGER_ERROR_INSTALL_COMMAND_REFUSED, text_install_command },
        { MANAGER_ERROR_MODULE_NOT_FOUND, text_not_found },
        { MANAGER_ERROR_NO_RECORD, text_no_record },
        { MANAGER_ERROR_NOT_LOADED, text_not_loaded },
        { MANAGER_ERROR_LOAD_FAILED, text_load_failed },
        { MANAGER_ERROR_TIMEOUT, text_timeout },
        { MANAGER_ERROR_MODULE_IN_USE, text_in_use },
        { MANAGER_ERROR_UNLOAD_FAILED, text_unload_failed },
        { MANAGER_ERROR_BUSY, text_busy },
        { MANAGER_ERROR_PERMISSION_DENIED, text_permission },
        { MANAGER_ERROR_SEALED, text_sealed },
        { MANAGER_ERROR_CONFIGURATION_INVALID, text_configuration },
        { MANAGER_ERROR_INVALID_NAME, text_invalid },
        { MANAGER_ERROR_INVALID_MODALIAS, text_invalid },
        { MANAGER_ERROR_INVALID_PATH, text_invalid },
        { MANAGER_ERROR_INVALID_MODULE_PARAMETERS, text_invalid },
        { MANAGER_ERROR_INVALID_REQUEST, text_invalid },
        { "org.varlink.service.InvalidParameter", text_invalid },
        { "org.varlink.service.MethodNotFound", text_method_not_found },
        { "io.systemd.Disconnected", text_disconnected },
};

int ctl_log_error(const char *verb, const char *what, const char *error_id, sd_json_variant *parameters) {
        ErrorText t = { .verb = verb, .what = what, .error = error_id, .p = parameters };
        void (*text)(const ErrorText *t) = text_other;

        for (size_t i = 0; i < ELEMENTSOF(error_text); i++)
                if (strcmp(error_text[i].error, error_id) == 0)
                        text = error_text[i].text;
        text(&t);
        return ctl_fail(ctl_exit_from_error(error_id), EIO);
}

int ctl_log_refusal(const char *what, const char *error_id, const char *reason) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;

        if (reason && sd_json_buildo(&p, SD_JSON_BUILD_PAIR_STRING("reason", reason)) < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        text_invalid(&(ErrorText) { .what = what, .error = error_id, .p = p });
        return ctl_fail(CTL_EXIT_INVALID, EINVAL);
}
