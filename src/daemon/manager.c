/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "kernel.h"
#include "log.h"
#include "manager.h"
#include "udevd-check.h"
#include "varlink.h"

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;

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

        sd_varlink_server_unref(m->varlink_server);
        resolver_free(m->resolver);
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

        log_info("Trusted root %s (mount %llu); the kernel decompresses %s modules.", m->root->path,
                 (unsigned long long) m->root->mount_id, compression_to_string(m->kernel_compression));

        r = udevd_check_cap_sys_module();
        if (r > 0)
                log_warning("systemd-udevd holds CAP_SYS_MODULE: its kmod builtin can load modules "
                            "without modgate.");
        else if (r == 0)
                log_info("systemd-udevd runs without CAP_SYS_MODULE: it loads modules through modgate only.");
        else
                log_debug_errno(r, "Could not check systemd-udevd for CAP_SYS_MODULE: %m");

        return manager_varlink_init(m);
}

int manager_run(Manager *m) {
        int r;

        (void) sd_notify(false, "READY=1\nSTATUS=Processing requests...");

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");

        (void) sd_notify(false, "STOPPING=1");
        return 0;
}
