/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macro.h"

/* What udev's hardware database says of a device, from its modalias: the vendor and model names
 * (ID_VENDOR_FROM_DATABASE, ID_MODEL_FROM_DATABASE), for the record of a hotplug load. Read through
 * libudev's hwdb, the same database udev's rules consult; never what the client says. */

typedef struct DeviceInfo DeviceInfo;

/* Opens the database on first use. */
int device_info_new(DeviceInfo **ret);
DeviceInfo *device_info_free(DeviceInfo *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DeviceInfo *, device_info_free);

/* The vendor and model of modalias, each NULL when the database has none (or there is no database).
 * Returns 0 or -ENOMEM. */
int device_info_lookup(DeviceInfo *d, const char *modalias, char **ret_vendor, char **ret_model);
