/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "load-parameters.h"
#include "log.h"
#include "macro.h"
#include "module-name.h"
#include "request.h"

#define DEFAULT_ADDRESS "/run/modgate/io.modgate"

static const char *arg_address = DEFAULT_ADDRESS;
static const char *arg_parameters = NULL;
static const char *arg_source = NULL;
static bool arg_modalias = false;
static bool arg_json = false;
static bool arg_dry_run = false;

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Ask modgated to load or unload kernel modules.\n\n"
               "Commands:\n"
               "  load NAME|PATH...       Load modules by name, alias, or file path beneath a trusted root\n"
               "  unload NAME...          Unload modules that nothing uses\n"
               "  explain NAME|PATH...    Show what load would do, step by step; load nothing\n"
               "  reload                  Read the configuration again and put its policy in force\n\n"
               "Options:\n"
               "  -h --help               Show this help\n"
               "     --address=PATH       Talk to this socket (default: " DEFAULT_ADDRESS ")\n"
               "  -m --modalias           Treat the arguments of load and explain as modaliases\n"
               "  -p --parameters=PARAMS  Module parameters for the requested module ('a=1 b=2')\n"
               "     --source=SOURCE      Ask as a request of kernel, udev, boot or admin (explain judges it\n"
               "                          so; a load claiming a source that is not the caller's is refused)\n"
               "     --dry-run            load: explain instead\n"
               "     --json               Print the daemon's replies as JSON\n",
               program_invocation_short_name);
}

static const char *str(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_string(f) ? sd_json_variant_string(f) : NULL;
}

static void print_modules(sd_json_variant *modules) {
        if (!modules || !sd_json_variant_is_array(modules))
                return;
        for (size_t i = 0; i < sd_json_variant_elements(modules); i++) {
                sd_json_variant *m = sd_json_variant_by_index(modules, i);

                printf("%-24s %-15s %-12s %s\n", str(m, "name") ?: "-", str(m, "outcome") ?: "-",
                       str(m, "role") ?: "-", str(m, "reason") ?: str(m, "path") ?: "(builtin)");
        }
}

/* The daemon's refusals and the ones made here before asking it read alike. */
static int log_refusal(int error, const char *what, const char *error_id, const char *reason) {
        return log_error_errno(error, "%s: %s%s%s", what, error_id, reason ? ": " : "", reason ?: "");
}

static int print_reply(const char *what, sd_json_variant *reply, const char *error) {
        if (arg_json) {
                sd_json_variant_dump(reply, SD_JSON_FORMAT_NEWLINE, stdout, NULL);
                return error ? -EIO : 0;
        }

        print_modules(reply ? sd_json_variant_by_key(reply, "modules") : NULL);
        if (!error)
                return 0;

        if (strcmp(error, "io.modgate.Manager.ModuleNotFound") == 0)
                return log_error_errno(ENOENT, "%s: no such module.", what);
        if (strcmp(error, "io.modgate.Manager.ModuleInUse") == 0)
                return log_error_errno(EBUSY, "%s: in use.", what);
        return log_refusal(EIO, what, error, str(reply, "reason"));
}

static void print_origin(sd_json_variant *o) {
        sd_json_variant *t = o ? sd_json_variant_by_key(o, "trusted") : NULL;

        if (!o)
                return;
        if (t && sd_json_variant_boolean(t))
                printf("    file: trusted by %s evidence (%s on %s)\n", str(o, "evidence") ?: "?",
                       str(o, "fstype") ?: "?", str(o, "backing") ?: str(o, "device") ?: "?");
        else
                printf("    file: not trusted: %s\n", str(o, "reason") ?: "?");
}

/* What a load would do, for a person: the verdict first, then each module with its checks. */
static int print_explanation(const char *what, sd_json_variant *reply, const char *error) {
        sd_json_variant *mods = reply ? sd_json_variant_by_key(reply, "modules") : NULL;
        const char *verdict = str(reply, "verdict");

        if (arg_json || error)
                return print_reply(what, reply, error);

        printf("%s: %s%s%s\n", what, verdict ?: "?", str(reply, "reason") ? ": " : "", str(reply, "reason") ?: "");
        printf("  source %s, mode %s, policy %.12s\n", str(reply, "source") ?: "?", str(reply, "mode") ?: "?",
               str(reply, "policyDigest") ?: "?");
        for (size_t i = 0; mods && i < sd_json_variant_elements(mods); i++) {
                sd_json_variant *m = sd_json_variant_by_index(mods, i);

                printf("  %-22s %-12s %-8s policy %s%s%s\n", str(m, "name") ?: "-", str(m, "role") ?: "-",
                       str(m, "state") ?: "-", str(m, "policy") ?: "-", str(m, "rule") ? " by " : "",
                       str(m, "rule") ?: "");
                print_origin(sd_json_variant_by_key(m, "origin"));
        }
        return verdict && (strcmp(verdict, "denied") == 0 || strcmp(verdict, "untrusted") == 0 ||
                           strcmp(verdict, "not_found") == 0 || strcmp(verdict, "failed") == 0) ? -EPERM : 0;
}

static int print_reload(const char *what, sd_json_variant *reply, const char *error) {
        if (arg_json || error)
                return print_reply(what, reply, error);
        printf("policy %s (%s) in force\n", str(reply, "policyDigest") ?: "?", str(reply, "mode") ?: "?");
        return 0;
}

static int call(sd_varlink *vl, const char *method, const char *what, sd_json_variant *params,
                int (*print)(const char *what, sd_json_variant *reply, const char *error)) {
        sd_json_variant *reply = NULL;
        const char *error = NULL;
        int r;

        r = sd_varlink_call(vl, method, params, &reply, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to call %s: %m", method);
        return print(what, reply, error);
}

/* Each verb builds its parameters and checks them as the daemon would: what it would refuse as
 * invalid is refused here, in its words, and not sent. */
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
                return log_oom();
        r = load_parameters_parse(p, &lp, &f);
        if (r < 0)
                return log_oom();
        if (r > 0)
                return log_refusal(EINVAL, arg, f.error, f.reason ?: f.field);

        *ret = TAKE_PTR(p);
        return 0;
}

static int build_unload(const char *arg, sd_json_variant **ret) {
        if (!module_name_is_valid(arg))
                return log_refusal(EINVAL, arg, "io.modgate.Manager.InvalidName", NULL);
        if (sd_json_buildo(ret, SD_JSON_BUILD_PAIR_STRING("name", arg)) < 0)
                return log_oom();
        return 0;
}

static int build_none(const char *arg, sd_json_variant **ret) {
        return sd_json_variant_new_object(ret, NULL, 0) < 0 ? log_oom() : 0;
}

typedef struct Verb {
        const char *name;
        const char *method;
        bool takes_arguments;   /* one call per argument; else one call without */
        int (*build)(const char *arg, sd_json_variant **ret);
        int (*print)(const char *what, sd_json_variant *reply, const char *error);
} Verb;

static const Verb verbs[] = {
        { "load", "io.modgate.Manager.Load", true, build_load, print_reply },
        { "unload", "io.modgate.Manager.Unload", true, build_unload, print_reply },
        { "explain", "io.modgate.Manager.Explain", true, build_load, print_explanation },
        { "reload", "io.modgate.Manager.Reload", false, build_none, print_reload },
};

/* Asks for each argument whose request was built; connects only when there is one. */
static int send_all(const Verb *verb, char **args, sd_json_variant **params, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        int r, ret = 0;

        for (size_t i = 0; i < n; i++) {
                if (!params[i])
                        continue;
                if (!vl) {
                        r = sd_varlink_connect_address(&vl, arg_address);
                        if (r < 0)
                                return log_error_errno(r, "Failed to connect to %s: %m", arg_address);
                }
                r = call(vl, verb->method, args[i], params[i], verb->print);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_ADDRESS = 0x100, ARG_JSON, ARG_SOURCE, ARG_DRY_RUN };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "modalias", no_argument, NULL, 'm' },
                { "parameters", required_argument, NULL, 'p' },
                { "json", no_argument, NULL, ARG_JSON },
                { "source", required_argument, NULL, ARG_SOURCE },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hmp:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_ADDRESS:
                        arg_address = optarg;
                        break;
                case 'm':
                        arg_modalias = true;
                        break;
                case 'p':
                        arg_parameters = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_SOURCE:
                        if (request_source_from_string(optarg) < 0)
                                return log_error_errno(EINVAL, "--source=%s: the sources are kernel, udev, boot "
                                                       "and admin.", optarg);
                        arg_source = optarg;
                        break;
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        if (argc - optind < 1)
                return log_error_errno(EINVAL, "Expected a command; see --help.");
        return 1;
}

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].name, name) == 0)
                        return verbs + i;
        return NULL;
}

static int run(int argc, char *argv[]) {
        _cleanup_free_ sd_json_variant **params = NULL;
        const Verb *verb;
        size_t n;
        int r, ret = 0;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        verb = verb_find(arg_dry_run && streq_ptr(argv[optind], "load") ? "explain" : argv[optind]);
        if (!verb)
                return log_error_errno(EINVAL, "Unknown command '%s'; see --help.", argv[optind]);
        n = (size_t) (argc - optind - 1);
        if (verb->takes_arguments && n == 0)
                return log_error_errno(EINVAL, "%s needs at least one argument; see --help.", verb->name);
        if (!verb->takes_arguments && n > 0)
                return log_error_errno(EINVAL, "%s takes no arguments.", verb->name);
        if (!verb->takes_arguments) {
                char *none[] = { (char *) verb->name };
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;

                r = verb->build(NULL, &p);
                return r < 0 ? r : send_all(verb, none, &p, 1);
        }

        params = calloc(n, sizeof(sd_json_variant *));
        if (!params)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                r = verb->build(argv[optind + 1 + i], params + i);
                if (r < 0 && ret == 0)
                        ret = r;
        }

        r = send_all(verb, argv + optind + 1, params, n);
        if (r < 0 && ret == 0)
                ret = r;
        for (size_t i = 0; i < n; i++)
                sd_json_variant_unref(params[i]);
        return ret;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
