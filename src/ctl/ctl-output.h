/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-json.h>

#include "macro.h"

/* Colours, as systemd's tools choose them: $SYSTEMD_COLORS decides when set, else $NO_COLOR turns
 * them off, else stdout must be a terminal that is not dumb. Decided once, before a pager takes
 * stdout. */
bool colors_enabled(void);
bool terminal_is_dumb(void);

#define ANSI_RED "\x1B[0;1;31m"
#define ANSI_GREEN "\x1B[0;1;32m"
#define ANSI_YELLOW "\x1B[0;1;33m"
#define ANSI_BLUE "\x1B[0;1;34m"
#define ANSI_GREY "\x1B[0;38;5;245m"
#define ANSI_BOLD "\x1B[0;1;39m"
#define ANSI_UNDERLINE "\x1B[0;4m"
#define ANSI_NORMAL "\x1B[0m"

/* The colour sequence, or "" without colours. */
const char *ansi(const char *seq);
/* The colour of an outcome, verdict or event type: green for loaded, red for refused or failed,
 * yellow for would-deny and other loaders' doings; NULL for none. */
const char *outcome_color(const char *outcome);
/* "●" on a UTF-8 terminal, "*" elsewhere. */
const char *glyph_dot(void);

/* Whether --json= is on; the daemon's reply as it asks (nothing for NULL). */
bool json_output(void);
void json_dump(sd_json_variant *v);

/* Field accessors that tolerate a missing or mistyped field. */
const char *json_str(sd_json_variant *v, const char *key);
bool json_int(sd_json_variant *v, const char *key, int64_t *ret);
bool json_bool(sd_json_variant *v, const char *key);
/* The strings of an array field joined with sep, or NULL when it is missing or empty. */
char *json_join(sd_json_variant *v, const char *key, const char *sep);

/* "Mon 2025-01-13 12:00:01 CET", "Jan 13 12:00:01", "12:00:01.123" (local time), "3min 12s",
 * "3min ago". usec is µs since the epoch (CLOCK_REALTIME), or a span. */
#define TIMESTAMP_MAX 64
char *format_timestamp(char buf[static TIMESTAMP_MAX], uint64_t usec);
char *format_timestamp_short(char buf[static TIMESTAMP_MAX], uint64_t usec);
char *format_timestamp_precise(char buf[static TIMESTAMP_MAX], uint64_t usec);
char *format_timespan(char buf[static TIMESTAMP_MAX], uint64_t usec);
char *format_ago(char buf[static TIMESTAMP_MAX], uint64_t usec);

/* "        Key: value", systemctl status's block; nothing for a NULL value. */
void print_field(const char *key, const char *value);
void print_fieldf(const char *key, const char *format, ...) _printf_(2, 3);
#define FIELD_WIDTH 12
