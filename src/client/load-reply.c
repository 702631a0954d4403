/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Reading io.modgate.Manager.Load's answers: pure functions of the reply. */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "load-reply.h"
#include "macro.h"
#include "varlink-errors.h"


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

static const char *field_string(const JsonValue *v, const char *key) {
        return json_string(json_by_key(v, key));
}

static size_t field_elements(const JsonValue *v, const char *key) {
        return json_elements(json_by_key(v, key));
}

static bool error_is(const char *error_id, const char *name) {
        return strcmp(error_id, name) == 0;
}

LoadVerdict load_verdict_from_reply(const char *error_id, const JsonValue *parameters) {
        static const char *const invalid[] = {
                MANAGER_ERROR_INVALID_NAME, MANAGER_ERROR_INVALID_MODALIAS, MANAGER_ERROR_INVALID_PATH,
                MANAGER_ERROR_INVALID_MODULE_PARAMETERS, MANAGER_ERROR_INVALID_REQUEST,
        };

        if (!error_id)
                return LOAD_VERDICT_LOADED;

        if (error_is(error_id, MANAGER_ERROR_MODULE_NOT_FOUND))
                return field_elements(parameters, "blacklisted") > 0 ? LOAD_VERDICT_BLACKLISTED
                                                                      : LOAD_VERDICT_NOT_FOUND;
        if (error_is(error_id, MANAGER_ERROR_UNTRUSTED_ORIGIN) ||
            error_is(error_id, MANAGER_ERROR_POLICY_DENIED) ||
            error_is(error_id, MANAGER_ERROR_PARAMETER_DENIED))
                return LOAD_VERDICT_DENIED;
        if (error_is(error_id, MANAGER_ERROR_INSTALL_COMMAND_REFUSED))
                return LOAD_VERDICT_INSTALL_REFUSED;
        if (error_is(error_id, MANAGER_ERROR_TIMEOUT))
                return LOAD_VERDICT_TIMEOUT;
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++)
                if (error_is(error_id, invalid[i]))
                        return LOAD_VERDICT_INVALID;
        if (strcmp(error_id, "org.varlink.service.InvalidParameter") == 0 ||
            strcmp(error_id, "org.varlink.service.MethodNotFound") == 0 ||
            strcmp(error_id, "org.varlink.service.InterfaceNotFound") == 0)
                return LOAD_VERDICT_INVALID;

        /* Generated locally by the client, not sent by the daemon. */
        if (strcmp(error_id, VARLINK_ERROR_TIMEOUT) == 0)
                return LOAD_VERDICT_NO_REPLY;
        if (strcmp(error_id, VARLINK_ERROR_DISCONNECTED) == 0 ||
            strcmp(error_id, VARLINK_ERROR_PROTOCOL) == 0 || strcmp(error_id, VARLINK_ERROR_SYSTEM) == 0)
                return LOAD_VERDICT_UNREACHABLE;

        return LOAD_VERDICT_FAILED;
}

/* Appends the "name" of each element of the array at key whose "outcome" is outcome (any, if NULL),
 * and counts them. With f NULL, only counts. */
static size_t put_names(FILE *f, const JsonValue *parameters, const char *key, const char *outcome) {
        const JsonValue *a = json_by_key(parameters, key);
        size_t n = 0;

        for (size_t i = 0; i < json_elements(a); i++) {
                const JsonValue *e = json_by_index(a, i);
                const char *name = json_string(e) ?: field_string(e, "name");
                const char *o = field_string(e, "outcome");

                if (!name || (outcome && (!o || strcmp(o, outcome) != 0)))
                        continue;
                if (f)
                        fprintf(f, "%s%s", n > 0 ? ", " : "", name);
                n++;
        }
        return n;
}

static void describe_success(FILE *f, const JsonValue *parameters, size_t *ret_n_loaded) {
        const JsonValue *mods = json_by_key(parameters, "modules");
        size_t n = json_elements(mods);
        const char *requested = NULL, *outcome = NULL;

        /* Dependencies come before the module that was asked for, softdep post: modules after it. */
        for (size_t i = 0; i < n; i++) {
                const JsonValue *e = json_by_index(mods, i);
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

static void describe_error(FILE *f, const char *error_id, const JsonValue *parameters) {
        const char *module = field_string(parameters, "module"),
                   *reason = field_string(parameters, "reason"), *path = field_string(parameters, "path"),
                   *errno_name = field_string(parameters, "errnoName");

        switch (load_verdict_from_reply(error_id, parameters)) {
        case LOAD_VERDICT_NOT_FOUND:
                fputs("no module matches", f);
                break;
        case LOAD_VERDICT_BLACKLISTED:
                fputs("every match is blacklisted in modprobe.d: ", f);
                (void) put_names(f, parameters, "blacklisted", NULL);
                break;
        case LOAD_VERDICT_DENIED:
                /* The policy's reason names its rule already: "vxlan needs udp_tunnel, denied by
                 * F:3 ...". */
                if (!error_is(error_id, MANAGER_ERROR_UNTRUSTED_ORIGIN)) {
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
                if (error_is(error_id, MANAGER_ERROR_BUSY)) {
                        fprintf(f, "modgated stayed busy until no time was left: %s", reason ?: "busy");
                        if (module)
                                fprintf(f, " (%s)", module);
                        break;
                }
                if (!error_is(error_id, MANAGER_ERROR_LOAD_FAILED)) {
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

int load_reply_describe(const char *error_id, const JsonValue *parameters, char **ret_detail,
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

        assert(f);

        /* As describe_error() words the daemon's refusal, but saying that it was not sent. */
        if (asprintf(&s, "refused before asking modgated: %s%s%s%s", f->error, why ? " (" : "", why ?: "",
                     why ? ")" : "") < 0)
                return -ENOMEM;
        *ret_detail = s;
        return 0;
}

int load_result_set(LoadResult *res, LoadVerdict verdict, int error, const char *error_id,
                    const char *detail) {
        assert(res);

        load_result_done(res);
        *res = (LoadResult) {
                .verdict = verdict,
                .error = error,
                .error_id = error_id ? strdup(error_id) : NULL,
                .detail = strdup(detail ?: load_verdict_to_string(verdict)),
        };
        return (error_id && !res->error_id) || !res->detail ? -ENOMEM : 0;
}

int load_result_from_reply(LoadResult *res, const char *error_id, const JsonValue *parameters) {
        int r;

        assert(res);

        load_result_done(res);
        res->verdict = load_verdict_from_reply(error_id, parameters);
        res->error = res->verdict == LOAD_VERDICT_UNREACHABLE ? -ECONNRESET : 0;
        if (error_id) {
                res->error_id = strdup(error_id);
                if (!res->error_id)
                        return -ENOMEM;
        }
        r = load_reply_describe(error_id, parameters, &res->detail, &res->n_loaded);
        if (r < 0)
                return r;
        return 0;
}

void load_result_done(LoadResult *res) {
        free(res->error_id);
        free(res->detail);
        res->error_id = res->detail = NULL;
}

/* The daemon starts its timer when it reads the request, which may sit in the socket while the
 * daemon starts: a quarter of the time is left for that, so that Timeout arrives before our own
 * deadline. */
uint64_t load_daemon_timeout(uint64_t left_usec) {
        if (left_usec == USEC_INFINITY)
                return USEC_INFINITY;
        return left_usec - left_usec / 4;
}

/* Busy (a load of the same module with other parameters or from another file in flight, or too many
 * requests pending) is asked again after a pause that doubles from the first to the longest, within
 * the client's own deadline; without one, for BUSY_RETRY_FOR_USEC. */
#define BUSY_RETRY_FIRST_USEC (50U * 1000U)
#define BUSY_RETRY_MAX_USEC (1U * USEC_PER_SEC)
#define BUSY_RETRY_FOR_USEC (60U * USEC_PER_SEC)

uint64_t load_busy_retry_at(unsigned busy, uint64_t first_busy, uint64_t now, uint64_t deadline) {
        uint64_t pause = BUSY_RETRY_FIRST_USEC, until;

        for (unsigned i = 1; i < busy && pause < BUSY_RETRY_MAX_USEC; i++)
                pause *= 2;
        pause = MIN(pause, (uint64_t) BUSY_RETRY_MAX_USEC);
        until = deadline != USEC_INFINITY ? deadline : first_busy + BUSY_RETRY_FOR_USEC;
        return now + pause < until ? now + pause : 0;
}

int parse_timeout(const char *s, uint64_t *ret_usec) {
        uint64_t whole = 0, frac = 0, scale = USEC_PER_SEC, unit = USEC_PER_SEC, usec;
        const char *p = s;

        assert(ret_usec);

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
