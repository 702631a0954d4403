/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl-output.h"
#include "ctl.h"
#include "parse-util.h"

bool terminal_is_dumb(void) {
        const char *e = getenv("TERM");

        return !e || strcmp(e, "dumb") == 0;
}

bool colors_enabled(void) {
        static int cached = -1;
        const char *e;

        if (cached >= 0)
                return cached;

        e = getenv("SYSTEMD_COLORS");
        if (e && parse_boolean(e) >= 0)
                cached = parse_boolean(e);
        else if (e && (streq_ptr(e, "16") || streq_ptr(e, "256") || streq_ptr(e, "24bit")))
                cached = true;
        else if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
                cached = false;
        else
                cached = isatty(STDOUT_FILENO) && !terminal_is_dumb();
        return cached;
}

const char *ansi(const char *seq) {
        return colors_enabled() && seq ? seq : "";
}

const char *outcome_color(const char *o) {
        static const struct {
                const char *word, *color;
        } colors[] = {
                { "loaded", ANSI_GREEN },           { "load", ANSI_GREEN },
                { "already_loaded", ANSI_GREEN },   { "builtin", ANSI_GREEN },
                { "denied", ANSI_RED },             { "untrusted", ANSI_RED },
                { "failed", ANSI_RED },             { "not_found", ANSI_RED },
                { "refused_caller", ANSI_RED },     { "would_deny", ANSI_YELLOW },
                { "loaded_outside", ANSI_YELLOW },  { "unloaded_outside", ANSI_YELLOW },
                { "unloaded", ANSI_GREY },          { "sealed", ANSI_BLUE },
        };

        for (size_t i = 0; o && i < ELEMENTSOF(colors); i++)
                if (strcmp(colors[i].word, o) == 0)
                        return colors[i].color;
        return NULL;
}

const char *glyph_dot(void) {
        return streq_ptr(nl_langinfo(CODESET), "UTF-8") ? "\u25CF" : "*";
}

bool json_output(void) {
        return !(arg_json_format_flags & SD_JSON_FORMAT_OFF);
}

void json_dump(sd_json_variant *v) {
        /* No reply (the connection failed) prints nothing rather than an empty object. */
        if (!v)
                return;
        (void) sd_json_variant_dump(v,
                                    arg_json_format_flags | SD_JSON_FORMAT_NEWLINE | SD_JSON_FORMAT_FLUSH |
                                            (colors_enabled() ? SD_JSON_FORMAT_COLOR : 0),
                                    stdout, NULL);
}

const char *json_str(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_string(f) ? sd_json_variant_string(f) : NULL;
}

bool json_int(sd_json_variant *v, const char *key, int64_t *ret) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        if (!f || !sd_json_variant_is_integer(f))
                return false;
        *ret = sd_json_variant_integer(f);
        return true;
}

bool json_bool(sd_json_variant *v, const char *key) {
        sd_json_variant *f = v ? sd_json_variant_by_key(v, key) : NULL;

        return f && sd_json_variant_is_boolean(f) && sd_json_variant_boolean(f);
}

char *json_join(sd_json_variant *v, const char *key, const char *sep) {
        sd_json_variant *a = v ? sd_json_variant_by_key(v, key) : NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!a || !sd_json_variant_is_array(a) || sd_json_variant_elements(a) == 0)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < sd_json_variant_elements(a); i++) {
                sd_json_variant *e = sd_json_variant_by_index(a, i);

                fprintf(f, "%s%s", i > 0 ? sep : "",
                        sd_json_variant_is_string(e) ? sd_json_variant_string(e) : "?");
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Only ever called with the literal formats below. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static char *format_local(char buf[static TIMESTAMP_MAX], uint64_t usec, const char *format) {
        time_t sec = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&sec, &tm) || strftime(buf, TIMESTAMP_MAX, format, &tm) == 0)
                snprintf(buf, TIMESTAMP_MAX, "@%llu", (unsigned long long) (usec / USEC_PER_SEC));
        return buf;
}
#pragma GCC diagnostic pop

char *format_timestamp(char buf[static TIMESTAMP_MAX], uint64_t usec) {
        return format_local(buf, usec, "%a %Y-%m-%d %H:%M:%S %Z");
}

char *format_timestamp_short(char buf[static TIMESTAMP_MAX], uint64_t usec) {
        return format_local(buf, usec, "%b %d %H:%M:%S");
}

char *format_timestamp_precise(char buf[static TIMESTAMP_MAX], uint64_t usec) {
        size_t n;

        format_local(buf, usec, "%H:%M:%S");
        n = strlen(buf);
        snprintf(buf + n, TIMESTAMP_MAX - n, ".%03u", (unsigned) (usec % USEC_PER_SEC / USEC_PER_MSEC));
        return buf;
}

/* The two largest units, as systemd's format_timespan() does at its default accuracy. */
char *format_timespan(char buf[static TIMESTAMP_MAX], uint64_t usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "d", USEC_PER_DAY }, { "h", USEC_PER_HOUR }, { "min", USEC_PER_MINUTE },
                { "s", USEC_PER_SEC }, { "ms", USEC_PER_MSEC }, { "us", 1 },
        };
        size_t n = 0, shown = 0;

        /* Below a second, milliseconds with one decimal read best: "1.2ms", "850us". */
        if (usec >= USEC_PER_MSEC && usec < USEC_PER_SEC) {
                unsigned tenths = (unsigned) ((usec + 50) / 100);

                if (tenths % 10 == 0)
                        snprintf(buf, TIMESTAMP_MAX, "%ums", tenths / 10);
                else
                        snprintf(buf, TIMESTAMP_MAX, "%u.%ums", tenths / 10, tenths % 10);
                return buf;
        }
        buf[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(units) && shown < 2; i++) {
                uint64_t k = usec / units[i].usec;

                if (k == 0)
                        continue;
                n += (size_t) snprintf(buf + n, TIMESTAMP_MAX - n, "%s%llu%s", n > 0 ? " " : "",
                                       (unsigned long long) k, units[i].suffix);
                usec -= k * units[i].usec;
                shown++;
        }
        if (n == 0)
                snprintf(buf, TIMESTAMP_MAX, "0");
        return buf;
}

char *format_ago(char buf[static TIMESTAMP_MAX], uint64_t usec) {
        struct timespec ts;
        uint64_t now;
        size_t n;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        if (usec > now) {
                snprintf(buf, TIMESTAMP_MAX, "in the future");
                return buf;
        }
        /* Seconds are enough for a human. */
        format_timespan(buf, (now - usec) / USEC_PER_SEC * USEC_PER_SEC);
        n = strlen(buf);
        snprintf(buf + n, TIMESTAMP_MAX - n, n == 1 && buf[0] == '0' ? "s ago" : " ago");
        return buf;
}

void print_field(const char *key, const char *value) {
        if (value)
                printf("%*s: %s\n", FIELD_WIDTH, key, value);
}

void print_fieldf(const char *key, const char *format, ...) {
        va_list ap;

        printf("%*s: ", FIELD_WIDTH, key);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        fputc('\n', stdout);
}
