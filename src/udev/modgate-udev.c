/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-udev: run by udev rules for a device event. Forwards the device's MODALIAS, or the module
 * names given as arguments, to modgated, and waits for the answer for less time than udev gives a
 * RUN program, so that udev never kills it while a slow probe goes on. The load itself continues in
 * the daemon after a Timeout answer. */

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load-plain.h"
#include "log.h"
#include "macro.h"
#include "udev-context.h"

/* udev kills a RUN program when the event times out (event_timeout, 180 s by default). */
#define DEFAULT_TIMEOUT_USEC (60 * USEC_PER_SEC)
/* At most this many loads at once; a rule names a handful of modules at most. */
#define MAX_PARALLEL 8U

static uint64_t arg_timeout_usec = DEFAULT_TIMEOUT_USEC;
static const char *arg_address = NULL;

static void help(void) {
        printf("%s [OPTIONS...] [MODULE...]\n\n"
               "Ask modgated to load the modules for a device event, or the named modules.\n"
               "Run by udev rules; takes MODALIAS, DEVPATH, SUBSYSTEM, SEQNUM and ACTION from the\n"
               "environment.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "     --timeout=SEC      Wait at most this long for modgated (default: 60s)\n"
               "     --address=PATH     Talk to modgated on this socket\n"
               "                        (default: " MODGATE_VARLINK_ADDRESS ")\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_TIMEOUT,
                ARG_ADDRESS,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                { "address", required_argument, NULL, ARG_ADDRESS },
                {}
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-udev %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_TIMEOUT:
                        r = parse_timeout(optarg, &arg_timeout_usec);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --timeout= value: %s", optarg);
                        break;
                case ARG_ADDRESS:
                        arg_address = optarg;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        return 1;
}

/* Logs the outcome of one request and says whether it fails this program. Not finding a module,
 * a refusal by policy and a load that goes on in the daemon are part of the normal course of device
 * events: udev must not treat them as failures. */
static bool report(const PlainRequest *p) {
        const LoadResult *req = &p->result;
        const char *what = p->name ?: p->modalias;

        switch (req->verdict) {
        case LOAD_VERDICT_LOADED:
                if (req->n_loaded > 0)
                        log_info("%s: %s.", what, req->detail);
                else
                        log_debug("%s: %s.", what, req->detail);
                return false;
        case LOAD_VERDICT_NOT_FOUND:
                log_debug("%s: %s.", what, req->detail);
                return false;
        case LOAD_VERDICT_BLACKLISTED:
                log_info("%s: %s.", what, req->detail);
                return false;
        case LOAD_VERDICT_DENIED:
        case LOAD_VERDICT_INSTALL_REFUSED:
                log_warning("%s: %s.", what, req->detail);
                return false;
        case LOAD_VERDICT_TIMEOUT:
                log_notice("%s: %s; not waiting any longer.", what, req->detail);
                return false;
        case LOAD_VERDICT_UNREACHABLE:
                log_error_errno(req->error ?: ECONNRESET, "%s: %s (%s): %m", what, req->detail,
                                arg_address ?: MODGATE_VARLINK_ADDRESS);
                return true;
        default:
                log_error("%s: %s.", what, req->detail);
                return true;
        }
}

static int run(int argc, char *argv[]) {
        _cleanup_free_ PlainRequest *reqs = NULL;
        RequestContext context;
        size_t n;
        bool failed = false;
        int r;

        log_open();

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        n = optind < argc ? (size_t) (argc - optind) : 1;
        if (optind >= argc && !getenv("MODALIAS"))
                return log_error_errno(EINVAL, "No MODALIAS in the environment and no module named.");

        /* The device event as the daemon records it; fields udev did not set are left out. */
        udev_context_build(getenv("DEVPATH"), getenv("SUBSYSTEM"), getenv("SEQNUM"), getenv("ACTION"),
                           &context);

        reqs = calloc(n, sizeof(PlainRequest));
        if (!reqs)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                /* udev's kmod builtin looks each argument up as a name or an alias: a rule may pass a
                 * device's modalias ("kmod load $env{MODALIAS}"), which names no module; it has a
                 * colon after its bus ("pci:v..."), which no module name has. */
                if (optind < argc && strchr(argv[optind + i], ':'))
                        reqs[i].modalias = argv[optind + i];
                else if (optind < argc)
                        reqs[i].name = argv[optind + i];
                else
                        reqs[i].modalias = getenv("MODALIAS");
                reqs[i].context = &context;
        }

        r = plain_requests_run(&(PlainOptions) {
                                      .address = arg_address,
                                      .timeout_usec = arg_timeout_usec,
                                      .max_parallel = MAX_PARALLEL,
                              },
                              reqs, n);
        if (r < 0) {
                plain_requests_done(reqs, n);
                return log_error_errno(r, "Failed to talk to modgated: %m");
        }

        for (size_t i = 0; i < n; i++)
                failed = report(reqs + i) || failed;
        plain_requests_done(reqs, n);

        return failed ? -EIO : 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
