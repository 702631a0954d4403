/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "kernel.h"
#include "loader.h"
#include "log.h"
#include "manager.h"
#include "strv.h"
#include "varlink.h"

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->n_workers = 4;

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
        strv_free(m->load_alone);
        trusted_root_free(m->root);
        sd_event_unref(m->event);
        free(m->trusted_root_path);
        free(m->listen_address);
        free(m);
        return NULL;
}

static int default_trusted_root(char **ret) {
        struct utsname u;

        if (uname(&u) < 0)
                return negative_errno();
        if (asprintf(ret, "/usr/lib/modules/%s", u.release) < 0)
                return -ENOMEM;
        return 0;
}

int manager_startup(Manager *m) {
        int r;

        if (!m->trusted_root_path) {
                r = default_trusted_root(&m->trusted_root_path);
                if (r < 0)
                        return log_error_errno(r, "Failed to determine the module directory: %m");
        }

        r = trusted_root_new(m->trusted_root_path, &m->root);
        if (r < 0)
                return log_error_errno(r, "Failed to pin trusted root %s: %m", m->trusted_root_path);

        r = resolver_new(m->trusted_root_path, &m->resolver);
        if (r < 0)
                return log_error_errno(r, "Failed to load the module index of %s: %m", m->trusted_root_path);

        r = kernel_compression(&m->kernel_compression);
        if (r < 0)
                return log_error_errno(r, "Failed to read /sys/module/compression: %m");

        r = scheduler_new(m->event,
                          &(LoadContext) { .root = m->root, .kernel_compression = m->kernel_compression },
                          m->n_workers, &m->scheduler);
        if (r < 0)
                return log_error_errno(r, "Failed to start %u worker threads: %m", m->n_workers);
        scheduler_set_load_alone(m->scheduler, m->load_alone);

        log_info("Trusted root %s (mount %llu); the kernel decompresses %s modules; %u workers.", m->root->path,
                 (unsigned long long) m->root->mount_id, compression_to_string(m->kernel_compression),
                 m->n_workers);

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
        uint64_t now = now_usec(), due = m->last_activity_usec + m->idle_exit_usec;

        if (now >= due && manager_is_idle(m)) {
                /* Nothing is accepted from here on: a client that connects now waits in the socket's
                 * backlog, and the service manager starts the next instance for it. */
                log_info("Idle for %llu s, exiting.", (unsigned long long) (m->idle_exit_usec / 1000000U));
                (void) sd_varlink_server_shutdown(m->varlink_server);
                return sd_event_exit(sd_event_source_get_event(s), 0);
        }

        (void) sd_event_source_set_time_relative(s, now >= due ? m->idle_exit_usec : due - now);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int manager_reload(Manager *m) {
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading...\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec());

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

        if (m->idle_exit_usec > 0) {
                manager_touch(m);
                r = sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC, m->idle_exit_usec,
                                               1000000U, on_idle_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to arm the idle timer: %m");
        }

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");

        (void) sd_notify(false, "STOPPING=1");
        return 0;
}
