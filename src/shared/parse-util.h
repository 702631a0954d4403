/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)
#define USEC_PER_WEEK (7 * USEC_PER_DAY)
#define USEC_INFINITY UINT64_MAX

/* The parsers take the whole string: no leading or trailing garbage, no whitespace around it.
 * They return 0, -EINVAL when the text is not of the expected form, or -ERANGE when it is but the
 * value does not fit. *ret is written only on success. */

/* "1", "yes", "true", "on" and "0", "no", "false", "off", in any case. Returns 1 or 0. */
int parse_boolean(const char *s);

/* Decimal digits only: no sign, no base prefix. */
int parse_unsigned(const char *s, unsigned *ret);
int parse_uint64(const char *s, uint64_t *ret);

/* A systemd-style time span: "infinity", or one or more "NUMBER[UNIT]" components, optionally
 * separated by whitespace ("1min 30s"), summed. Units: us usec ms msec s sec second seconds m min
 * minute minutes h hr hour hours d day days w week weeks. A number without a unit is seconds.
 * "infinity" gives USEC_INFINITY, which no finite span reaches (those give -ERANGE). */
int parse_timespan(const char *s, uint64_t *ret);
