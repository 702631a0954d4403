/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool level_prefix = false;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_open(void) {
        const char *e;

        /* systemd sets JOURNAL_STREAM when stderr goes to the journal; the "<N>" prefix then carries
         * the priority. */
        level_prefix = getenv("JOURNAL_STREAM");

        e = getenv("MODGATE_LOG_LEVEL");
        if (e) {
                static const char *const names[] = { "emerg", "alert", "crit", "err",
                                                     "warning", "notice", "info", "debug" };
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (strcmp(e, names[i]) == 0)
                                max_level = (int) i;
        }
}

int log_internal(int level, int error, const char *format, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        error = abs(error);
        if (error != 0)
                errno = error;

        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        if (level_prefix)
                fprintf(stderr, "<%d>%s\n", level, buf);
        else
                fprintf(stderr, "%s\n", buf);

        errno = saved;
        return -error;
}

int log_oom(void) {
        return log_error_errno(ENOMEM, "Out of memory.");
}
