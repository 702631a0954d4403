/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-modprobe: the program the kernel runs for request_module() when kernel.modprobe points at
 * it. The kernel runs "modprobe -q -- NAME" with no open file descriptors and at most 50 of these at
 * once, and the caller in the kernel waits for the exit status: so this only checks the name, asks
 * modgated, and exits 0 when the module is there, 1 otherwise. It never runs anything else. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load-plain.h"
#include "log.h"
#include "macro.h"
#include "request-name.h"

/* Kept short: a kernel thread waits, and the kernel's slots for these helpers are few. */
#define DEFAULT_TIMEOUT_USEC (15 * USEC_PER_SEC)
/* modgated not running: its socket waits for the service manager to start it. When the process whose
 * system call needs the module is PID 1 itself, that never happens while this helper waits, so the
 * wait for a start is shorter than for a load; socket activation takes well under a second. */
#define DEFAULT_START_TIMEOUT_USEC (5 * USEC_PER_SEC)

static bool arg_quiet = false;
static uint64_t arg_timeout_usec = DEFAULT_TIMEOUT_USEC;
static uint64_t arg_start_timeout_usec = DEFAULT_START_TIMEOUT_USEC;
static const char *arg_address = NULL;

/* Like modprobe, every message names the program: it may end up in the kernel log. */
#define TAG "modgate-modprobe: "

#define KERNEL_MODPROBE "/proc/sys/kernel/modprobe"

static void help(void) {
        printf("%s [OPTIONS...] [--] NAME\n"
               "%s --set-kernel-modprobe\n\n"
               "Ask modgated to load the module the kernel requests (kernel.modprobe helper).\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "  -q --quiet            Say nothing when no module matches NAME\n"
               "  -v --verbose          Say what was loaded\n"
               "     --timeout=SEC      Wait at most this long for modgated (default: 15s)\n"
               "     --start-timeout=SEC\n"
               "                        When modgated is not running, wait at most this long\n"
               "                        for it to start (default: 5s)\n"
               "     --address=PATH     Talk to modgated on this socket\n"
               "                        (default: " MODGATE_VARLINK_ADDRESS ")\n"
               "     --set-kernel-modprobe\n"
               "                        Make " MODGATE_MODPROBE_PATH "\n"
               "                        the kernel's helper, if it is installed there\n",
               program_invocation_short_name, program_invocation_short_name);
}

/* kernel.modprobe is set by running this, from systemd-sysctl.service's drop-in, rather than by a
 * sysctl.d file: an initramfs generator that copies sysctl.d (dracut's systemd-sysctl module does)
 * but not modgate would point the initramfs's kernel at a helper that is not there, and every
 * request_module() in it would fail. A copied drop-in that runs a missing program fails instead,
 * and kernel.modprobe stays /sbin/modprobe. The path written is the installed one, never
 * /proc/self/exe: a copy run from elsewhere does not become the kernel's helper. */
static int set_kernel_modprobe(void) {
        static const char value[] = MODGATE_MODPROBE_PATH "\n";
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        if (access(MODGATE_MODPROBE_PATH, X_OK) < 0)
                return log_error_errno(errno, TAG "%s is not there (%m): leaving kernel.modprobe as it is.",
                                       MODGATE_MODPROBE_PATH);
        fd = open(KERNEL_MODPROBE, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return log_error_errno(errno, TAG "Failed to open %s: %m", KERNEL_MODPROBE);
        n = write(fd, value, sizeof(value) - 1);
        if (n != (ssize_t) sizeof(value) - 1)
                return log_error_errno(n < 0 ? errno : EIO, TAG "Failed to write %s: %m", KERNEL_MODPROBE);
        log_info(TAG "kernel.modprobe = %s", MODGATE_MODPROBE_PATH);
        return 0;
}

/* The kernel starts its helpers without stdin, stdout and stderr. Left closed, the varlink socket
 * would become one of them and log lines would be written into it. stderr goes to the kernel log. */
static int open_stdio(void) {
        for (int fd = 0; fd < 3; fd++) {
                int nfd;

                if (fcntl(fd, F_GETFD) >= 0)
                        continue;
                if (errno != EBADF)
                        return negative_errno();

                nfd = fd == 2 ? open("/dev/kmsg", O_WRONLY | O_NOCTTY) : -1;
                if (nfd < 0)
                        nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY | O_NOCTTY);
                if (nfd < 0)
                        return negative_errno();
                if (nfd != fd) {
                        /* Only if a lower fd was closed meanwhile; keep the order anyway. */
                        if (dup2(nfd, fd) < 0)
                                return negative_errno();
                        safe_close(nfd);
                }
        }
        return 0;
}

static int parse_argv(int argc, char *argv[], const char **ret_name) {
        enum {
                ARG_VERSION = 0x100,
                ARG_TIMEOUT,
                ARG_START_TIMEOUT,
                ARG_ADDRESS,
                ARG_SET_KERNEL_MODPROBE,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "quiet", no_argument, NULL, 'q' },
                { "verbose", no_argument, NULL, 'v' },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                { "start-timeout", required_argument, NULL, ARG_START_TIMEOUT },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "set-kernel-modprobe", no_argument, NULL, ARG_SET_KERNEL_MODPROBE },
                {}
        };
        int c, r;

        /* '+': options come first, as the kernel passes them; nothing after NAME is taken. */
        while ((c = getopt_long(argc, argv, "+hqv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-modprobe %s\n", PROJECT_VERSION);
                        return 0;
                case 'q':
                        arg_quiet = true;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_TIMEOUT:
                        r = parse_timeout(optarg, &arg_timeout_usec);
                        if (r < 0)
                                return log_error_errno(r, TAG "Invalid --timeout= value: %s", optarg);
                        break;
                case ARG_START_TIMEOUT:
                        r = parse_timeout(optarg, &arg_start_timeout_usec);
                        if (r < 0)
                                return log_error_errno(r, TAG "Invalid --start-timeout= value: %s", optarg);
                        break;
                case ARG_ADDRESS:
                        arg_address = optarg;
                        break;
                case ARG_SET_KERNEL_MODPROBE:
                        if (optind != argc)
                                return log_error_errno(EINVAL,
                                                       TAG "--set-kernel-modprobe takes nothing else.");
                        r = set_kernel_modprobe();
                        return r < 0 ? r : 0;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        if (argc - optind != 1)
                return log_error_errno(EINVAL, TAG "Expected exactly one module name, got %i.",
                                       argc - optind);

        *ret_name = argv[optind];
        return 1;
}

/* For a log line: the name with bytes that could forge a line or a terminal sequence written as \xNN,
 * cut short. */
static const char *escape_name(const char *name, char *buf, size_t size) {
        size_t j = 0;

        for (size_t i = 0; name[i] && j + 5 < size; i++) {
                unsigned char c = (unsigned char) name[i];

                if (c < ' ' || c >= 0x7f || c == '\\')
                        j += (size_t) snprintf(buf + j, size - j, "\\x%02x", c);
                else
                        buf[j++] = (char) c;
        }
        buf[j] = '\0';
        return buf;
}

static int report(const PlainRequest *req, const char *name) {
        switch (req->result.verdict) {
        case LOAD_VERDICT_LOADED:
                log_debug(TAG "%s: %s.", name, req->result.detail);
                return 0;
        case LOAD_VERDICT_NOT_FOUND:
        case LOAD_VERDICT_BLACKLISTED:
                (void) log_full_errno(arg_quiet ? LOG_DEBUG : LOG_ERR, ENOENT, TAG "%s: %s.", name,
                                      req->result.detail);
                return -ENOENT;
        case LOAD_VERDICT_UNREACHABLE:
                return log_error_errno(req->result.error ?: ECONNRESET, TAG "%s: %s (%s): %m", name,
                                       req->result.detail, arg_address ?: MODGATE_VARLINK_ADDRESS);
        default:
                return log_error_errno(EIO, TAG "%s: %s.", name, req->result.detail);
        }
}

static int run(int argc, char *argv[]) {
        /* The kernel's request: the daemon checks that the caller is a usermode helper of the kernel. */
        const RequestContext context = { .source = SOURCE_KERNEL, .seqnum = -1 };
        PlainRequest req = {};
        const char *name = NULL, *why;
        int r;

        r = open_stdio();
        if (r < 0)
                return r;

        log_open();

        r = parse_argv(argc, argv, &name);
        if (r <= 0)
                return r;

        /* Refused here, before any connection: the daemon never sees such a name. */
        why = request_name_check(name);
        if (why) {
                char buf[128];

                return log_error_errno(EINVAL, TAG "Refusing invalid module name '%s': %s.",
                                       escape_name(name, buf, sizeof(buf)), why);
        }

        /* The kernel's names are aliases (fs-erofs, net-pf-38, crypto-hmac(sha256)) as often as module
         * names: they go in the modalias field, which the daemon matches as one literal key against
         * modules.alias, modprobe.d aliases and module names. */
        req.modalias = name;
        req.context = &context;

        r = plain_requests_run(&(PlainOptions) {
                                      .address = arg_address,
                                      .timeout_usec = arg_timeout_usec,
                                      .max_parallel = 1,
                                      .start_timeout_usec = arg_start_timeout_usec,
                              },
                              &req, 1);
        if (r < 0)
                r = log_error_errno(r, TAG "%s: failed to talk to modgated: %m", name);
        else
                r = report(&req, name);

        plain_requests_done(&req, 1);
        return r;
}

int main(int argc, char *argv[]) {
        /* modprobe's convention: 0 when the module is there afterwards, 1 for everything else. */
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
