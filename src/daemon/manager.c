/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "enforcement.h"
#include "kernel.h"
#include "loader.h"
#include "log.h"
#include "manager.h"
#include "strv.h"
#include "udevd-check.h"
#include "varlink.h"

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        config_init_defaults(&m->config);

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;

        r = sd_event_set_signal_exit(m->event, true);
        if (r < 0)
                return r;

        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        sd_event_source_disable_unref(m->idle_timer);
        /* Workers first: a load in progress completes, nothing new starts. */
        m->scheduler = scheduler_free(m->scheduler);
        manager_free_requests(m);
        sd_varlink_server_unref(m->varlink_server);
        resolver_free(m->resolver);
        for (size_t i = 0; i < m->n_roots; i++)
                trusted_root_free(m->roots[i]);
        free(m->roots);
        manifest_free(m->manifest);
        free(m->manifest_error);
        sd_event_unref(m->event);
        config_done(&m->config);
        free(m->listen_address);
        free(m);
        return NULL;
}

static int manager_pin_roots(Manager *m) {
        _cleanup_free_ char *def = NULL;
        char *const *paths = m->config.trusted_roots;
        char *one[2] = {};
        int r;

        if (strv_length(paths) == 0) {
                r = config_default_trusted_root(&def);
                if (r < 0)
                        return log_error_errno(r, "Failed to determine the module directory: %m");
                one[0] = def;
                paths = one;
        }

        m->roots = calloc(strv_length(paths), sizeof(TrustedRoot *));
        if (!m->roots)
                return log_oom();
        for (; paths[m->n_roots]; m->n_roots++) {
                TrustedRoot *t;

                r = trusted_root_new(paths[m->n_roots], &t);
                if (r < 0)
                        return log_error_errno(r, "Failed to pin trusted root %s: %m", paths[m->n_roots]);
                m->roots[m->n_roots] = t;
                log_info("Trusted root %s (mount %llu).", t->path, (unsigned long long) t->mount_id);
        }
        return 0;
}

static int manager_manifest_unavailable(Manager *m, const char *path, const char *why) {
        if (asprintf(&m->manifest_error, "%s: %s", path, why) < 0) {
                m->manifest_error = NULL;
                return log_oom();
        }
        log_warning("Manifest %s cannot be used: %s. Only other evidence can vouch for module files.", path, why);
        return 0;
}

/* The manifest of the kernel's module tree (roots[0]), when manifest evidence is accepted. Read once
 * through an fd that is checked itself; none, or a refused one, is no manifest, and every load that
 * needs it is refused saying why. */
static int manager_load_manifest(Manager *m) {
        _cleanup_free_ char *path = NULL, *msg = NULL;
        ManifestOrigin o;
        int r;

        if (!(config_evidence(&m->config) & EVIDENCE_MASK(EVIDENCE_MANIFEST)))
                return 0;
        r = config_manifest_path(&m->config, &path);
        if (r < 0)
                return log_error_errno(r, "Failed to determine the manifest's path: %m");

        r = manifest_load_path(path, &m->manifest, &msg);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return manager_manifest_unavailable(m, path, msg ?: strerror(-r));

        o = manifest_origin(m->manifest);
        log_info("Manifest %s: %zu module files of kernel %s, written by %s.", path, manifest_entries(m->manifest),
                 manifest_kernel(m->manifest), manifest_origin_to_string(o));
        if (o == MANIFEST_ORIGIN_FIRST_USE)
                log_notice("Manifest %s was written on first use: it vouches for the files as they were then, "
                           "not as the kernel package installed them.", path);
        return 0;
}

/* Only the kernel stops root: say once, at start, which of its mechanisms are in force, as seen from
 * inside the service's sandbox and with its one capability. */
static void manager_log_enforcement(void) {
        _cleanup_free_ char *line = NULL;
        Enforcement e;
        int r;

        r = enforcement_describe("/", &e, &line);
        if (r < 0) {
                log_warning_errno(r, "Failed to read the kernel's module enforcement: %m");
                return;
        }
        if (e.modules_disabled.value == PROBE_YES)
                log_warning("Kernel enforcement: %s. kernel.modules_disabled=1: every module load fails until "
                            "reboot.", line);
        else
                log_info("Kernel enforcement: %s.", line);
}

int manager_startup(Manager *m) {
        _cleanup_free_ char *evidence = NULL;
        char index_dir[64];
        int r;

        r = manager_pin_roots(m);
        if (r < 0)
                return r;

        /* The index is read through the pinned root, like every module file. */
        (void) snprintf(index_dir, sizeof(index_dir), "/proc/self/fd/%d", m->roots[0]->fd);
        r = resolver_new(m->roots[0]->path, index_dir, &m->resolver);
        if (r < 0)
                return log_error_errno(r, "Failed to load the module index of %s: %m", m->roots[0]->path);

        r = kernel_compression(&m->kernel_compression);
        if (r < 0)
                return log_error_errno(r, "Failed to read /sys/module/compression: %m");

        r = manager_load_manifest(m);
        if (r < 0)
                return r;

        r = scheduler_new(m->event,
                          &(LoadContext) {
                                  .roots = m->roots,
                                  .n_roots = m->n_roots,
                                  .kernel_compression = m->kernel_compression,
                                  .evidence = config_evidence(&m->config),
                                  .manifest = m->manifest,
                                  .manifest_error = m->manifest_error,
                          },
                          m->config.workers, &m->scheduler);
        if (r < 0)
                return log_error_errno(r, "Failed to start %u worker threads: %m", m->config.workers);
        scheduler_set_load_alone(m->scheduler, m->config.load_alone);

        if (evidence_mask_to_string(config_evidence(&m->config), " ", &evidence) < 0)
                return log_oom();
        log_info("The kernel decompresses %s modules; %u workers; module files need evidence of origin: %s.",
                 compression_to_string(m->kernel_compression), m->config.workers, evidence);
        if (config_evidence(&m->config) & EVIDENCE_MASK(EVIDENCE_OWNERSHIP))
                log_warning("%s: module files whose origin is not verified are trusted when root owns them.",
                            m->config.require_superblock_ro ? "Evidence=ownership" : "RequireReadOnlySuperblock=no");

        r = udevd_check_cap_sys_module();
        if (r > 0)
                log_warning("systemd-udevd holds CAP_SYS_MODULE: its kmod builtin can load modules "
                            "without modgate.");
        else if (r == 0)
                log_info("systemd-udevd runs without CAP_SYS_MODULE: it loads modules through modgate only.");
        else
                log_debug_errno(r, "Could not check systemd-udevd for CAP_SYS_MODULE: %m");

        manager_log_enforcement();

        return manager_varlink_init(m);
}

void manager_touch(Manager *m) {
        m->last_activity_usec = now_usec();
}

static bool manager_is_idle(Manager *m) {
        return m->n_requests == 0 && scheduler_n_jobs(m->scheduler) == 0 &&
                sd_varlink_server_current_connections(m->varlink_server) == 0;
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_usec(), due = m->last_activity_usec + m->config.idle_exit_usec;

        if (now >= due && manager_is_idle(m)) {
                /* Nothing is accepted from here on: a client that connects now waits in the socket's
                 * backlog, and the service manager starts the next instance for it. */
                log_info("Idle for %llu s, exiting.", (unsigned long long) (m->config.idle_exit_usec / 1000000U));
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
        return sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC, m->config.idle_exit_usec,
                                          USEC_PER_SEC, on_idle_timer, m);
}

/* Settings that workers or pinned roots depend on wait for a restart; the rest apply now. */
static void manager_reload_config(Manager *m) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *error = NULL;
        int r;

        config_init_defaults(&c);
        r = config_load(&c, NULL, &error);
        if (r < 0) {
                log_error_errno(r, "Invalid configuration, keeping the running one: %s",
                                error ?: "out of memory");
                return;
        }

        if (c.workers != m->config.workers || config_evidence(&c) != config_evidence(&m->config) ||
            !strv_equal(c.trusted_roots, m->config.trusted_roots) ||
            strcmp(c.manifest ?: "", m->config.manifest ?: "") != 0)
                log_notice("Workers=, TrustedRoot=, Evidence=, Manifest= and RequireReadOnlySuperblock= take "
                           "effect at the next start.");

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
}

static int manager_reload(Manager *m) {
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading...\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec());

        manager_reload_config(m);

        r = resolver_reload(m->resolver);
        if (r < 0)
                log_warning_errno(r, "Failed to reload the module index, keeping the old one: %m");
        else
                log_info("Reloaded the module index and modprobe.d.");
        scheduler_flush_denials(m->scheduler);

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return manager_reload(userdata);
}

int manager_run(Manager *m) {
        int r;

        r = sd_event_add_signal(m->event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to handle SIGHUP: %m");

        r = manager_arm_idle_timer(m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the idle timer: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");

        (void) sd_notify(false, "STOPPING=1");
        return 0;
}
