/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-json.h>

#include "ctl-error.h"
#include "ctl-output.h"
#include "ctl-pager.h"
#include "ctl.h"
#include "log.h"
#include "macro.h"
#include "request.h"
#include "strv.h"

const char *arg_address = DEFAULT_ADDRESS;
const char *arg_parameters = NULL;
const char *arg_source = NULL;
bool arg_modalias = false;
bool arg_no_pager = false;
bool arg_legend = true;
char **arg_seal_load = NULL;
sd_json_format_flags_t arg_json_format_flags = SD_JSON_FORMAT_OFF;
static bool arg_dry_run = false;

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "%sAsk modgated, the kernel module loader, to load, unload and explain modules, and "
               "show what it did.%s\n\n"
               "Inspection:\n"
               "  status                  Show the daemon's mode, policy, trusted roots and counters\n"
               "  list [PATTERN...]       List this boot's record of each module\n"
               "  describe NAME...        Show one module's record: who asked, which file, what evidence\n"
               "  explain NAME|PATH...    Show what load would do, step by step; load nothing\n"
               "  monitor [NAME...]       Follow requests, loads and refusals as they happen\n"
               "  plot                    Write an SVG of this boot's module requests, from the journal\n\n"
               "Loading:\n"
               "  load NAME|PATH...       Load modules by name, alias, or file path beneath a trusted root\n"
               "  unload NAME...          Unload modules that nothing uses\n\n"
               "Daemon and kernel:\n"
               "  reload                  Read the configuration again and put its policy in force\n"
               "  seal                    Load the --load= list, then forbid module loading until reboot\n\n"
               "Options:\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "     --address=PATH       Talk to this socket (default: " DEFAULT_ADDRESS ")\n"
               "  -m --modalias           Treat the arguments of load and explain as modaliases\n"
               "  -p --parameters=PARAMS  Module parameters for the requested module ('a=1 b=2')\n"
               "     --source=SOURCE      Ask as a request of kernel, udev, boot or admin (explain judges "
               "it\n"
               "                          so; a load claiming a source that is not the caller's is "
               "refused)\n"
               "     --dry-run            load: explain instead\n"
               "     --load=NAME[,NAME]   seal: load these first, as the boot list would\n"
               "     --json=MODE          Print the daemon's replies as JSON: pretty, short or off\n"
               "  -j                      Same as --json=pretty on a terminal, --json=short otherwise\n"
               "     --no-pager           Do not pipe output into a pager\n"
               "     --no-legend          Do not print table headers and footers\n\n"
               "See the modgatectl(1) man page for details.\n",
               program_invocation_short_name, ansi(ANSI_BOLD), ansi(ANSI_NORMAL));
}

static int parse_json(const char *s) {
        if (!s || strcmp(s, "auto") == 0)
                arg_json_format_flags =
                        isatty(STDOUT_FILENO) ? SD_JSON_FORMAT_PRETTY : SD_JSON_FORMAT_NEWLINE;
        else if (strcmp(s, "pretty") == 0)
                arg_json_format_flags = SD_JSON_FORMAT_PRETTY;
        else if (strcmp(s, "short") == 0)
                arg_json_format_flags = SD_JSON_FORMAT_NEWLINE;
        else if (strcmp(s, "off") == 0)
                arg_json_format_flags = SD_JSON_FORMAT_OFF;
        else if (strcmp(s, "help") == 0) {
                puts("pretty\nshort\noff");
                return 0;
        } else
                return ctl_fail(CTL_EXIT_INVALID,
                                log_error_errno(EINVAL,
                                                "--json=%s: the modes are pretty, short "
                                                "and off.",
                                                s));
        return 1;
}

static int parse_seal_load(const char *s) {
        for (const char *p = s; *p;) {
                size_t n = strcspn(p, ", ");

                if (n > 0 && strv_consume(&arg_seal_load, strndup(p, n)) < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
                p += n + strspn(p + n, ", ");
        }
        return 1;
}

enum {
        ARG_VERSION = 0x100,
        ARG_ADDRESS,
        ARG_JSON,
        ARG_SOURCE,
        ARG_DRY_RUN,
        ARG_NO_PAGER,
        ARG_NO_LEGEND,
        ARG_LOAD,
};

static int parse_option(int c) {
        switch (c) {
        case 'h':
                help();
                return 0;
        case ARG_VERSION:
                puts("modgatectl " PROJECT_VERSION);
                return 0;
        case ARG_ADDRESS:
                arg_address = optarg;
                return 1;
        case 'm':
                arg_modalias = true;
                return 1;
        case 'p':
                arg_parameters = optarg;
                return 1;
        case ARG_JSON:
                return parse_json(optarg);
        case 'j':
                return parse_json("auto");
        case ARG_SOURCE:
                if (request_source_from_string(optarg) < 0)
                        return ctl_fail(CTL_EXIT_INVALID,
                                        log_error_errno(EINVAL,
                                                        "--source=%s: the sources are "
                                                        "kernel, udev, boot and admin.",
                                                        optarg));
                arg_source = optarg;
                return 1;
        case ARG_DRY_RUN:
                arg_dry_run = true;
                return 1;
        case ARG_NO_PAGER:
                arg_no_pager = true;
                return 1;
        case ARG_NO_LEGEND:
                arg_legend = false;
                return 1;
        case ARG_LOAD:
                return parse_seal_load(optarg);
        case '?':
                return ctl_fail(CTL_EXIT_INVALID, EINVAL);
        default:
                abort();
        }
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "modalias", no_argument, NULL, 'm' },
                { "parameters", required_argument, NULL, 'p' },
                { "json", optional_argument, NULL, ARG_JSON },
                { "source", required_argument, NULL, ARG_SOURCE },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "load", required_argument, NULL, ARG_LOAD },
                {}
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "hmp:j", options, NULL)) >= 0) {
                r = parse_option(c);
                if (r <= 0)
                        return r;
        }

        if (argc - optind < 1)
                return ctl_fail(CTL_EXIT_INVALID,
                                log_error_errno(EINVAL, "Expected a command; see --help."));
        return 1;
}

typedef struct Verb {
        const char *name;
        size_t min_args, max_args;
        int (*run)(char **args, size_t n);
} Verb;

#define ANY SIZE_MAX

static const Verb verbs[] = {
        { "status", 0, 0, verb_status },
        { "list", 0, ANY, verb_list },
        { "describe", 1, ANY, verb_describe },
        { "explain", 1, ANY, verb_explain },
        { "monitor", 0, ANY, verb_monitor },
        { "load", 1, ANY, verb_load },
        { "unload", 1, ANY, verb_unload },
        { "reload", 0, 0, verb_reload },
        { "seal", 0, 0, verb_seal },
        { "plot", 0, 0, verb_plot },
};

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].name, name) == 0)
                        return verbs + i;
        return NULL;
}

static int dispatch_verb(char **args, size_t n) {
        const Verb *verb = verb_find(arg_dry_run && streq_ptr(args[0], "load") ? "explain" : args[0]);

        if (!verb)
                return ctl_fail(CTL_EXIT_INVALID,
                                log_error_errno(EINVAL, "Unknown command '%s'; see --help.", args[0]));
        if (n - 1 < verb->min_args)
                return ctl_fail(CTL_EXIT_INVALID, log_error_errno(EINVAL, "%s needs at least one argument; "
                                                                  "see --help.", verb->name));
        if (n - 1 > verb->max_args)
                return ctl_fail(CTL_EXIT_INVALID,
                                log_error_errno(EINVAL, "%s takes no arguments%s.", verb->name,
                                                streq_ptr(verb->name, "seal") ?
                                                        "; name the modules to load first with "
                                                        "--load=NAME" :
                                                        ""));
        if (arg_seal_load && !streq_ptr(verb->name, "seal"))
                return ctl_fail(CTL_EXIT_INVALID, log_error_errno(EINVAL, "--load= goes with seal; to load "
                                                                  "modules, use 'modgatectl load NAME'."));
        return verb->run(args + 1, n - 1);
}

static int run(int argc, char *argv[]) {
        int r;

        (void) setlocale(LC_CTYPE, "");
        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        return dispatch_verb(argv + optind, (size_t) (argc - optind));
}

int main(int argc, char *argv[]) {
        int r;

        r = run(argc, argv);
        pager_close();
        strv_free(arg_seal_load);
        return ctl_exit_status(r);
}
