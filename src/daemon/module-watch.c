/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libudev.h>
#include <stdlib.h>
#include <string.h>

#include "module-watch.h"

struct ModuleWatch {
        struct udev *udev;
        struct udev_monitor *monitor;
        sd_event_source *source;
        module_watch_t cb;
        void *userdata;
};

ModuleWatch *module_watch_free(ModuleWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        udev_monitor_unref(w->monitor);
        udev_unref(w->udev);
        free(w);
        return NULL;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ModuleWatch *w = userdata;
        struct udev_device *d;
        const char *action, *name;

        /* One event per wakeup; the socket stays readable while more wait. */
        d = udev_monitor_receive_device(w->monitor);
        if (!d)
                return 0;
        action = udev_device_get_action(d);
        name = udev_device_get_sysname(d);
        if (action && name && (strcmp(action, "add") == 0 || strcmp(action, "remove") == 0))
                w->cb(name, action[0] == 'a', w->userdata);
        udev_device_unref(d);
        return 0;
}

int module_watch_new(sd_event *e, module_watch_t cb, void *userdata, ModuleWatch **ret) {
        _cleanup_(module_watch_freep) ModuleWatch *w = calloc(1, sizeof(ModuleWatch));
        int r;

        if (!w)
                return -ENOMEM;
        w->cb = cb;
        w->userdata = userdata;
        w->udev = udev_new();
        if (!w->udev)
                return -ENOMEM;
        /* The kernel's own events, not udevd's: under the takeover udevd may not be running yet. */
        w->monitor = udev_monitor_new_from_netlink(w->udev, "kernel");
        if (!w->monitor)
                return negative_errno();
        r = udev_monitor_filter_add_match_subsystem_devtype(w->monitor, "module", NULL);
        if (r >= 0)
                r = udev_monitor_enable_receiving(w->monitor);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &w->source, udev_monitor_get_fd(w->monitor), EPOLLIN, on_uevent, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}
