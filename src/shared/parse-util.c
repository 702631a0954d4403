/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "parse-util.h"

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Reads the digits at *p into *ret and moves *p past them. */
static int parse_digits(const char **p, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;
        bool range = false;

        if (!is_digit(**p))
                return -EINVAL;
        for (; is_digit(**p); (*p)++) {
                unsigned d = (unsigned) (**p - '0');

                if (v > (max - d) / 10)
                        range = true;
                else
                        v = v * 10 + d;
        }
        if (range)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_unsigned(const char *s, unsigned *ret) {
        uint64_t v;
        int r;

        assert(ret);

        /* Not a number at all is -EINVAL, even when its digits alone would not fit. */
        r = parse_digits(&s, UINT_MAX, &v);
        if (r == -EINVAL || *s != '\0')
                return -EINVAL;
        if (r < 0)
                return r;
        *ret = (unsigned) v;
        return 0;
}

int parse_uint64(const char *s, uint64_t *ret) {
        uint64_t v;
        int r;

        assert(ret);

        /* Not a number at all is -EINVAL, even when its digits alone would not fit. */
        r = parse_digits(&s, UINT64_MAX, &v);
        if (r == -EINVAL || *s != '\0')
                return -EINVAL;
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

static int timespan_unit(const char *unit, size_t n, uint64_t *ret) {
        static const struct {
                const char *name;
                uint64_t usec;
        } units[] = {
                { "us", 1 },                   { "usec", 1 },
                { "ms", USEC_PER_MSEC },       { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC },         { "sec", USEC_PER_SEC },
                { "second", USEC_PER_SEC },    { "seconds", USEC_PER_SEC },
                { "m", USEC_PER_MINUTE },      { "min", USEC_PER_MINUTE },
                { "minute", USEC_PER_MINUTE }, { "minutes", USEC_PER_MINUTE },
                { "h", USEC_PER_HOUR },        { "hr", USEC_PER_HOUR },
                { "hour", USEC_PER_HOUR },     { "hours", USEC_PER_HOUR },
                { "d", USEC_PER_DAY },         { "day", USEC_PER_DAY },
                { "days", USEC_PER_DAY },      { "w", USEC_PER_WEEK },
                { "week", USEC_PER_WEEK },     { "weeks", USEC_PER_WEEK },
        };

        if (n == 0) {
                *ret = USEC_PER_SEC;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strlen(units[i].name) == n && strncmp(units[i].name, unit, n) == 0) {
                        *ret = units[i].usec;
                        return 0;
                }
        return -EINVAL;
}

/* One "NUMBER[UNIT]" component at *p, in microseconds; moves *p past it. */
static int timespan_component(const char **p, uint64_t *ret) {
        uint64_t v = 0, mult;
        const char *unit;
        bool range;
        int r;

        /* A number too large is still read to its end, so that the unit after it is checked too. */
        r = parse_digits(p, USEC_INFINITY - 1, &v);
        if (r == -EINVAL)
                return r;
        range = r == -ERANGE;
        *p += strspn(*p, " \t");
        for (unit = *p; is_alpha(**p); (*p)++)
                ;
        r = timespan_unit(unit, (size_t) (*p - unit), &mult);
        if (r < 0)
                return r;
        if (range || v > (USEC_INFINITY - 1) / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

int parse_timespan(const char *s, uint64_t *ret) {
        uint64_t sum = 0;
        bool range = false;

        assert(ret);

        if (strcmp(s, "infinity") == 0) {
                *ret = USEC_INFINITY;
                return 0;
        }
        /* Blanks go between components only: none at either end. */
        if (!is_digit(*s) || strchr(" \t", s[strlen(s) - 1]))
                return -EINVAL;

        while (*s != '\0') {
                uint64_t v;
                int r;

                r = timespan_component(&s, &v);
                if (r == -ERANGE || (r >= 0 && v > USEC_INFINITY - 1 - sum))
                        range = true;
                else if (r < 0)
                        return r;
                else
                        sum += v;
                s += strspn(s, " \t");
        }
        if (range)
                return -ERANGE;
        *ret = sum;
        return 0;
}
