/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

/* Logging to stderr. Under systemd, stderr is a journal stream and every line carries a "<N>" level
 * prefix. The error variants take a negative errno, make it available to %m, and return it, so that
 * the place that decides can log and return in one statement. */

void log_set_max_level(int level);
int log_get_max_level(void);
void log_open(void);

int log_internal(int level, int error, const char *format, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...)                                       \
        ({                                                                      \
                int _l_ = (level), _e_ = (error);                               \
                _l_ <= log_get_max_level() ? log_internal(_l_, _e_, __VA_ARGS__) \
                                           : -abs(_e_);                         \
        })

#define log_debug(...) (void) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) (void) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) (void) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) (void) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) (void) log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

int log_oom(void);
