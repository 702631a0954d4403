/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "macro.h"
#include "parse-util.h"
#include "tests.h"

TEST(boolean) {
        static const char *const yes[] = { "1", "yes", "YES", "true", "True", "on", "ON" };
        static const char *const no[] = { "0", "no", "No", "false", "FALSE", "off", "Off" };
        static const char *const bad[] = { "", "y", "n", "2", "yess", " yes", "yes ", "enable", "-1" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                check(parse_boolean(yes[i]) == 1);
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                check(parse_boolean(no[i]) == 0);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                check(parse_boolean(bad[i]) == -EINVAL);
}

TEST(unsigned_numbers) {
        unsigned u = 7;

        check(parse_unsigned("0", &u) == 0 && u == 0);
        check(parse_unsigned("64", &u) == 0 && u == 64);
        check(parse_unsigned("007", &u) == 0 && u == 7);
        check(parse_unsigned("4294967295", &u) == 0 && u == 4294967295u);
        check(parse_unsigned("4294967296", &u) == -ERANGE && u == 4294967295u);
        check(parse_unsigned("99999999999999999999999", &u) == -ERANGE);
        check(parse_unsigned("", &u) == -EINVAL);
        check(parse_unsigned("-1", &u) == -EINVAL);
        check(parse_unsigned("+1", &u) == -EINVAL);
        check(parse_unsigned(" 1", &u) == -EINVAL);
        check(parse_unsigned("1 ", &u) == -EINVAL);
        check(parse_unsigned("0x10", &u) == -EINVAL);
        check(parse_unsigned("1e3", &u) == -EINVAL);
        /* Not a number, however large its digits. */
        check(parse_unsigned("18446744073.709551615", &u) == -EINVAL);
        check(parse_uint64("18446744073709551616x", &(uint64_t) { 0 }) == -EINVAL);
        check(parse_uint64("18446744073709551616", &(uint64_t) { 0 }) == -ERANGE);
}

static uint64_t span(const char *s) {
        uint64_t v = 12345;

        check(parse_timespan(s, &v) == 0);
        return v;
}

TEST(timespan) {
        check(span("0") == 0);
        check(span("30") == 30 * USEC_PER_SEC);
        check(span("30s") == 30 * USEC_PER_SEC);
        check(span("30 sec") == 30 * USEC_PER_SEC);
        check(span("5min") == 5 * USEC_PER_MINUTE);
        check(span("5m") == 5 * USEC_PER_MINUTE);
        check(span("1h 30min") == USEC_PER_HOUR + 30 * USEC_PER_MINUTE);
        check(span("1h30min5s") == USEC_PER_HOUR + 30 * USEC_PER_MINUTE + 5 * USEC_PER_SEC);
        check(span("2d") == 2 * USEC_PER_DAY);
        check(span("1w") == USEC_PER_WEEK);
        check(span("250ms") == 250 * USEC_PER_MSEC);
        check(span("7us") == 7);
        check(span("7usec") == 7);
        check(span("infinity") == USEC_INFINITY);
        /* The largest finite value, one below infinity. */
        check(span("18446744073709551614us") == USEC_INFINITY - 1);
}

TEST(timespan_invalid) {
        static const char *const bad[] = {
                "", " 5s", "s", "5x", "5 x", "1.5s", "-5s", "5s,", "infinite", "Infinity", "5S", "5sec s",
                "5µs", "99999999999999999999999x", "5s ", "5 ", "1min 30s\t",
        };
        static const char *const range[] = {
                "18446744073709551615us", "99999999999999999999999", "18446744073709551614", "40000000w",
                "10000000000000s 10000000000000s",
        };
        uint64_t v = 1;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (parse_timespan(bad[i], &v) != -EINVAL)
                        fprintf(stderr, "not refused as invalid: '%s'\n", bad[i]);
                check(parse_timespan(bad[i], &v) == -EINVAL);
        }
        for (size_t i = 0; i < ELEMENTSOF(range); i++) {
                if (parse_timespan(range[i], &v) != -ERANGE)
                        fprintf(stderr, "not refused as out of range: '%s'\n", range[i]);
                check(parse_timespan(range[i], &v) == -ERANGE);
        }
        check(v == 1);
}

int main(void) {
        RUN(boolean);
        RUN(unsigned_numbers);
        RUN(timespan);
        RUN(timespan_invalid);
        return tests_done();
}
