/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "capability.h"
#include "log.h"
#include "manager.h"
#include "module-name.h"
#include "strv.h"

static char *arg_listen = NULL;
static char *arg_trusted_root = NULL;
static unsigned arg_workers = 4;
static char **arg_load_alone = NULL;
static int64_t arg_idle_exit_sec = -1;  /* -1: 30 s when socket-activated, never with --listen= */

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Load kernel modules from trusted files only, on request over varlink.\n\n"
               "  -h --help                Show this help\n"
               "     --version             Show package version\n"
               "     --listen=PATH         Listen on this socket instead of the one passed by the\n"
               "                           service manager (FileDescriptorName=varlink)\n"
               "     --trusted-root=DIR    Load modules from beneath DIR\n"
               "                           (default: /usr/lib/modules/$(uname -r))\n"
               "     --workers=N           Run up to N module loads at once (1..64, default 4)\n"
               "     --load-alone=NAME     Load NAME only while no other module loads (repeatable)\n"
               "     --idle-exit-sec=SEC   Exit after SEC seconds without clients or loads; 0: never\n"
               "                           (default: 30 when socket-activated, 0 with --listen=)\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_LISTEN,
                ARG_TRUSTED_ROOT,
                ARG_WORKERS,
                ARG_LOAD_ALONE,
                ARG_IDLE_EXIT_SEC,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "listen", required_argument, NULL, ARG_LISTEN },
                { "trusted-root", required_argument, NULL, ARG_TRUSTED_ROOT },
                { "workers", required_argument, NULL, ARG_WORKERS },
                { "load-alone", required_argument, NULL, ARG_LOAD_ALONE },
                { "idle-exit-sec", required_argument, NULL, ARG_IDLE_EXIT_SEC },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgated %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_LISTEN:
                        free(arg_listen);
                        arg_listen = strdup(optarg);
                        if (!arg_listen)
                                return log_oom();
                        break;
                case ARG_TRUSTED_ROOT:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--trusted-root= takes an absolute path: %s",
                                                       optarg);
                        free(arg_trusted_root);
                        arg_trusted_root = strdup(optarg);
                        if (!arg_trusted_root)
                                return log_oom();
                        break;
                case ARG_WORKERS: {
                        char *end;
                        unsigned long n;

                        errno = 0;
                        n = strtoul(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end != '\0' || n < 1 || n > WORKERS_MAX)
                                return log_error_errno(EINVAL, "--workers= takes a number from 1 to %u: %s",
                                                       WORKERS_MAX, optarg);
                        arg_workers = (unsigned) n;
                        break;
                }
                case ARG_IDLE_EXIT_SEC: {
                        char *end;
                        unsigned long long n;

                        errno = 0;
                        n = strtoull(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end != '\0' || n > 86400ULL * 365)
                                return log_error_errno(EINVAL, "--idle-exit-sec= takes a number of seconds: %s",
                                                       optarg);
                        arg_idle_exit_sec = (int64_t) n;
                        break;
                }
                case ARG_LOAD_ALONE:
                        if (!module_name_is_valid(optarg))
                                return log_error_errno(EINVAL, "--load-alone= takes a module name: %s", optarg);
                        if (strv_extend(&arg_load_alone, optarg) < 0)
                                return log_oom();
                        module_name_normalize(arg_load_alone[strv_length(arg_load_alone) - 1]);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        if (optind < argc)
                return log_error_errno(EINVAL, "%s takes no positional arguments.",
                                       program_invocation_short_name);
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        log_open();

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = capability_keep_only_sys_module();
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities other than CAP_SYS_MODULE: %m");

        r = manager_new(&m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate manager: %m");

        m->listen_address = TAKE_PTR(arg_listen);
        m->trusted_root_path = TAKE_PTR(arg_trusted_root);
        m->n_workers = arg_workers;
        if (arg_idle_exit_sec < 0)
                arg_idle_exit_sec = m->listen_address ? 0 : 30;
        m->idle_exit_usec = (uint64_t) arg_idle_exit_sec * 1000000U;
        m->load_alone = TAKE_PTR(arg_load_alone);

        r = manager_startup(m);
        if (r < 0) {
                (void) sd_notifyf(false, "STATUS=Failed to start up: %s\nERRNO=%i", strerror(-r), -r);
                return r;
        }

        return manager_run(m);
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);

        free(arg_listen);
        free(arg_trusted_root);
        strv_free(arg_load_alone);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
