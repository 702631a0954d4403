/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-modules-load: loads the boot list (modules-load.d, modules_load= on the kernel command line)
 * through modgated, with systemd-modules-load's semantics: a module that does not exist is logged and
 * skipped, any other failure fails the run after every module was tried. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf-files.h"
#include "fileio.h"
#include "kernel-cmdline.h"
#include "load-plain.h"
#include "log.h"
#include "macro.h"
#include "modules-load-conf.h"
#include "strv.h"
#include "varlink-errors.h"

#define CMDLINE_SOURCE "kernel command line"
/* The whole list at once: the daemon orders the loads by their dependencies itself, so a name whose
 * chain is long must not wait behind others for a slot while the daemon idles. Each request is a
 * connection; this cap keeps them well below the fds a process has by default (1024) and the
 * connections the daemon accepts from one user (MaxConnectionsPerUser=, 1024) and pending requests
 * (8192). Real boot lists are far shorter. */
#define MAX_PARALLEL 256U

static const char *arg_address = NULL;
static const char *arg_root = NULL;

/* Each module to load, with where it was listed: two strvs of the same length. */
typedef struct BootList {
        char **names;
        char **sources;
} BootList;

static void boot_list_done(BootList *b) {
        b->names = strv_free(b->names);
        b->sources = strv_free(b->sources);
}

static void help(void) {
        printf("%s [OPTIONS...] [CONFIGURATION FILE...]\n\n"
               "Load the kernel modules of the boot list through modgated: modules-load.d/*.conf and\n"
               "modules_load= on the kernel command line, or only the files given.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "     --root=DIR         Read modules-load.d below DIR\n"
               "     --address=PATH     Talk to modgated on this socket\n"
               "                        (default: " MODGATE_VARLINK_ADDRESS ")\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ROOT,
                ARG_ADDRESS,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "root", required_argument, NULL, ARG_ROOT },
                { "address", required_argument, NULL, ARG_ADDRESS },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-modules-load %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_ROOT:
                        arg_root = optarg;
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

/* systemd's switches for the same purpose, so that the two can be tested alike. */
static bool in_initrd(void) {
        const char *e = getenv("SYSTEMD_IN_INITRD");

        if (e && *e)
                return strchr("1yYtT", e[0]) || strcmp(e, "on") == 0;
        return access("/etc/initrd-release", F_OK) >= 0;
}

/* In a container, the arguments of its PID 1 stand for the kernel command line, as for systemd
 * (which says it runs in one in /run/systemd/container). Each argument becomes one quoted word. */
static int read_container_cmdline(char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *args = NULL, *out = NULL;
        size_t n = 0, j = 0;
        ssize_t k;

        fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        args = malloc(KERNEL_CMDLINE_MAX);
        out = malloc(KERNEL_CMDLINE_MAX * 3 + 1);        /* at worst 3 bytes for each byte read */
        if (!args || !out)
                return -ENOMEM;
        while (n < KERNEL_CMDLINE_MAX && (k = read(fd, args + n, KERNEL_CMDLINE_MAX - n)) > 0)
                n += (size_t) k;

        /* argv[0] is the init program; quotes inside a word are dropped, it is quoted whole. */
        for (size_t i = strnlen(args, n) + 1; i < n; i += strnlen(args + i, n - i) + 1) {
                out[j++] = '"';
                for (size_t c = i; c < n && args[c]; c++)
                        if (args[c] != '"')
                                out[j++] = args[c];
                out[j++] = '"';
                out[j++] = ' ';
        }
        out[j] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

static int read_cmdline(char **ret) {
        const char *e = getenv("SYSTEMD_PROC_CMDLINE");

        if (e) {
                *ret = strdup(e);
                return *ret ? 0 : -ENOMEM;
        }
        if (access("/run/systemd/container", F_OK) >= 0)
                return read_container_cmdline(ret);
        return kernel_cmdline_read(NULL, ret);
}

static int add_names(BootList *b, char **names, const char *source) {
        for (char **n = names; n && *n; n++) {
                int r = modules_load_names_add(&b->names, *n, strlen(*n));
                if (r < 0)
                        return r;
                r = strv_extend(&b->sources, source);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Returns 0, or -errno when the file could not be read: logged, and the run fails. A file of the
 * modules-load.d directories is read below --root=. */
static int collect_file(BootList *b, const char *path, bool below_root) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *full = NULL, *text = NULL;
        int r;

        if (asprintf(&full, "%s%s", below_root && arg_root ? arg_root : "", path) < 0)
                return log_oom();

        r = read_full_file(full, MODULES_LOAD_FILE_SIZE_MAX, &text, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", full);

        r = modules_load_parse_text(text, &names);
        if (r < 0)
                return log_error_errno(r, "Failed to parse %s: %m", full);

        r = add_names(b, names, path);
        if (r < 0)
                return log_error_errno(r, "Failed to add the modules of %s: %m", full);
        return 0;
}

/* A file named on the command line: a path, or a name looked up in the modules-load.d directories. */
static int collect_argument(BootList *b, const char *arg) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (strchr(arg, '/'))
                return collect_file(b, arg, false);

        r = conf_files_find(MODULES_LOAD_DIRS, arg_root, arg, CONF_FILES_NO_ROOT_PREFIX, &path);
        if (r == -ENOENT)
                return log_error_errno(r, "No configuration file %s in modules-load.d.", arg);
        if (r < 0)
                return log_error_errno(r, "Failed to look for %s in modules-load.d: %m", arg);
        if (r == 0)
                return 0;        /* masked */
        return collect_file(b, path, true);
}

static int collect_all(BootList *b) {
        _cleanup_strv_free_ char **names = NULL, **files = NULL;
        _cleanup_free_ char *cmdline = NULL;
        int r, ret = 0;

        r = read_cmdline(&cmdline);
        if (r < 0)
                log_warning_errno(r, "Failed to read the kernel command line, ignoring: %m");
        else {
                r = modules_load_parse_cmdline(cmdline, in_initrd(), &names);
                if (r < 0)
                        return log_error_errno(r, "Failed to parse the kernel command line: %m");
                r = add_names(b, names, CMDLINE_SOURCE);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the kernel command line's modules: %m");
        }

        /* Paths as the booted system names them: they go into each request's context. */
        r = conf_files_list(MODULES_LOAD_DIRS, arg_root, ".conf", CONF_FILES_NO_ROOT_PREFIX,
                            MODULES_LOAD_FILES_MAX, &files);
        if (r < 0)
                return log_error_errno(r, "Failed to enumerate modules-load.d files: %m");

        for (char **f = files; f && *f; f++) {
                r = collect_file(b, *f, true);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

/* Logs the outcome for one module; returns whether it fails the run. */
static bool report(const PlainRequest *req, const char *source) {
        switch (req->result.verdict) {
        case LOAD_VERDICT_LOADED:
                if (req->result.n_loaded > 0)
                        log_info("Module '%s' (%s): %s.", req->name, source, req->result.detail);
                else
                        log_debug("Module '%s' (%s): %s.", req->name, source, req->result.detail);
                return false;
        case LOAD_VERDICT_NOT_FOUND:
                log_error("Module '%s' (%s) not found.", req->name, source);
                return false;
        case LOAD_VERDICT_BLACKLISTED:
                log_info("Module '%s' (%s) is blacklisted.", req->name, source);
                return false;
        case LOAD_VERDICT_INVALID:
                /* No module can have such a name: for systemd-modules-load it would not be found. */
                if (req->result.error_id && strcmp(req->result.error_id, MANAGER_ERROR_INVALID_NAME) == 0) {
                        log_error("Module '%s' (%s) not found: not a module name.", req->name, source);
                        return false;
                }
                log_error("Module '%s' (%s): %s.", req->name, source, req->result.detail);
                return true;
        case LOAD_VERDICT_UNREACHABLE:
                log_error_errno(req->result.error ?: ECONNRESET, "Module '%s' (%s): %s: %m", req->name,
                                source, req->result.detail);
                return true;
        default:
                log_error("Module '%s' (%s): %s.", req->name, source, req->result.detail);
                return true;
        }
}

static int load_all(const BootList *b) {
        _cleanup_free_ RequestContext *contexts = NULL;
        _cleanup_free_ PlainRequest *reqs = NULL;
        size_t n = strv_length(b->names);
        bool failed = false;
        int r;

        if (n == 0)
                return 0;

        contexts = calloc(n, sizeof(RequestContext));
        reqs = calloc(n, sizeof(PlainRequest));
        if (!contexts || !reqs)
                return log_oom();

        for (size_t i = 0; i < n; i++) {
                contexts[i] = (RequestContext) {
                        .source = SOURCE_BOOT,
                        .file = b->sources[i],
                        .seqnum = -1,
                };
                reqs[i] = (PlainRequest) { .name = b->names[i], .context = contexts + i };
        }
        /* No start timeout: modgated.socket is ordered before this service, and a daemon that is
         * slow to start is waited for as long as TimeoutSec= allows. */
        r = plain_requests_run(&(PlainOptions) {
                                       .address = arg_address,
                                       .timeout_usec = USEC_INFINITY,
                                       .max_parallel = MAX_PARALLEL,
                               },
                               reqs, n);
        if (r < 0)
                log_error_errno(r, "Failed to talk to modgated: %m");
        else
                for (size_t i = 0; i < n; i++)
                        failed = report(reqs + i, b->sources[i]) || failed;

        plain_requests_done(reqs, n);
        return r < 0 ? r : failed ? -EIO : 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(boot_list_done) BootList b = {};
        int r, ret = 0;

        log_open();

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        if (optind < argc)
                for (int i = optind; i < argc; i++) {
                        r = collect_argument(&b, argv[i]);
                        if (r < 0 && ret == 0)
                                ret = r;
                }
        else
                ret = collect_all(&b);

        /* A file that could not be read fails the run, but does not keep the others from loading. */
        r = load_all(&b);
        return ret < 0 ? ret : r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
