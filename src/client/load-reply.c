/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Reading io.modgate.Manager.Load's answers: pure functions of the reply. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-varlink.h>

#include "load-client.h"
#include "macro.h"

#define ERROR_PREFIX "io.modgate.Manager."

static const char *const verdict_table[_LOAD_VERDICT_MAX] = {
        [LOAD_VERDICT_LOADED] = "loaded",
        [LOAD_VERDICT_NOT_FOUND] = "not-found",
        [LOAD_VERDICT_BLACKLISTED] = "blacklisted",
        [LOAD_VERDICT_DENIED] = "denied",
        [LOAD_VERDICT_INSTALL_REFUSED] = "install-command-refused",
        [LOAD_VERDICT_TIMEOUT] = "timeout",
        [LOAD_VERDICT_FAILED] = "failed",
        [LOAD_VERDICT_INVALID] = "invalid",
        [LOAD_VERDICT_NO_REPLY] = "no-reply",
        [LOAD_VERDICT_UNREACHABLE] = "unreachable",
};

const char *load_verdict_to_string(LoadVerdict v) {
        return v >= 0 && v < _LOAD_VERDICT_MAX ? verdict_table[v] : NULL;
}

static const char *field_string(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_string(f) ? sd_json_variant_string(f) : NULL;
}

static size_t field_elements(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_array(f) ? sd_json_variant_elements(f) : 0;
}

static bool error_is(const char *error_id, const char *name) {
        return strncmp(error_id, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0 &&
                strcmp(error_id + strlen(ERROR_PREFIX), name) == 0;
}

LoadVerdict load_verdict_from_reply(const char *error_id, sd_json_variant *parameters) {
        static const char *const invalid[] = {
                "InvalidName", "InvalidModalias", "InvalidPath", "InvalidModuleParameters", "InvalidRequest",
        };

        if (!error_id)
                return LOAD_VERDICT_LOADED;

        if (error_is(error_id, "ModuleNotFound"))
                return field_elements(parameters, "blacklisted") > 0 ? LOAD_VERDICT_BLACKLISTED
                                                                      : LOAD_VERDICT_NOT_FOUND;
        if (error_is(error_id, "UntrustedOrigin") || error_is(error_id, "PolicyDenied") ||
            error_is(error_id, "ParameterDenied"))
                return LOAD_VERDICT_DENIED;
        if (error_is(error_id, "InstallCommandRefused"))
                return LOAD_VERDICT_INSTALL_REFUSED;
        if (error_is(error_id, "Timeout"))
                return LOAD_VERDICT_TIMEOUT;
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++)
                if (error_is(error_id, invalid[i]))
                        return LOAD_VERDICT_INVALID;
        if (strcmp(error_id, SD_VARLINK_ERROR_INVALID_PARAMETER) == 0 ||
            strcmp(error_id, SD_VARLINK_ERROR_METHOD_NOT_FOUND) == 0 ||
            strcmp(error_id, SD_VARLINK_ERROR_INTERFACE_NOT_FOUND) == 0)
                return LOAD_VERDICT_INVALID;

        /* Generated locally by sd-varlink, not sent by the daemon. */
        if (strcmp(error_id, SD_VARLINK_ERROR_TIMEOUT) == 0)
                return LOAD_VERDICT_NO_REPLY;
        if (strcmp(error_id, SD_VARLINK_ERROR_DISCONNECTED) == 0 || strcmp(error_id, SD_VARLINK_ERROR_PROTOCOL) == 0 ||
            strcmp(error_id, SD_VARLINK_ERROR_SYSTEM) == 0)
                return LOAD_VERDICT_UNREACHABLE;

        return LOAD_VERDICT_FAILED;
}

/* Appends the "name" of each element of the array at key whose "outcome" is outcome (any, if NULL),
 * and counts them. With f NULL, only counts. */
static size_t put_names(FILE *f, sd_json_variant *parameters, const char *key, const char *outcome) {
        sd_json_variant *a = parameters ? sd_json_variant_by_key(parameters, key) : NULL;
        size_t n = 0;

        if (!a || !sd_json_variant_is_array(a))
                return 0;

        for (size_t i = 0; i < sd_json_variant_elements(a); i++) {
                sd_json_variant *e = sd_json_variant_by_index(a, i);
                const char *name = sd_json_variant_is_string(e) ? sd_json_variant_string(e) : field_string(e, "name");
                const char *o = field_string(e, "outcome");

                if (!name || (outcome && (!o || strcmp(o, outcome) != 0)))
                        continue;
                if (f)
                        fprintf(f, "%s%s", n > 0 ? ", " : "", name);
                n++;
        }
        return n;
}

static void describe_success(FILE *f, sd_json_variant *parameters, size_t *ret_n_loaded) {
        sd_json_variant *mods = parameters ? sd_json_variant_by_key(parameters, "modules") : NULL;
        size_t n = mods && sd_json_variant_is_array(mods) ? sd_json_variant_elements(mods) : 0;
        const char *requested = NULL, *outcome = NULL;

        /* Dependencies come before the module that was asked for, softdep post: modules after it. */
        for (size_t i = 0; i < n; i++) {
                sd_json_variant *e = sd_json_variant_by_index(mods, i);
                const char *role = field_string(e, "role");

                if (!requested || !role || strcmp(role, "requested") == 0) {
                        requested = field_string(e, "name");
                        outcome = field_string(e, "outcome");
                }
                if (role && strcmp(role, "requested") == 0)
                        break;
        }

        *ret_n_loaded = put_names(NULL, parameters, "modules", "loaded");
        if (*ret_n_loaded > 0) {
                fputs("loaded ", f);
                (void) put_names(f, parameters, "modules", "loaded");
        } else if (!requested)
                fputs("nothing to load", f);
        else if (outcome && strcmp(outcome, "builtin") == 0)
                fprintf(f, "%s is built into the kernel", requested);
        else
                fprintf(f, "%s is loaded already", requested);

        if (field_elements(parameters, "blacklisted") > 0) {
                fputs("; blacklisted: ", f);
                (void) put_names(f, parameters, "blacklisted", NULL);
        }
}

static void describe_error(FILE *f, const char *error_id, sd_json_variant *parameters) {
        const char *module = field_string(parameters, "module"), *reason = field_string(parameters, "reason"),
                   *path = field_string(parameters, "path"), *errno_name = field_string(parameters, "errnoName");

        switch (load_verdict_from_reply(error_id, parameters)) {
        case LOAD_VERDICT_NOT_FOUND:
                fputs("no module matches", f);
                break;
        case LOAD_VERDICT_BLACKLISTED:
                fputs("every match is blacklisted in modprobe.d: ", f);
                (void) put_names(f, parameters, "blacklisted", NULL);
                break;
        case LOAD_VERDICT_DENIED:
                /* The policy's reason names its rule already: "vxlan needs udp_tunnel, denied by F:3 ...". */
                if (!error_is(error_id, "UntrustedOrigin")) {
                        fprintf(f, "the module policy denies it: %s", reason ?: "no reason given");
                        break;
                }
                fprintf(f, "modgate refused %s: %s", module ?: "a module", reason ?: "untrusted origin");
                if (path)
                        fprintf(f, " (%s)", path);
                break;
        case LOAD_VERDICT_INSTALL_REFUSED:
                fprintf(f, "modprobe.d has an install command for %s, which modgate does not run: %s",
                        module ?: "a module", field_string(parameters, "command") ?: "?");
                break;
        case LOAD_VERDICT_TIMEOUT:
                fputs("still loading in modgated: ", f);
                if (put_names(f, parameters, "pending", NULL) == 0)
                        fputs("?", f);
                break;
        case LOAD_VERDICT_FAILED:
                if (error_is(error_id, "Busy")) {
                        fprintf(f, "modgated stayed busy until no time was left: %s", reason ?: "busy");
                        if (module)
                                fprintf(f, " (%s)", module);
                        break;
                }
                if (!error_is(error_id, "LoadFailed")) {
                        fprintf(f, "modgated answered %s", error_id);
                        break;
                }
                fprintf(f, "%s: %s", module ?: "a module", reason ?: "load failed");
                if (errno_name)
                        fprintf(f, " (%s)", errno_name);
                break;
        case LOAD_VERDICT_INVALID:
                fprintf(f, "modgated refused the request: %s", error_id);
                if (reason || field_string(parameters, "parameter"))
                        fprintf(f, " (%s)", reason ?: field_string(parameters, "parameter"));
                break;
        case LOAD_VERDICT_NO_REPLY:
                fputs("modgated did not answer in time", f);
                break;
        default:
                fprintf(f, "connection to modgated failed (%s)", error_id);
                break;
        }
}

int load_reply_describe(const char *error_id, sd_json_variant *parameters, char **ret_detail,
                        size_t *ret_n_loaded) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, n_loaded = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;

        if (error_id)
                describe_error(f, error_id, parameters);
        else
                describe_success(f, parameters, &n_loaded);

        if (fclose(f) != 0)
                return -ENOMEM;

        *ret_detail = TAKE_PTR(buf);
        if (ret_n_loaded)
                *ret_n_loaded = n_loaded;
        return 0;
}

int load_refusal_describe(const LoadRefusal *f, char **ret_detail) {
        const char *why = f->reason ?: f->field;
        char *s;

        /* As describe_error() words the daemon's refusal, but saying that it was not sent. */
        if (asprintf(&s, "refused before asking modgated: %s%s%s%s", f->error, why ? " (" : "", why ?: "",
                     why ? ")" : "") < 0)
                return -ENOMEM;
        *ret_detail = s;
        return 0;
}

int parse_timeout(const char *s, uint64_t *ret_usec) {
        uint64_t whole = 0, frac = 0, scale = USEC_PER_SEC, unit = USEC_PER_SEC, usec;
        const char *p = s;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;

        for (; *p >= '0' && *p <= '9'; p++) {
                whole = whole * 10 + (uint64_t) (*p - '0');
                if (whole > 3600 * 1000)
                        return -ERANGE;
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++)
                        if (scale > 1) {
                                scale /= 10;
                                frac += (uint64_t) (*p - '0') * scale;
                        }
        }
        if (strcmp(p, "ms") == 0)
                unit = USEC_PER_MSEC;
        else if (*p != '\0' && strcmp(p, "s") != 0)
                return -EINVAL;

        /* frac is in millionths of the unit. */
        usec = whole * unit + frac * unit / USEC_PER_SEC;
        if (usec == 0)
                return -ERANGE;
        if (usec > 3600 * USEC_PER_SEC)
                return -ERANGE;

        *ret_usec = usec;
        return 0;
}
