/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-udev-rules: under the udev takeover, udevd holds no CAP_SYS_MODULE, so a rule that loads a
 * module with udev's own kmod builtin (RUN{builtin}+="kmod load sg", as Debian's
 * 80-debian-compat.rules has) fails, and its driver is silently missing. This program finds every
 * such rules file that udev reads and, for those that a file in /run/udev/rules.d can hide (those in
 * /usr/local/lib and /usr/lib), writes there a copy whose builtin calls run modgate-udev with the
 * same arguments. It removes its copies whose source went away or no longer calls the builtin, and
 * reports loudly the files it cannot hide (in /etc/udev/rules.d, or someone else's in /run).
 *
 * Run once before systemd-udevd starts, and again by a path unit whenever a rules directory changes
 * (--trigger: then udev is told to reload its rules and to replay "add" for the devices the new
 * rules are about, so that a driver a package's new rule asks for is loaded for devices that were
 * already there). */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf-files.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "udev-rules.h"

#define RUN_RULES_DIR "/run/udev/rules.d"
/* A rules file larger than this is not a rules file. */
#define RULES_FILE_MAX (4 * 1024 * 1024)
/* Passes made while the rules directories keep changing under us (a package manager unpacking). */
#define PASSES_MAX 5

static const char *arg_root = NULL;
static bool arg_trigger = false;
static const char *arg_helper = MODGATE_UDEV_PATH;

/* What one pass changed, for --trigger. */
typedef struct Changes {
        size_t written;
        size_t removed;
        size_t unreachable;     /* files calling the builtin that a file in /run cannot hide */
        char **subsystems;      /* of the rewritten rules that changed */
        bool all;               /* one of them matches no subsystem: every device */
} Changes;

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Make udev's rules that load modules with the kmod builtin ask modgated instead: write\n"
               "a copy of each into " RUN_RULES_DIR " that runs modgate-udev.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "     --trigger          Then reload udev's rules and replay \"add\" for the devices\n"
               "                        that the changed rules are about\n"
               "     --root=PATH        Operate on the rules below PATH (for tests and images)\n"
               "     --helper=PATH      The modgate-udev that the copies run\n"
               "                        (default: " MODGATE_UDEV_PATH ")\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_TRIGGER,
                ARG_ROOT,
                ARG_HELPER,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "trigger", no_argument, NULL, ARG_TRIGGER },
                { "root", required_argument, NULL, ARG_ROOT },
                { "helper", required_argument, NULL, ARG_HELPER },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-udev-rules %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_TRIGGER:
                        arg_trigger = true;
                        break;
                case ARG_ROOT:
                        arg_root = streq_ptr(optarg, "/") ? NULL : optarg;
                        break;
                case ARG_HELPER:
                        if (optarg[0] != '/' || strpbrk(optarg, "\" \t\n\\"))
                                return log_error_errno(EINVAL,
                                                       "--helper= needs an absolute path without blanks, "
                                                       "quotes or backslashes: %s",
                                                       optarg);
                        arg_helper = optarg;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "%s takes no arguments.", program_invocation_short_name);
        if (arg_trigger && arg_root)
                return log_error_errno(EINVAL, "--trigger and --root= do not go together.");
        return 1;
}

/* path below the root, as the system there names it. */
static const char *unrooted(const char *path) {
        size_t n = arg_root ? strlen(arg_root) : 0;

        return n > 0 && strncmp(path, arg_root, n) == 0 ? path + n : path;
}

static int read_rules(const char *path, char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        size_t size;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        return read_full_stream(f, RULES_FILE_MAX, ret, &size);
}

/* The first line of text that calls the kmod builtin, for a message; 0 when none does. */
static unsigned builtin_line(const char *text) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;
        unsigned line = 1;

        if (udev_rules_rewrite_kmod(text, arg_helper, &out, &n, NULL, NULL) < 0 || n == 0)
                return 0;
        for (const char *a = text, *b = out; *a && *a == *b; a++, b++)
                line += *a == '\n';
        return line;
}

static void report_unreachable(const char *path, const char *text, Changes *c) {
        unsigned line = builtin_line(text);

        if (line == 0)
                return;
        c->unreachable++;
        log_error("%s:%u loads a module with udev's kmod builtin, which fails now that systemd-udevd has no "
                  "CAP_SYS_MODULE, and a file in " RUN_RULES_DIR
                  " cannot hide a file in %s: its driver will "
                  "not be loaded. Replace RUN{builtin}+=\"kmod load NAME\" with RUN+=\"%s NAME\" there.",
                  unrooted(path), line, strncmp(unrooted(path), "/etc/", 5) == 0 ? "/etc" : RUN_RULES_DIR,
                  arg_helper);
}

static bool is_generated(const char *text) {
        return strncmp(text, UDEV_RULES_GENERATED_MARK, strlen(UDEV_RULES_GENERATED_MARK)) == 0;
}

/* modgate's own 80-drivers.rules: its builtin calls run only where modgate is not installed. */
static bool is_modgate_override(const char *text) {
        const char *p = strstr(text, "\n" UDEV_RULES_OVERRIDE_MARK);

        return p && (size_t) (p - text) < 256;
}

static int write_atomic(const char *dir, const char *name, const char *content) {
        _cleanup_free_ char *tmp = NULL, *path = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        int fd;

        if (asprintf(&tmp, "%s/.#%s.XXXXXX", dir, name) < 0 || asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        /* udev reads /run/udev/rules.d only if it exists: made on first need. */
        if (access(dir, F_OK) < 0) {
                _cleanup_free_ char *p = strdup(dir);

                if (!p)
                        return -ENOMEM;
                for (char *slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
                        if (slash)
                                *slash = '\0';
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        if (!slash)
                                break;
                        *slash = '/';
                }
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                (void) close(fd);
                (void) unlink(tmp);
                return -errno;
        }
        if (fchmod(fd, 0644) < 0 || fputs(content, f) == EOF || fflush(f) != 0 || rename(tmp, path) < 0) {
                int r = -errno;

                (void) unlink(tmp);
                return r ?: -EIO;
        }
        return 0;
}

/* One rules file that udev reads: its copy in /run, when it calls the builtin and one can hide it. */
static int generate_one(const char *path, const char *run_dir, char ***wanted, Changes *c) {
        _cleanup_free_ char *text = NULL, *source = NULL, *source_text = NULL, *rewritten = NULL,
                            *content = NULL, *existing = NULL, *dir = NULL, *target = NULL;
        _cleanup_strv_free_ char **subsystems = NULL;
        const char *name = strrchr(path, '/') + 1;
        bool unmatched = false;
        size_t n;
        int r;

        r = read_rules(path, &text);
        if (r < 0)
                return log_warning_errno(r, "Failed to read %s, skipping: %m", unrooted(path)), 0;

        dir = strndup(path, (size_t) (name - 1 - path));
        if (!dir)
                return log_oom();
        if (streq_ptr(unrooted(dir), RUN_RULES_DIR) && is_generated(text)) {
                /* Our own copy hides its source: find that below /run. */
                r = conf_files_find(udev_rules_dirs + 2, arg_root, name, 0, &source);
                if (r <= 0)
                        return 0; /* its source is gone or masked: the copy goes too */
                r = read_rules(source, &source_text);
                if (r < 0)
                        return log_warning_errno(r, "Failed to read %s, skipping: %m", unrooted(source)), 0;
        } else if (streq_ptr(unrooted(dir), "/etc/udev/rules.d") ||
                   streq_ptr(unrooted(dir), RUN_RULES_DIR)) {
                if (!is_modgate_override(text))
                        report_unreachable(path, text, c);
                return 0;
        } else {
                source = strdup(path);
                source_text = TAKE_PTR(text);
                if (!source)
                        return log_oom();
        }

        r = udev_rules_rewrite_kmod(source_text, arg_helper, &rewritten, &n, &subsystems, &unmatched);
        if (r < 0)
                return log_oom();
        if (n == 0)
                return 0;
        if (asprintf(&content,
                     UDEV_RULES_GENERATED_MARK "%s.\n"
                                               "# Its calls of udev's kmod builtin (%zu) run modgate-udev "
                                               "instead, which asks modgated; the\n"
                                               "# rest is as there. Written again when that file changes; "
                                               "see modgate-udev-rules(8).\n%s",
                     unrooted(source), n, rewritten) < 0)
                return log_oom();
        if (strv_extend(wanted, name) < 0)
                return log_oom();

        if (asprintf(&target, "%s/%s", run_dir, name) < 0)
                return log_oom();
        if (read_rules(target, &existing) >= 0 && streq_ptr(existing, content))
                return 0;
        r = write_atomic(run_dir, name, content);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s/%s: %m", unrooted(run_dir), name);
        log_info("Wrote %s/%s: the calls of udev's kmod builtin in %s (%zu) now ask modgated.",
                 RUN_RULES_DIR, name, unrooted(source), n);
        c->written++;
        c->all = c->all || unmatched;
        for (char **s = subsystems; s && *s; s++)
                if (!strv_contains(c->subsystems, *s) && strv_extend(&c->subsystems, *s) < 0)
                        return log_oom();
        return 0;
}

/* Removes our copies that no source wants any more. */
static int remove_stale(const char *run_dir, char *const *wanted, Changes *c) {
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = conf_files_list((const char *const[]) { RUN_RULES_DIR, NULL }, arg_root, ".rules", 0, SIZE_MAX,
                            &files);
        if (r < 0)
                return log_error_errno(r, "Failed to list %s: %m", RUN_RULES_DIR);
        for (char **f = files; f && *f; f++) {
                _cleanup_free_ char *text = NULL;
                const char *name = strrchr(*f, '/') + 1;

                if (strv_contains(wanted, name) || read_rules(*f, &text) < 0 || !is_generated(text))
                        continue;
                if (unlink(*f) < 0 && errno != ENOENT)
                        return log_error_errno(errno, "Failed to remove %s/%s: %m", RUN_RULES_DIR, name);
                log_info("Removed %s/%s: its source is gone, masked or hidden, or no longer calls udev's "
                         "kmod "
                         "builtin.",
                         RUN_RULES_DIR, name);
                c->removed++;
        }
        return 0;
}

static int generate(Changes *c) {
        _cleanup_strv_free_ char **files = NULL, **wanted = NULL;
        _cleanup_free_ char *run_dir = NULL;
        int r;

        if (asprintf(&run_dir, "%s" RUN_RULES_DIR, arg_root ?: "") < 0)
                return log_oom();
        r = conf_files_list(udev_rules_dirs, arg_root, ".rules", 0, SIZE_MAX, &files);
        if (r < 0)
                return log_error_errno(r, "Failed to list udev's rules files: %m");
        for (char **f = files; f && *f; f++) {
                r = generate_one(*f, run_dir, &wanted, c);
                if (r < 0)
                        return r;
        }
        return remove_stale(run_dir, wanted, c);
}

/* When each rules directory last changed, to see whether a pass raced a package manager. */
static int rules_dirs_stamp(char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *s = NULL;
        size_t size;

        f = open_memstream(&s, &size);
        if (!f)
                return -ENOMEM;
        for (const char *const *d = udev_rules_dirs; *d; d++) {
                _cleanup_free_ char *p = NULL;
                struct stat st = {};

                if (streq_ptr(*d, RUN_RULES_DIR))
                        continue; /* ours */
                if (asprintf(&p, "%s%s", arg_root ?: "", *d) < 0)
                        return -ENOMEM;
                (void) stat(p, &st);
                fprintf(f, "%llu.%ld:%llu;", (unsigned long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                        (unsigned long long) st.st_ino);
        }
        if (fclose(TAKE_PTR(f)) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

static int spawn(char *const *argv) {
        pid_t pid;
        int status;

        pid = fork();
        if (pid < 0)
                return log_error_errno(errno, "Failed to fork: %m");
        if (pid == 0) {
                execvp(argv[0], argv);
                log_error_errno(errno, "Failed to run %s: %m", argv[0]);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return log_error_errno(errno, "Failed to wait for %s: %m", argv[0]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return log_error_errno(EIO, "%s %s failed.", argv[0], argv[1]);
        return 0;
}

/* udevd reads changed rules before its next event by itself; the devices that were there before
 * the rules changed see them only when their events are replayed. */
static int trigger(const Changes *c) {
        _cleanup_strv_free_ char **argv = NULL;
        int r;

        r = spawn((char *const[]) { (char *) "udevadm", (char *) "control", (char *) "--reload", NULL });
        if (r < 0)
                return r;
        if (strv_extend(&argv, "udevadm") < 0 || strv_extend(&argv, "trigger") < 0 ||
            strv_extend(&argv, "--action=add") < 0)
                return log_oom();
        if (!c->all)
                for (char **s = c->subsystems; s && *s; s++) {
                        _cleanup_free_ char *a = NULL;

                        if (asprintf(&a, "--subsystem-match=%s", *s) < 0 ||
                            strv_consume(&argv, TAKE_PTR(a)) < 0)
                                return log_oom();
                }
        log_info("Replaying \"add\" for %s, for the rewritten rules.",
                 c->all ? "every device" : "the devices of their subsystems");
        return spawn(argv);
}

static int run(int argc, char *argv[]) {
        Changes total = {};
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        for (unsigned pass = 0;; pass++) {
                _cleanup_free_ char *before = NULL, *after = NULL;
                Changes c = {};

                if (rules_dirs_stamp(&before) < 0)
                        return log_oom();
                r = generate(&c);
                total.written += c.written;
                total.removed += c.removed;
                total.unreachable = c.unreachable;
                total.all = total.all || c.all;
                for (char **s = c.subsystems; s && *s; s++)
                        if (!strv_contains(total.subsystems, *s) && strv_extend(&total.subsystems, *s) < 0)
                                r = log_oom();
                strv_free(c.subsystems);
                if (r < 0)
                        break;
                if (rules_dirs_stamp(&after) < 0) {
                        r = log_oom();
                        break;
                }
                if (streq_ptr(before, after))
                        break;
                if (pass + 1 == PASSES_MAX) {
                        log_warning("udev's rules directories kept changing for %u passes; the path unit "
                                    "runs this "
                                    "again on the next change.",
                                    PASSES_MAX);
                        break;
                }
        }
        if (r >= 0 && arg_trigger && total.written > 0)
                r = trigger(&total);
        if (r >= 0 && total.written + total.removed == 0)
                log_debug("Nothing to change.");
        strv_free(total.subsystems);
        return r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
