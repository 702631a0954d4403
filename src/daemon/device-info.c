/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libudev.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "device-info.h"
#include "log.h"

struct DeviceInfo {
        struct udev *udev;
        struct udev_hwdb *hwdb;
        bool tried;             /* opening once is enough: no database now is none until restart */
};

int device_info_new(DeviceInfo **ret) {
        *ret = calloc(1, sizeof(DeviceInfo));
        return *ret ? 0 : -ENOMEM;
}

DeviceInfo *device_info_free(DeviceInfo *d) {
        if (!d)
                return NULL;
        udev_hwdb_unref(d->hwdb);
        udev_unref(d->udev);
        free(d);
        return NULL;
}

static struct udev_hwdb *device_info_hwdb(DeviceInfo *d) {
        if (d->tried)
                return d->hwdb;
        d->tried = true;
        d->udev = udev_new();
        if (d->udev)
                d->hwdb = udev_hwdb_new(d->udev);
        if (!d->hwdb)
                log_info(
                        "udev's hardware database cannot be read: records carry no device vendor or model.");
        return d->hwdb;
}

int device_info_lookup(DeviceInfo *d, const char *modalias, char **ret_vendor, char **ret_model) {
        _cleanup_free_ char *vendor = NULL, *model = NULL;
        struct udev_list_entry *e;
        struct udev_hwdb *hwdb;

        hwdb = d && modalias ? device_info_hwdb(d) : NULL;
        udev_list_entry_foreach(e, hwdb ? udev_hwdb_get_properties_list_entry(hwdb, modalias, 0) : NULL) {
                const char *k = udev_list_entry_get_name(e), *v = udev_list_entry_get_value(e);
                char **field = strcmp(k, "ID_VENDOR_FROM_DATABASE") == 0 ? &vendor :
                               strcmp(k, "ID_MODEL_FROM_DATABASE") == 0 ? &model : NULL;

                if (!field || !v || *field)
                        continue;
                *field = strdup(v);
                if (!*field)
                        return -ENOMEM;
        }
        *ret_vendor = TAKE_PTR(vendor);
        *ret_model = TAKE_PTR(model);
        return 0;
}
