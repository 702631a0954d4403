/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "authorize.h"
#include "conf-files.h"
#include "enforcement.h"
#include "fdstore.h"
#include "fileio.h"
#include "kernel-cmdline.h"
#include "kernel.h"
#include "log.h"
#include "manager.h"
#include "method-describe.h"
#include "method-load.h"
#include "modprobe-options.h"
#include "module-loader.h"
#include "peer.h"
#include "probe-client.h"
#include "record-history.h"
#include "record-journal.h"
#include "record.h"
#include "root-identity.h"
#include "strv.h"
#include "time-util.h"
#include "udev-rules.h"
#include "udevd-check.h"
#include "varlink.h"

int manager_refresh_index(Manager *m) {
        int r;

        assert(m);

        r = resolver_refresh(m->resolver);
        if (r > 0) {
                log_info("Module index changed on disk, reloaded.");
                scheduler_flush_denials(m->scheduler);
                /* Decisions made afresh: each one's first answer is a record again. */
                manager_write_summaries(m);
        }
        return r;
}

/* A timer of its own, never touching the idle clock: it does not keep an idle daemon running. */
static int on_summary_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_write_summaries(userdata);
        return sd_event_source_set_time_relative(s, CHATTER_WINDOW_USEC);
}

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        config_init_defaults(&m->config);

        /* A loop of its own rather than the thread's default one: sd_event_prepare() checks with a
         * gettid() at every iteration that a default loop runs in the thread that made it, four system
         * calls a request. Nothing here asks for the default loop, and no worker touches this one. */
        r = sd_event_new(&m->event);
        if (r < 0)
                return r;

        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return r;

        r = chatter_new(&m->chatter);
        if (r < 0)
                return r;
        r = monitors_new(&m->monitors);
        if (r < 0)
                return r;
        r = peer_cache_new(&m->peers);
        if (r < 0)
                return r;
        r = device_info_new(&m->device_info);
        if (r < 0)
                return r;
        m->started_usec = now_usec();
        m->running_fd = -EBADF;
        m->seal.sysctl_fd = -EBADF;
        m->summary_since_usec = now_usec();
        r = sd_event_add_time_relative(m->event, &m->summary_timer, CLOCK_MONOTONIC, CHATTER_WINDOW_USEC,
                                       USEC_PER_SEC, on_summary_timer, m);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(m->summary_timer, SD_EVENT_ON);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->stop_check);
        sd_event_source_disable_unref(m->stop_timer);
        sd_event_source_disable_unref(m->summary_timer);
        /* Workers first: a load in progress completes, nothing new starts, nothing is sealed. */
        seal_cancel(m);
        m->readers = reader_pool_free(m->readers);
        m->scheduler = scheduler_free(m->scheduler);
        manager_describe_flush(m);
        manager_free_requests(m);
        m->monitors = monitors_free(m->monitors);
        m->device_info = device_info_free(m->device_info);
        seal_done(m);
        sd_varlink_server_unref(m->varlink_server);
        m->connections = connections_free(m->connections);
        m->peers = peer_cache_free(m->peers);
        resolver_free(m->resolver);
        for (size_t i = 0; i < m->n_roots; i++)
                trusted_root_free(m->roots[i]);
        free(m->roots);
        strv_free(m->cmdline_root_hashes);
        free(m->kernel_cmdline);
        udev_rule_names_free(m->udev_rule_names, m->n_udev_rule_names);
        free(m->udev_rules_stamp);
        free(m->probe_address);
        free(m->runtime_dir);
        strv_free(m->ignored_config);
        strv_free(m->ignored_modprobe_d);
        safe_close(m->running_fd);
        sd_event_source_disable_unref(m->prober_hold);
        guard_free(m->guard);
        sd_event_unref(m->event);
        /* What was counted and not yet summarized is summarized, on the way out too. */
        manager_write_summaries(m);
        chatter_free(m->chatter);
        uevent_log_free(m->uevents);
        history_free(m->history);
        config_done(&m->config);
        free(m->listen_address);
        free(m);
        return NULL;
}

static int root_manifest_unavailable(TrustedRoot *t, const char *path, const char *why) {
        if (asprintf(&t->manifest_error, "%s: %s", path, why) < 0) {
                t->manifest_error = NULL;
                return log_oom();
        }
        log_warning(
                "Manifest %s of %s cannot be used: %s. Only other evidence can vouch for its module files.",
                path, t->path, why);
        return 0;
}

/* A root's manifest, when it accepts manifest evidence. Read once through an fd that is checked
 * itself; none, or a refused one, is no manifest, and every load that needs it is refused saying
 * why. */
static int root_load_manifest(TrustedRoot *t, const RootConfig *c) {
        _cleanup_free_ char *msg = NULL;
        ManifestOrigin o;
        int r;

        if (!(t->evidence & EVIDENCE_MASK(EVIDENCE_MANIFEST)))
                return 0;
        if (!c->manifest) {
                t->manifest_error = strdup("the root has no Manifest=");
                return t->manifest_error ? 0 : log_oom();
        }

        r = trust_manifest_load(c->manifest, &t->manifest, &msg);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return root_manifest_unavailable(t, c->manifest, msg ?: strerror(-r));

        o = manifest_origin(t->manifest);
        log_info("Manifest %s: %zu module files of kernel %s, written by %s%s.", c->manifest,
                 manifest_entries(t->manifest), manifest_kernel(t->manifest), manifest_origin_to_string(o),
                 manifest_version(t->manifest) >= 2 ? ", with what each file's .modinfo says" : "");
        if (o == MANIFEST_ORIGIN_FIRST_USE)
                log_notice(
                        "Manifest %s was written on first use: it vouches for the files as they were then, "
                        "not as the kernel package installed them.",
                        c->manifest);
        return 0;
}

static int root_log(const TrustedRoot *t) {
        _cleanup_free_ char *evidence = NULL;

        if (evidence_mask_to_string(t->evidence, " ", &evidence) < 0)
                return log_oom();
        if (t->fd >= 0)
                log_info("Trusted root %s (mount %llu) accepts: %s.", t->path,
                         (unsigned long long) t->mount_id, *evidence ? evidence : "nothing");
        else
                log_info("Trusted root %s is not there yet; it is pinned when a module beneath it is first "
                         "loaded. It accepts: %s.", t->path, *evidence ? evidence : "nothing");
        if (t->evidence & EVIDENCE_MASK(EVIDENCE_OWNERSHIP))
                log_warning(
                        "Trusted root %s: module files whose origin is not verified are trusted when root "
                        "owns them (Evidence=ownership or RequireReadOnlySuperblock=no).",
                        t->path);
        if (t->evidence & EVIDENCE_MASK(EVIDENCE_VERITY) && strv_length(t->root_hashes) == 0 &&
            strv_length(t->fsverity_digests) == 0)
                log_debug("Trusted root %s accepts verity evidence, but allows no RootHash= and no "
                          "FsVerityDigest= of its own.", t->path);
        return 0;
}

static int root_verify(TrustedRoot *t, void *userdata) {
        Manager *m = userdata;

        return root_identity_verify(t, m->probe_address ?: PROBE_ADDRESS);
}

/* Each trusted root with what it accepts. The first is pinned now or the start fails: its index is
 * read through it. The others are pinned now when they are there, else on first use. */
static int on_prober_gone(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        log_debug("modgate-probe closed the connection held to it; the next table read starts it again.");
        m->prober_hold = sd_event_source_disable_unref(m->prober_hold);
        return 0;
}

/* modgate-probe is socket-activated and exits after 10 s without a connection; starting it again
 * costs a service start on the path of the next load (seconds in a slow VM: bench scenario 7 saw it
 * delay a hotplugged NIC's driver by 2.7 to 4.1 s). Where loads may ask it (root_may_ask_prober()), an
 * idle connection is held to it for as long as this instance runs: the connect also starts the prober
 * at once, beside this daemon's own start, rather than when the first root is verified. Nothing is
 * sent on it; the prober answers each table read on a connection of its own, as before. Where no load
 * asks, it is not started for them (a service start costs CPU during coldplug: 0.4 s under TCG). */
static void manager_hold_prober(Manager *m) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *address = m->probe_address ?: PROBE_ADDRESS;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (m->prober_hold || strlen(address) >= sizeof(sa.sun_path))
                return;
        strcpy(sa.sun_path, address);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                log_debug_errno(errno, "Failed to connect to %s, not holding it: %m", address);
                return;
        }
        r = sd_event_add_io(m->event, &m->prober_hold, fd, EPOLLIN | EPOLLRDHUP, on_prober_gone, m);
        if (r < 0)
                return (void) log_debug_errno(r, "Failed to watch the connection to %s: %m", address);
        r = sd_event_source_set_io_fd_own(m->prober_hold, true);
        if (r < 0) {
                m->prober_hold = sd_event_source_disable_unref(m->prober_hold);
                return;
        }
        TAKE_FD(fd);
}

/* Whether loads beneath a root may ask the prober: for a device-mapper table where verity may vouch (a
 * root hash is allowed, check_origin()), for a loop device's file where read-only may, and the root
 * is on a loop device or not pinned yet (t NULL: before the pins). The pin itself asks for a
 * device-mapper root's table once (root_identity_of()), which starts the prober by its socket. */
static bool root_may_ask_prober(const Manager *m, const RootConfig *c, TrustedRoot *t) {
        _cleanup_(origin_freep) Origin *o = NULL;

        if (c->evidence & EVIDENCE_MASK(EVIDENCE_VERITY) &&
            (strv_length(c->root_hashes) > 0 || strv_length(m->cmdline_root_hashes) > 0))
                return true;
        if (!t || !(c->evidence & EVIDENCE_MASK(EVIDENCE_READ_ONLY)))
                return false;
        if (t->fd < 0 || origin_collect(t->fd, &o) < 0)
                return true;
        for (const Origin *i = o; i; i = i->below)
                if (origin_loop_needs_probe(i))
                        return true;
        return false;
}

/* The roots config_trusted_roots() made, freed with their count. */
typedef struct RootConfigs {
        RootConfig *array;
        int n;
} RootConfigs;

static void root_configs_done(RootConfigs *c) {
        root_config_array_free(c->array, c->n > 0 ? (size_t) c->n : 0);
}

/* One root, the first (whose index is read through it, so it must be pinned now) or another. */
static int manager_add_root(Manager *m, const RootConfig *c, bool first) {
        TrustedRoot *t;
        int r;

        r = trusted_root_new(c->path, &t);
        if (r < 0)
                return log_oom();
        m->roots[m->n_roots++] = t;
        t->evidence = c->evidence;
        t->require_ima = c->require_ima;
        if (signer_rule_copy(&t->signer, &c->signer) < 0)
                return log_oom();
        t->root_hashes = strv_copy_n(c->root_hashes, strv_length(c->root_hashes));
        t->fsverity_digests = strv_copy_n(c->fsverity_digests, strv_length(c->fsverity_digests));
        if (!t->root_hashes || !t->fsverity_digests)
                return log_oom();

        r = trusted_root_pin(t, root_verify, m);
        journal_record_root_pins(&t, 1);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0 && (first || r != -ENOENT))
                return log_error_errno(r, "Failed to pin trusted root %s: %m", t->path);
        r = root_load_manifest(t, c);
        if (r < 0)
                return r;
        return root_log(t);
}

static int manager_pin_roots(Manager *m) {
        _cleanup_(root_configs_done) RootConfigs configs = {};
        int r;

        configs.n = config_trusted_roots(&m->config, &configs.array);
        if (configs.n < 0)
                return log_error_errno(configs.n, "Failed to determine the trusted roots: %m");
        for (int i = 0; i < configs.n; i++)
                if (root_may_ask_prober(m, &configs.array[i], NULL))
                        manager_hold_prober(m);

        m->roots = calloc(configs.n, sizeof(TrustedRoot *));
        if (!m->roots)
                return log_oom();
        for (int i = 0; i < configs.n; i++) {
                r = manager_add_root(m, &configs.array[i], i == 0);
                if (r < 0)
                        return r;
                if (root_may_ask_prober(m, &configs.array[i], m->roots[i]))
                        manager_hold_prober(m);
        }
        return 0;
}

/* The kernel command line's module_blacklist=, modprobe.blacklist= and modgate.mode= (cmdline, NULL
 * when it could not be read) join the configuration's policy, and over the result goes the digest
 * that names it. */
static int policy_complete(Policy *p, const char *cmdline, char ret_digest[SHA256_HEX_SIZE]) {
        _cleanup_strv_free_ char **ignored = NULL;
        _cleanup_free_ char *text = NULL;
        uint8_t digest[SHA256_DIGEST_SIZE];
        int r;

        if (cmdline) {
                r = policy_add_cmdline(p, cmdline, &ignored);
                if (r < 0)
                        return r;
        }
        for (char **i = ignored; i && *i; i++)
                log_warning("Ignoring %s on the kernel command line: not a module name or mode.", *i);

        r = policy_serialize(p, &text);
        if (r < 0)
                return r;
        r = sha256_buffer(text, strlen(text), digest);
        if (r < 0)
                return r;
        sha256_to_hex(digest, ret_digest);
        return 0;
}

static size_t policy_n_rules(const Policy *p) {
        size_t n = p->global.n_rules + p->n_parameters;

        for (size_t i = 0; i < _SOURCE_MAX; i++)
                n += p->sources[i].n_rules;
        return n;
}

static void manager_log_policy(Manager *m, const char *verb) {
        const Policy *p = &m->config.policy;

        log_info("%s policy %.12s: %s, %s by default, %zu rules.", verb, m->policy_digest,
                 policy_mode_to_string(p->mode), p->global.default_deny ? "deny" : "allow",
                 policy_n_rules(p));
}

/* Read once, at start: the kernel's command line is fixed while the kernel runs, so a reload has
 * nothing new to read there. (What could differ is a file mounted over /proc/cmdline in the daemon's
 * mount namespace, as the tests do before a daemon starts: it is taken in at the next start only.)
 * roothash= and usrhash= name the images the boot loader and the initrd verified: allowed for every
 * root. */
static int manager_read_cmdline(Manager *m) {
        int r;

        r = kernel_cmdline_read(NULL, &m->kernel_cmdline);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                log_warning_errno(r, "Failed to read /proc/cmdline, its module_blacklist=, "
                                  "modprobe.blacklist=, modgate.mode=, module options, roothash= and "
                                  "usrhash= are not applied: %m");
                return 0;
        }
        r = config_cmdline_root_hashes(m->kernel_cmdline, &m->cmdline_root_hashes);
        if (r < 0)
                return log_oom();
        for (char **h = m->cmdline_root_hashes; h && *h; h++)
                log_info("The kernel command line allows dm-verity root hash %s.", *h);
        return 0;
}

/* Only the kernel stops root: say once, at start, which of its mechanisms are in force, as seen from
 * inside the service's sandbox and with its one capability; and a record of what this instance is. */
static void manager_log_enforcement(Manager *m) {
        _cleanup_free_ char *line = NULL;
        char tree[256];
        RootIdentity id;
        Enforcement e;
        int r;

        if (root_identity_of(m->roots[0]->fd, m->load_context.probe_address, &id) >= 0)
                root_identity_format(&id, tree, sizeof(tree));
        else
                snprintf(tree, sizeof(tree), "unknown");
        r = enforcement_describe("/", &e, &line);
        journal_record_started(PROJECT_VERSION, m->policy_digest,
                               policy_mode_to_string(m->config.policy.mode), r >= 0 ? line : "unknown", tree,
                               m->seal.sealed);
        if (r < 0) {
                log_warning_errno(r, "Failed to read the kernel's module enforcement: %m");
                return;
        }
        if (e.modules_disabled.value == PROBE_YES)
                log_warning(
                        "Kernel enforcement: %s. kernel.modules_disabled=1: every module load fails until "
                        "reboot.",
                        line);
        else
                log_info("Kernel enforcement: %s.", line);
}

/* Held until exit: whoever asks can tell a running daemon from a socket waiting for activation. */
static void manager_lock_running(Manager *m) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;

        if (!m->runtime_dir)
                return;
        dir = open(m->runtime_dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
        if (dir >= 0)
                fd = openat(dir, RUNTIME_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0 || flock(fd, LOCK_SH) < 0) {
                log_warning_errno(
                        errno, "Failed to lock %s/%s, modgate-modprobe cannot tell that modgated runs: %m",
                        m->runtime_dir, RUNTIME_LOCK);
                return;
        }
        m->running_fd = TAKE_FD(fd);
}

/* What modgate does not read from /run (it did once, and libkmod does by default), said once per start,
 * and at a reload only when it changed: an administrator who put a file there learns why it has no
 * effect, and an auditor sees what someone tried to slip in. */
static void manager_record_ignored_inputs(Manager *m) {
        const struct {
                const char *input;
                int (*list)(const char *root, char ***ret);
                char ***recorded;
        } table[] = {
                { "configuration", config_ignored_files, &m->ignored_config },
                { "modprobe.d", modprobe_d_ignored_files, &m->ignored_modprobe_d },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_strv_free_ char **files = NULL;
                int r;

                r = table[i].list(NULL, &files);
                if (r < 0) {
                        log_debug_errno(r, "Failed to list the %s files in /run that are not read: %m",
                                        table[i].input);
                        continue;
                }
                if (strv_equal(files, *table[i].recorded) ||
                    (strv_length(files) == 0 && strv_length(*table[i].recorded) == 0))
                        continue;
                journal_record_input_ignored(table[i].input, files);
                strv_free(*table[i].recorded);
                *table[i].recorded = TAKE_PTR(files);
        }
}

/* What the last instance read of the same socket, saved at its exit. Taken out of the store at once:
 * after a crash there is none, and the log starts at the kernel's SEQNUM now. */
static void manager_restore_uevents(Manager *m) {
        _cleanup_close_ int fd = fdstore_take(FDSTORE_UEVENT_LOG);
        _cleanup_free_ char *text = NULL;
        size_t size;

        if (fd < 0)
                return;
        (void) fdstore_remove(FDSTORE_UEVENT_LOG);
        if (read_full_fd(fd, 64 * 1024 * 1024, &text, &size) < 0)
                return;
        if (uevent_log_restore(m->uevents, text, size) < 0)
                log_warning("Ignoring the uevent log of the last instance, which does not parse.");
}

/* The kernel's uevents, on the socket kept in PID 1's fd store while no daemon ran (what the kernel
 * sent meanwhile waits there), or on a new one, stored. */
static int manager_follow_uevents(Manager *m) {
        int fd, r;

        fd = fdstore_take(FDSTORE_UEVENT);
        if (fd == -ENOMEM)
                return log_oom();
        r = uevent_log_new(m->event, fd, manager_on_module_event, m, &m->uevents);
        if (r < 0 && fd >= 0) {
                log_warning_errno(r, "Ignoring the uevent socket of the fd store: %m");
                fd = -EBADF;
                r = uevent_log_new(m->event, fd, manager_on_module_event, m, &m->uevents);
        }
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                log_warning_errno(r, "Failed to follow the kernel's uevents: udevd's requests are checked "
                                  "against sysfs, loads by others are found only at start and when asked "
                                  "for: %m");
                return 0;
        }
        if (fd < 0 && fdstore_available()) {
                r = fdstore_put(uevent_log_fd(m->uevents), FDSTORE_UEVENT);
                if (r < 0)
                        log_warning_errno(r, "Failed to keep the uevent socket in the fd store, events sent "
                                          "while modgated does not run will be unknown to it: %m");
        }
        if (fd >= 0)
                manager_restore_uevents(m);
        log_debug("Following the kernel's uevents on %s socket, receive buffer %d bytes.",
                  fd >= 0 ? "the fd store's" : "a new", uevent_log_rcvbuf(m->uevents));
        return 0;
}

/* At exit, for the next instance that takes the socket. */
static void manager_keep_uevents(Manager *m) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!m->uevents || !fdstore_available())
                return;
        (void) uevent_log_read(m->uevents);
        fd = memfd_create("modgate-uevents", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
                log_warning_errno(errno, "Failed to save the uevent log for the next instance: %m");
                return;
        }
        r = uevent_log_save(m->uevents, fd);
        if (r >= 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
                r = -errno;
        if (r >= 0)
                r = fdstore_put(fd, FDSTORE_UEVENT_LOG);
        if (r < 0)
                log_warning_errno(r, "Failed to save the uevent log for the next instance: %m");
}

int manager_startup(Manager *m) {
        unsigned skipped = 0;
        char index_dir[64];
        int r;

        assert(m);

        manager_lock_running(m);

        r = fdstore_init();
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                log_warning_errno(r, "Ignoring the fds passed at start other than the varlink sockets: %m");
        if (!fdstore_available())
                log_notice(
                        "No file descriptor store (FileDescriptorStoreMax=): this boot's history, the "
                        "trusted roots' identities and the kernel's uevents are not kept across restarts.");
        r = root_identity_store_open(fdstore_available());
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                log_warning_errno(r,
                                  "Ignoring the trusted roots' records of the fd store, roots are recorded "
                                  "anew: %m");
        /* Before the roots: whether they may need the prober depends on roothash= and usrhash=. */
        r = manager_read_cmdline(m);
        if (r < 0)
                return r;

        r = manager_pin_roots(m);
        if (r < 0)
                return r;

        /* The index is read through the pinned root, like every module file. */
        (void) snprintf(index_dir, sizeof(index_dir), "/proc/self/fd/%d", m->roots[0]->fd);
        r = resolver_new(m->roots[0]->path, index_dir, m->kernel_cmdline, &m->resolver);
        if (r < 0)
                return log_error_errno(r, "Failed to load the module index of %s: %m", m->roots[0]->path);

        r = kernel_compression(&m->kernel_compression);
        if (r < 0)
                return log_error_errno(r, "Failed to read /sys/module/compression: %m");

        manager_record_ignored_inputs(m);

        r = policy_complete(&m->config.policy, m->kernel_cmdline, m->policy_digest);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the module policy: %m");
        manager_log_policy(m, "Loaded");

        /* Before any thread is made: capabilities, the bounding set included, are each thread's own,
         * and a worker made before the drop would keep CAP_BPF and CAP_PERFMON. From here on the
         * kernel refuses every load but modgated's (in enforce); what remains of the start takes
         * far less than modgate-modprobe waits for an answer (15 s), so a kernel's request that
         * comes now waits for this instance, as it would have for a loader without the guard. An
         * adopted guard was attached all along. */
        r = manager_guard_start(m);
        if (r < 0)
                return r;

        m->load_context = (LoadContext) {
                .roots = m->roots,
                .n_roots = m->n_roots,
                .kernel_compression = m->kernel_compression,
                .cmdline_root_hashes = m->cmdline_root_hashes,
                .probe_address = m->probe_address ?: PROBE_ADDRESS,
                .source_signers = m->config.source_signers,
                .guard = m->guard,
        };
        r = scheduler_new(m->event, &m->load_context, m->config.workers, &m->scheduler);
        if (r < 0)
                return log_error_errno(r, "Failed to start %u worker threads: %m", m->config.workers);
        scheduler_set_load_alone(m->scheduler, m->config.load_alone);
        r = reader_pool_new(m->event, &m->readers);
        if (r < 0)
                return log_error_errno(r, "Failed to start the threads of Explain and Status: %m");
        scheduler_set_record(m->scheduler, manager_record_module, manager_record_started,
                             manager_record_modinfo, m);

        r = history_open(fdstore_available(), &m->history, &skipped);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                log_warning_errno(r, "Failed to read the history of this boot, starting a new one in "
                                  "memory: %m");
        if (r < 0 && history_open(false, &m->history, &skipped) < 0)
                return log_oom();
        if (skipped > 0)
                log_warning("Skipped %u entries of the history that do not parse (a write cut short?).",
                            skipped);
        /* Watching first, then looking: a load between the two is seen twice, and recorded once. */
        r = manager_follow_uevents(m);
        if (r < 0)
                return r;
        r = manager_reconcile(m);
        if (r < 0)
                return r;

        log_info("The kernel decompresses %s modules; %u workers.",
                 compression_to_string(m->kernel_compression), m->config.workers);

        manager_check_udevd(m, false);

        (void) seal_startup(m);
        manager_log_enforcement(m);

        /* What was refused while no modgated ran waits in the ring buffer: recorded now that the
         * records' counting and the history are there. */
        guard_drain(m->guard);
        fdstore_done();

        return manager_varlink_init(m);
}

void manager_touch(Manager *m) {
        assert(m);

        m->last_activity_usec = now_usec();
}

/* Whether nothing that was asked is unanswered: no Load waiting for its jobs, no job (a job's waiters
 * are answered when it finishes), no reader's work, and every answer made written out. */
static bool manager_drained(Manager *m) {
        return m->n_requests == 0 && scheduler_n_jobs(m->scheduler) == 0 &&
                reader_pool_pending(m->readers) == 0 && m->n_replied == 0;
}

/* Drained, and nobody connected. */
static bool manager_is_idle(Manager *m) {
        return manager_drained(m) && sd_varlink_server_current_connections(m->varlink_server) == 0;
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_usec(), due = m->last_activity_usec + m->config.idle_exit_usec;

        if (now >= due && manager_is_idle(m)) {
                /* Nothing is accepted from here on: a client that connects now waits in the socket's
                 * backlog, and the service manager starts the next instance for it. */
                log_info("Idle for %llu s, exiting.",
                         (unsigned long long) (m->config.idle_exit_usec / 1000000U));
                (void) sd_varlink_server_shutdown(m->varlink_server);
                return sd_event_exit(sd_event_source_get_event(s), 0);
        }

        (void) sd_event_source_set_time_relative(s, now >= due ? m->config.idle_exit_usec : due - now);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int manager_arm_idle_timer(Manager *m) {
        if (m->config.idle_exit_usec == 0)
                return sd_event_source_set_enabled(m->idle_timer, SD_EVENT_OFF);

        manager_touch(m);
        if (m->idle_timer) {
                (void) sd_event_source_set_time_relative(m->idle_timer, m->config.idle_exit_usec);
                return sd_event_source_set_enabled(m->idle_timer, SD_EVENT_ONESHOT);
        }
        return sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC,
                                          m->config.idle_exit_usec, USEC_PER_SEC, on_idle_timer, m);
}

/* Settings that workers or pinned roots depend on wait for a restart; the rest apply now. */
void manager_check_udevd(Manager *m, bool asked_by_udevd) {
        int r;

        assert(m);

        if (m->udevd_checked)
                return;
        r = udevd_check_cap_sys_module();
        if (r > 0)
                log_warning("systemd-udevd holds CAP_SYS_MODULE: its kmod builtin can load modules "
                            "without modgate.");
        else if (r == 0)
                log_info(
                        "systemd-udevd runs without CAP_SYS_MODULE: it loads modules through modgate only.");
        else
                log_debug_errno(r, "Could not check systemd-udevd for CAP_SYS_MODULE: %m");
        /* Not running yet (the udev takeover starts modgated beside udevd): checked again when udevd
         * first asks, and only then: a udevd unit whose process is not found then (renamed, or a
         * test's) would have every request read /proc/PID/comm of every process. */
        m->udevd_checked = r != -ESRCH || asked_by_udevd;
}

int manager_read_udev_rules(Manager *m) {
        _cleanup_strv_free_ char **files = NULL;
        UdevRuleName *names = NULL;
        size_t n = 0;
        int r;
        _cleanup_free_ char *stamp = NULL;
        size_t size = 0;
        FILE *f;

        assert(m);

        /* Not /run/udev/rules.d: a copy there that modgate-udev-rules wrote is read from its source, and
         * anything else there was written by what may not widen udevd's loads (udevd itself among them). */
        r = conf_files_list(udev_rules_trusted_dirs, NULL, ".rules", 0, SIZE_MAX, &files);
        if (r < 0)
                return log_warning_errno(
                        r, "Failed to list udev's rules files, keeping what they said before: %m");

        /* Read again only what changed since: which files, and each one's inode, size and time. */
        f = open_memstream(&stamp, &size);
        if (!f)
                return log_oom();
        for (char **p = files; *p; p++) {
                struct stat st = {};

                (void) stat(*p, &st);
                fprintf(f, "%s:%llu:%llu:%lld:%lld.%ld\n", *p, (unsigned long long) st.st_dev,
                        (unsigned long long) st.st_ino, (long long) st.st_size,
                        (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        }
        if (fclose(f) != 0 || !stamp)
                return log_oom();
        if (streq_ptr(stamp, m->udev_rules_stamp))
                return 0;

        r = udev_rule_names_read((const char *const *) files, &names, &n);
        if (r < 0)
                return log_oom();
        udev_rule_names_free(m->udev_rule_names, m->n_udev_rule_names);
        m->udev_rule_names = names;
        m->n_udev_rule_names = n;
        free(m->udev_rules_stamp);
        m->udev_rules_stamp = TAKE_PTR(stamp);
        return 0;
}

int manager_reload(Manager *m, char **ret_error) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *error = NULL;
        char digest[SHA256_HEX_SIZE];
        int r;

        assert(m);

        (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading...\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec());

        config_init_defaults(&c);
        r = config_load(&c, NULL, &error);
        if (r >= 0)
                r = policy_complete(&c.policy, m->kernel_cmdline, digest);
        if (r < 0) {
                log_error_errno(r, "Invalid configuration, keeping the running one: %s",
                                error ?: "out of memory");
                (void) sd_notify(false,
                                 "READY=1\nSTATUS=Processing requests (configuration not reloaded)...");
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }

        if (c.workers != m->config.workers || !config_trust_equal(&c, &m->config))
                log_notice("Workers=, the signer rules of [Source] and the trust settings ([Trust], "
                           "[Root]) take effect at the next start.");

        /* Decisions are made on this thread only, so the swap is whole for every request. */
        policy_done(&m->config.policy);
        m->config.policy = c.policy;
        policy_init(&c.policy);
        memcpy(m->policy_digest, digest, sizeof(digest));
        manager_log_policy(m, "Reloaded");
        if (monitors_active(m->monitors)) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *f = NULL;

                if (sd_json_buildo(&f, SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest)) >= 0)
                        manager_emit(m, "reloaded", NULL, f);
        }
        m->config.have_read_group = c.have_read_group;
        m->config.read_group = c.read_group;

        if (!m->keep_load_alone) {
                /* Jobs read the list only on this thread, when they are made. */
                strv_free(m->config.load_alone);
                m->config.load_alone = TAKE_PTR(c.load_alone);
                scheduler_set_load_alone(m->scheduler, m->config.load_alone);
        }
        if (!m->keep_idle_exit) {
                m->config.idle_exit_usec = c.idle_exit_usec;
                r = manager_arm_idle_timer(m);
                if (r < 0)
                        log_warning_errno(r, "Failed to arm the idle timer: %m");
        }

        manager_record_ignored_inputs(m);
        r = resolver_reload(m->resolver);
        if (r < 0)
                log_warning_errno(r, "Failed to reload the module index, keeping the old one: %m");
        else
                log_info("Reloaded the module index and modprobe.d.");
        scheduler_flush_denials(m->scheduler);
        /* Under the new configuration a refusal may have another reason: the first of each is a record
         * again, and what was counted under the old one is summarized now. */
        manager_write_summaries(m);

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");
        return 0;
}

/* The sender of a signal, for its record: what could be read of it (it may have exited already). */
static void sender_describe(pid_t pid, char *comm, size_t comm_size, char **ret_unit) {
        _cleanup_free_ char *cgroup = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        bool system, root_cgroup;
        char path[64];
        size_t size;

        comm[0] = '\0';
        *ret_unit = NULL;
        if (pid <= 0)
                return;
        (void) snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        if (read_line_at(AT_FDCWD, path, comm, comm_size) < 0)
                comm[0] = '\0';
        (void) snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return;
        if (read_full_stream(f, 64 * 1024, &cgroup, &size) >= 0)
                (void) cgroup_unit(cgroup, ret_unit, &system, &root_cgroup);
}

/* A reload changes the policy: only PID 1 may ask for one by signal (Type=notify-reload: `systemctl
 * reload` has it send SIGHUP), as only what may ask PID 1 could load modules anyway. Anyone else who
 * may signal this daemon (root without CAP_SYS_MODULE, a process in its own uid's reach) gets a
 * record, not a reload; the varlink Reload checks its caller itself. */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_free_ char *unit = NULL;
        char comm[32];

        if (si->ssi_pid == 1) {
                (void) manager_reload(userdata, NULL);
                return 0;
        }
        sender_describe((pid_t) si->ssi_pid, comm, sizeof(comm), &unit);
        journal_record_signal_ignored("SIGHUP", (pid_t) si->ssi_pid, (uid_t) si->ssi_uid,
                                      comm[0] ? comm : NULL, unit);
        return 0;
}

/* After each turn of the loop that did something (an answer written, a load done) while stopping. */
static int on_stop_check(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        return manager_drained(m) ? sd_event_exit(m->event, 0) : 0;
}

static int on_stop_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_warning("Stopping with %u requests and %zu loads still unanswered after %llu s.", m->n_requests,
                    scheduler_n_jobs(m->scheduler), (unsigned long long) (STOP_DRAIN_USEC / USEC_PER_SEC));
        return sd_event_exit(m->event, 0);
}

/* SIGTERM (systemctl stop, restart, a package's upgrade) and SIGINT: what is in flight is finished and
 * answered before the loop ends, so that no caller is left without an answer while its module loads
 * (the loop ending at once left the workers' answers unwritten). What arrives meanwhile is served
 * too; whatever is still unanswered after STOP_DRAIN_USEC is left, and said. */
static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        int r;

        if (m->stop_check)
                return 0;
        if (manager_drained(m))
                return sd_event_exit(m->event, 0);
        log_info("Stopping once the %u requests and %zu loads in flight are answered.", m->n_requests,
                 scheduler_n_jobs(m->scheduler));
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Answering the requests in flight...");
        r = sd_event_add_post(m->event, &m->stop_check, on_stop_check, m);
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC, STOP_DRAIN_USEC, 0,
                                               on_stop_timer, m);
        if (r < 0) {
                log_warning_errno(r, "Failed to wait for the requests in flight, stopping now: %m");
                return sd_event_exit(m->event, 0);
        }
        return 0;
}

int manager_run(Manager *m) {
        int r;

        assert(m);

        r = sd_event_add_signal(m->event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to handle SIGHUP: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_stop_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to handle SIGTERM: %m");
        r = sd_event_add_signal(m->event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, on_stop_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to handle SIGINT: %m");

        r = manager_arm_idle_timer(m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the idle timer: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");

        manager_keep_uevents(m);
        (void) sd_notify(false, "STOPPING=1");
        return 0;
}
