/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* CLOCK_MONOTONIC in µs: how long, for deadlines and durations. */
uint64_t now_usec(void);
/* CLOCK_REALTIME in µs: when, for records and events. */
uint64_t realtime_usec(void);
