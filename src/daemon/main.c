/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "capability.h"
#include "conf-files.h"
#include "config.h"
#include "enforcement.h"
#include "fileio.h"
#include "kernel-cmdline.h"
#include "log.h"
#include "manager.h"
#include "manifest.h"
#include "modprobe-options.h"
#include "module-name.h"
#include "origin.h"
#include "policy.h"
#include "probe-client.h"
#include "request.h"
#include "strv.h"
#include "trust.h"

/* Command-line options override modgate.conf; unset ones leave it alone. */
static char *arg_listen = NULL;
static char *arg_trusted_root = NULL;
static char *arg_manifest = NULL;
static char *arg_prober = NULL;
static unsigned arg_evidence = 0;
static bool arg_evidence_set = false;
static unsigned arg_workers = 0;
static char **arg_load_alone = NULL;
static int64_t arg_idle_exit_sec = -1;
static bool arg_test_config = false;

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Load kernel modules from trusted files only, on request over varlink.\n\n"
               "  -h --help                Show this help\n"
               "     --version             Show package version\n"
               "     --listen=PATH         Listen on this socket instead of the one passed by the\n"
               "                           service manager (FileDescriptorName=varlink)\n"
               "     --trusted-root=DIR    Load modules from beneath DIR\n"
               "                           (default: /usr/lib/modules/$(uname -r))\n"
               "     --evidence=KINDS      What vouches for a module file: verity, read-only, manifest,\n"
               "                           ownership (default: verity read-only manifest)\n"
               "     --manifest=FILE       The manifest of the first trusted root's module files\n"
               "                           (default: " MANIFEST_DIR "/$(uname -r).sha256)\n"
               "     --prober=PATH         Ask the device-mapper prober on this socket\n"
               "                           (default: " PROBE_ADDRESS ")\n"
               "     --workers=N           Run up to N module loads at once (1..64, default one per\n"
               "                           online CPU, 8..16)\n"
               "     --load-alone=NAME     Load NAME only while no other module loads (repeatable)\n"
               "     --idle-exit-sec=SEC   Exit after SEC seconds without clients or loads; 0: never\n"
               "                           (default: IdleExitSec= when socket-activated, 0 with\n"
               "                           --listen=)\n"
               "  -n --test-config         Check the configuration, print it, and exit\n\n"
               "Settings come from modgate.conf and modgate.conf.d/*.conf in /etc/modgate,\n"
               "/usr/local/lib/modgate and /usr/lib/modgate (never /run); options given here override "
               "them.\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_LISTEN,
                ARG_TRUSTED_ROOT,
                ARG_MANIFEST,
                ARG_PROBER,
                ARG_EVIDENCE,
                ARG_WORKERS,
                ARG_LOAD_ALONE,
                ARG_IDLE_EXIT_SEC,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "listen", required_argument, NULL, ARG_LISTEN },
                { "trusted-root", required_argument, NULL, ARG_TRUSTED_ROOT },
                { "manifest", required_argument, NULL, ARG_MANIFEST },
                { "prober", required_argument, NULL, ARG_PROBER },
                { "evidence", required_argument, NULL, ARG_EVIDENCE },
                { "workers", required_argument, NULL, ARG_WORKERS },
                { "load-alone", required_argument, NULL, ARG_LOAD_ALONE },
                { "idle-exit-sec", required_argument, NULL, ARG_IDLE_EXIT_SEC },
                { "test-config", no_argument, NULL, 'n' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hn", options, NULL)) >= 0)
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
                case ARG_EVIDENCE:
                        if (config_parse_evidence(optarg, &arg_evidence) < 0)
                                return log_error_errno(EINVAL,
                                                       "--evidence= takes verity, read-only, manifest and "
                                                       "ownership: %s",
                                                       optarg);
                        arg_evidence_set = true;
                        break;
                case ARG_MANIFEST:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--manifest= takes an absolute path: %s",
                                                       optarg);
                        free(arg_manifest);
                        arg_manifest = strdup(optarg);
                        if (!arg_manifest)
                                return log_oom();
                        break;
                case ARG_PROBER:
                        free(arg_prober);
                        arg_prober = strdup(optarg);
                        if (!arg_prober)
                                return log_oom();
                        break;
                case 'n':
                        arg_test_config = true;
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
                                return log_error_errno(EINVAL,
                                                       "--idle-exit-sec= takes a number of seconds: %s",
                                                       optarg);
                        arg_idle_exit_sec = (int64_t) n;
                        break;
                }
                case ARG_LOAD_ALONE:
                        if (!module_name_is_valid(optarg))
                                return log_error_errno(EINVAL, "--load-alone= takes a module name: %s",
                                                       optarg);
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

/* The options given on the command line win over the configuration files. */
static int apply_arguments(Config *c, bool socket_activated) {
        if (arg_workers > 0)
                c->workers = arg_workers;
        if (arg_load_alone) {
                strv_free(c->load_alone);
                c->load_alone = TAKE_PTR(arg_load_alone);
        }
        if (arg_trusted_root) {
                strv_free(c->trusted_roots);
                c->trusted_roots = NULL;
                if (strv_extend(&c->trusted_roots, arg_trusted_root) < 0)
                        return -ENOMEM;
        }
        if (arg_evidence_set)
                c->trust.evidence = arg_evidence;
        if (arg_manifest) {
                free(c->trust.manifest);
                c->trust.manifest = TAKE_PTR(arg_manifest);
        }
        if (arg_idle_exit_sec >= 0)
                c->idle_exit_usec = (uint64_t) arg_idle_exit_sec * USEC_PER_SEC;
        else if (!socket_activated)
                c->idle_exit_usec = 0;  /* started by hand: nothing would start it again */
        return 0;
}

static void print_list(const char *key, char *const *l) {
        printf("%s=", key);
        for (char *const *p = l; p && *p; p++)
                printf("%s%s", *p, p[1] ? " " : "");
        printf("\n");
}

/* A setting of the policy, and where it was written (nothing for a default). */
static void print_rule(const char *setting, const PolicyRule *r) {
        if (!r->file)
                printf("%s\n", setting);
        else if (r->line == 0)
                printf("%-39s # %s\n", setting, r->file);
        else
                printf("%-39s # %s:%u\n", setting, r->file, r->line);
}

static void print_layer(const PolicyLayer *l) {
        print_rule(l->default_deny ? "Default=deny" : "Default=allow", &l->default_rule);
        for (size_t i = 0; i < l->n_rules; i++)
                print_rule(l->rules[i].option, &l->rules[i]);
}

/* RequireSignature= and AllowSigner=, one assignment per entry as they are written. */
static void print_signer(const SignerRule *r) {
        printf("RequireSignature=%s", r->require ? "yes" : "no");
        printf(r->require_where ? " ; %s\n" : "\n", r->require_where);
        for (char *const *e = r->allow; e && *e; e++)
                printf("AllowSigner=%s\n", strchr(*e, ':') + 1);
}

static void print_policy(const Config *c) {
        const Policy *p = &c->policy;
        _cleanup_free_ char *mode = NULL;

        if (asprintf(&mode, "Mode=%s", policy_mode_to_string(p->mode)) < 0)
                return (void) log_oom();
        printf("\n[Policy]\n");
        print_rule(mode, &p->mode_rule);
        print_rule(p->request_parameters_any ? "RequestParameters=any" : "RequestParameters=none",
                   &p->request_parameters_rule);
        print_layer(&p->global);
        for (RequestSource s = 0; s < _SOURCE_MAX; s++)
                if (p->sources[s].default_deny || p->sources[s].n_rules > 0 ||
                    signer_rule_active(&c->source_signers[s])) {
                        printf("\n[Source]\nName=%s\n", request_source_to_string(s));
                        print_layer(&p->sources[s]);
                        if (signer_rule_active(&c->source_signers[s]))
                                print_signer(&c->source_signers[s]);
                }
        for (size_t i = 0; i < p->n_parameters; i++) {
                printf("\n[Parameters]\n");
                print_rule(p->parameters[i].rule.option, &p->parameters[i].rule);
                print_list("Allow", p->parameters[i].allow);
        }
}

static void print_config(const Config *c) {
        _cleanup_free_ char *evidence = NULL;

        printf("[Load]\nWorkers=%u\n", c->workers);
        print_list("LoadAlone", c->load_alone);
        printf("\n[Manager]\nIdleExitSec=%llus\nMaxConnections=%u\nMaxConnectionsPerUser=%"
               "u\nIdleConnectionSec=%llus\n"
               "\n[Trust]\n",
               (unsigned long long) (c->idle_exit_usec / USEC_PER_SEC), c->connections_max,
               c->connections_per_user_max, (unsigned long long) (c->idle_connection_usec / USEC_PER_SEC));
        print_list("TrustedRoot", c->trusted_roots);
        printf("RequireReadOnlySuperblock=%s\n", c->require_superblock_ro ? "yes" : "no");
        if (evidence_mask_to_string(c->trust.evidence, " ", &evidence) < 0)
                return (void) log_oom();
        printf("Evidence=%s\nManifest=%s\n", evidence,
               c->trust.manifest ?: MANIFEST_DIR "/$(uname -r).sha256");
        print_list("RootHash", c->trust.root_hashes);
        print_list("FsVerityDigest", c->trust.fsverity_digests);
        printf("RequireIMASignature=%s\n", c->trust.require_ima ? "yes" : "no");
        print_signer(&c->trust.signer);
        print_policy(c);
        printf("\n[Guard]\nMode=%s\n", guard_mode_to_string(c->guard_mode));
}

/* What the kernel itself enforces, as this process sees it: -n runs with its caller's privileges, the
 * service with CAP_SYS_MODULE alone inside its sandbox, so the two may know different things. */
static void print_enforcement(void) {
        _cleanup_free_ char *line = NULL;
        Enforcement e;
        int r;

        r = enforcement_describe("/", &e, &line);
        if (r < 0) {
                log_warning_errno(r, "Failed to read the kernel's module enforcement: %m");
                return;
        }
        printf("\nKernel enforcement: %s\n", line);
}

/* What the guard would be at a start now: the mode in force and whether this kernel can run it. */
static void print_guard(const Config *c) {
        char cmdline[8192], lsm[512];
        GuardMode mode = c->guard_mode;
        const char *from = "[Guard] Mode=";
        int r;

        if (read_small_file_at(AT_FDCWD, "/proc/cmdline", cmdline, sizeof(cmdline)) >= 0) {
                r = guard_mode_from_cmdline(cmdline, &mode);
                if (r > 0)
                        from = GUARD_CMDLINE_KEY "= of the kernel command line";
                else if (r == -EINVAL)
                        printf("\nGuard: " GUARD_CMDLINE_KEY "= of the kernel command line is not a mode, ignored\n");
        }
        printf("\nGuard: %s (%s)", guard_mode_to_string(mode), from);
        if (mode == GUARD_OFF)
                printf("\n");
        else if (!HAVE_GUARD)
                printf("; unavailable: this modgated was built without it\n");
        else if (read_small_file_at(AT_FDCWD, "/sys/kernel/security/lsm", lsm, sizeof(lsm)) < 0)
                printf("; unknown whether the kernel runs the BPF LSM: /sys/kernel/security/lsm cannot be read\n");
        else if (!guard_lsm_listed(lsm))
                printf("; unavailable: the kernel runs no BPF LSM (add bpf to lsm= on the kernel command line)\n");
        else
                printf("; the kernel runs the BPF LSM\n");
}

/* What a root's manifest is now, for -n. */
static void print_manifest(const char *path) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *msg = NULL;
        int r;

        if (!path)
                return (void) printf("  manifest: unavailable: the root has no Manifest=\n");
        r = trust_manifest_load(path, &m, &msg);
        if (r < 0)
                printf("  manifest: unavailable: %s: %s\n", path, msg ?: strerror(-r));
        else
                printf("  manifest: %s: %zu module files of kernel %s, written by %s%s\n", path,
                       manifest_entries(m), manifest_kernel(m),
                       manifest_origin_to_string(manifest_origin(m)),
                       manifest_version(m) >= 2 ? ", with what each file's .modinfo says" : "");
}

/* Verity on the root's directory, for -n: its device (asking the prober, as the daemon would) and
 * the allowlists. The files' own fs-verity is per file, and not looked at here. */
static void print_verity(const RootConfig *c, Origin *o, char **cmdline_hashes) {
        char why[512];
        const char *failure;
        TrustInput in = {
                .origin = o,
                .accepted = c->evidence,
                .root_hashes = c->root_hashes,
                .cmdline_root_hashes = cmdline_hashes,
                .fsverity_digests = c->fsverity_digests,
        };

        if (o->device_mapper && probe_dm_table(arg_prober ?: PROBE_ADDRESS, o) < 0)
                return (void) log_oom();
        failure = trust_dm_verity_failure(&in, why, sizeof(why));
        printf("  dm-verity: %s%s\n", failure ?: "holds, root hash ", failure ? "" : o->dm.root_hash);
        printf("  verity allows: %zu root hashes, %zu from the kernel command line, %zu fs-verity digests\n",
               strv_length(c->root_hashes), strv_length(cmdline_hashes), strv_length(c->fsverity_digests));
}

/* Per trusted root, the evidence it accepts and what its directory shows now: whether verity and
 * read-only evidence hold there (files below share its stack, unless a mount inside the root
 * differs), and the manifest. The answer to "will my modules load?" before the daemon runs. */
static void print_roots(const Config *c) {
        _cleanup_strv_free_ char **cmdline_hashes = NULL;
        _cleanup_free_ char *cmdline = NULL;
        RootConfig *roots = NULL;
        int n;

        n = kernel_cmdline_read(NULL, &cmdline);
        if (n == -ENOMEM || (n >= 0 && config_cmdline_root_hashes(cmdline, &cmdline_hashes) < 0))
                return (void) log_oom();

        n = config_trusted_roots(c, &roots);
        if (n < 0)
                return (void) log_error_errno(n, "Failed to determine the trusted roots: %m");
        for (int i = 0; i < n; i++) {
                _cleanup_(origin_freep) Origin *o = NULL;
                _cleanup_free_ char *why = NULL, *evidence = NULL;
                _cleanup_close_ int fd = -EBADF;
                unsigned accepted = roots[i].evidence;
                int r;

                if (evidence_mask_to_string(accepted, ", ", &evidence) < 0)
                        break;
                printf("\nRoot %s accepts:%s%s%s%s%s\n", roots[i].path, *evidence ? " " : "", evidence,
                       roots[i].require_ima ? "; and requires an IMA signature" : "",
                       roots[i].signer.require ? "; only signed modules" : "",
                       strv_length(roots[i].signer.allow) > 0 ? "; only the signers AllowSigner= names" : "");
                fd = open(roots[i].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                r = fd < 0 ? -errno : origin_collect(fd, &o);
                if (r == -ENOENT && i > 0) {
                        printf("  not there yet: pinned when a module beneath it is first loaded\n");
                        continue;
                }
                if (r < 0) {
                        printf("  cannot be looked at: %s\n", strerror(-r));
                        continue;
                }
                if (accepted & EVIDENCE_MASK(EVIDENCE_VERITY))
                        print_verity(&roots[i], o, cmdline_hashes);
                if (accepted & EVIDENCE_MASK(EVIDENCE_READ_ONLY)) {
                        r = trust_read_only(o, &why);
                        printf("  read-only: %s\n", r > 0 ? "holds" : why ?: "out of memory");
                }
                if (accepted & EVIDENCE_MASK(EVIDENCE_MANIFEST))
                        print_manifest(roots[i].manifest);
        }
        root_config_array_free(roots, n < 0 ? 0 : n);
}

/* Why someone other than root could change what is at path (st its metadata): NULL when no one can. A
 * directory with the sticky bit lets others add names, not replace root's. */
static const char *writable_by_others(const struct stat *st, char *buf, size_t size) {
        if (st->st_uid != 0)
                snprintf(buf, size, "owned by uid %u", (unsigned) st->st_uid);
        else if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
                return NULL;
        else if (st->st_mode & S_IWOTH)
                snprintf(buf, size, "writable by others (mode %04o)", (unsigned) (st->st_mode & 07777));
        else if (st->st_mode & S_IWGRP)
                snprintf(buf, size, "writable by group %u (mode %04o)", (unsigned) st->st_gid,
                         (unsigned) (st->st_mode & 07777));
        else
                return NULL;
        return buf;
}

/* Warns, for -n, when someone other than root could change path: the file itself, or a directory on
 * the way to it (as written, and as its symbolic links resolve). Whoever can write what modgated
 * reads can steer it; modgated itself refuses configuration files owned by others or writable by group
 * or others, but a directory on the way lets them swap the file. */
static void warn_writable(const char *what, const char *path) {
        _cleanup_free_ char *resolved = realpath(path, NULL);
        const char *paths[] = { path, resolved };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                _cleanup_free_ char *prefix = paths[i] ? strdup(paths[i]) : NULL;

                if (!prefix || (i > 0 && streq_ptr(paths[0], paths[1])))
                        continue;
                /* The path, then each directory above it up to "/". */
                for (char *slash = NULL;; *slash = '\0') {
                        const char *at = prefix[0] ? prefix : "/";
                        struct stat st;
                        char why[128];

                        if (lstat(at, &st) == 0 && !S_ISLNK(st.st_mode) &&
                            writable_by_others(&st, why, sizeof(why))) {
                                if (strcmp(at, path) == 0)
                                        log_warning("Warning: %s %s is %s: someone other than root can "
                                                    "change it.",
                                                    what, path, why);
                                else
                                        log_warning("Warning: %s %s: directory %s on its way is %s: someone "
                                                    "other than root can change it.", what, path, at, why);
                        }
                        slash = strrchr(prefix, '/');
                        if (!slash || !prefix[0])
                                break;
                }
        }
}

/* For -n, before the configuration is parsed (a file it refuses is named here too): every
 * configuration file and directory modgated reads, checked for writers other than root. */
static void check_inputs(void) {
        _cleanup_strv_free_ char **config = NULL, **modprobe_d = NULL;
        _cleanup_strv_free_ char **ignored = NULL, **ignored_modprobe_d = NULL;

        for (const char *const *d = config_dirs; *d; d++) {
                _cleanup_free_ char *dropins = NULL;

                if (access(*d, F_OK) == 0)
                        warn_writable("configuration directory", *d);
                if (asprintf(&dropins, "%s/modgate.conf.d", *d) >= 0 && access(dropins, F_OK) == 0)
                        warn_writable("configuration directory", dropins);
        }
        if (conf_files_list_main(config_dirs, NULL, "modgate.conf", &config) >= 0)
                for (char **f = config; f && *f; f++)
                        warn_writable("configuration file", *f);
        for (const char *const *d = modprobe_d_dirs; *d; d++)
                if (access(*d, F_OK) == 0)
                        warn_writable("modprobe.d directory", *d);
        if (conf_files_list(modprobe_d_dirs, NULL, ".conf", 0, SIZE_MAX, &modprobe_d) >= 0)
                for (char **f = modprobe_d; f && *f; f++)
                        warn_writable("modprobe.d file", *f);

        if (config_ignored_files(NULL, &ignored) >= 0)
                for (char **f = ignored; f && *f; f++)
                        log_warning("Warning: %s is not read: configuration comes from /etc and /usr only.",
                                    *f);
        if (modprobe_d_ignored_files(NULL, &ignored_modprobe_d) >= 0)
                for (char **f = ignored_modprobe_d; f && *f; f++)
                        log_warning("Warning: %s is not read: modprobe.d comes from /etc and /usr only.",
                                    *f);
}

/* For -n: the manifests, which vouch for module files, checked the same way. */
static void check_manifests(const Config *c) {
        RootConfig *roots = NULL;
        int n;

        n = config_trusted_roots(c, &roots);
        for (int i = 0; i < n; i++)
                if (roots[i].manifest && access(roots[i].manifest, F_OK) == 0)
                        warn_writable("manifest", roots[i].manifest);
        root_config_array_free(roots, n < 0 ? 0 : n);
}

/* The soft limit of 1024 is for select(); sd-event uses epoll. Connections are capped below it. */
static void rlimit_nofile_bump(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Failed to raise RLIMIT_NOFILE, ignoring: %m");
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *error = NULL;
        const char *e;
        int r;

        log_open();

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = manager_new(&m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate manager: %m");

        if (arg_test_config)
                check_inputs();

        /* A configuration that does not parse stops the start: a typo must not leave a trust setting
         * weaker than the administrator meant. */
        r = config_load(&m->config, NULL, &error);
        if (r < 0)
                return log_error_errno(r, "Invalid configuration: %s", error ?: "out of memory");

        m->listen_address = TAKE_PTR(arg_listen);
        m->probe_address = TAKE_PTR(arg_prober);
        /* RuntimeDirectory= of the unit, kept across restarts (RuntimeDirectoryPreserve=yes). */
        e = getenv("RUNTIME_DIRECTORY");
        if (e && e[0] == '/') {
                m->runtime_dir = strndup(e, strcspn(e, ":"));
                if (!m->runtime_dir)
                        return log_oom();
        }
        m->keep_load_alone = arg_load_alone;
        m->keep_idle_exit = arg_idle_exit_sec >= 0 || m->listen_address;
        r = apply_arguments(&m->config, !m->listen_address);
        if (r < 0)
                return log_oom();

        if (arg_test_config) {
                check_manifests(&m->config);
                print_config(&m->config);
                print_roots(&m->config);
                print_enforcement();
                print_guard(&m->config);
                return 0;
        }

        rlimit_nofile_bump();

        /* CAP_BPF and CAP_PERFMON attach the guard, where the unit grants them, and are dropped right
         * after (manager_guard_start()), with CAP_SETPCAP, which that needs to drop them from the
         * bounding set, where the process has it (not under the unit). */
        r = capability_keep((const int[]) { CAP_SYS_MODULE, CAP_BPF, CAP_PERFMON, CAP_SETPCAP }, 4);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities other than CAP_SYS_MODULE: %m");

        r = manager_startup(m);
        if (r < 0) {
                (void) sd_notifyf(false, "STATUS=Failed to start up: %s\nERRNO=%i", strerror(-r), -r);
                return r;
        }

        return manager_run(m);
}

int main(int argc, char *argv[]) {
        int r;

#ifdef GUARD_TEST_WRONG_HASH
        /* modgated-test-wrong-hash, a test program: every load it approves must be refused by the kernel. */
        guard_test_wrong_hash = true;
        log_warning("This is modgated-test-wrong-hash, a test program: it approves another SHA-256 than "
                    "each file's, and the guard must refuse every load it makes. Never for a real system.");
#endif
        r = run(argc, argv);

        free(arg_listen);
        free(arg_trusted_root);
        free(arg_manifest);
        free(arg_prober);
        strv_free(arg_load_alone);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
