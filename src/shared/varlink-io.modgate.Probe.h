/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink-idl.h>

extern const sd_varlink_interface vl_interface_io_modgate_Probe;
