/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The reader of modgate.conf's syntax with a table of its own, as a new setting or section would add
 * one: the sections, the required and first keys and the messages come from the table alone. The
 * syntax itself is tested with modgate.conf's table in test-config.c. */

#include <errno.h>
#include <string.h>

#include "conf-parser.h"
#include "macro.h"
#include "tests.h"

typedef struct Seen {
        ConfParser parser;
        char log[256];                  /* "Section:line " at each header, "Key=Value " at each assignment */
} Seen;

static void seen_add(ConfParser *p, const char *what) {
        Seen *s = (Seen *) p;

        strncat(s->log, what, sizeof(s->log) - strlen(s->log) - 1);
        strncat(s->log, " ", sizeof(s->log) - strlen(s->log) - 1);
}

static int parse_any(ConfParser *p, const char *key, const char *value) {
        char buf[128];

        if (strcmp(value, "bad") == 0)
                return conf_error(p, -EINVAL, "%s=%s is bad", key, value);
        snprintf(buf, sizeof(buf), "%s=%s", key, value);
        seen_add(p, buf);
        return 0;
}

static int start(ConfParser *p) {
        char buf[64];

        snprintf(buf, sizeof(buf), "%s:%u", p->section, p->line);
        seen_add(p, buf);
        return 0;
}

static const ConfSetting table[] = {
        { "Guard", "Mode", parse_any },
        { "Item", "Name", parse_any, CONF_SETTING_REQUIRED | CONF_SETTING_FIRST },
        { "Item", "Size", parse_any },
        { "Guard", "Level", parse_any },
        { "Place", "Path", parse_any, CONF_SETTING_REQUIRED },
};

static int parse(const char *text, Seen *s, char **message) {
        *s = (Seen) {
                .parser = {
                        .settings = table,
                        .n_settings = ELEMENTSOF(table),
                        .start_section = start,
                        .filename = "x.conf",
                        .line_max = 40,
                        .reterr_message = message,
                },
        };
        return conf_parse_buffer(&s->parser, text, strlen(text));
}

static void check_error(const char *text, int error, const char *message) {
        _cleanup_free_ char *m = NULL;
        Seen s;

        check(parse(text, &s, &m) == error);
        check_streq(m, message);
}

TEST(table) {
        Seen s;

        check(parse("[Guard]\nMode=a\n[Item]\nName=n\nSize=1\n[Guard]\nLevel=2\n[Place]\nPath=/p\n",
                    &s, NULL) == 0);
        check_streq(s.log, "Guard:1 Mode=a Item:3 Name=n Size=1 Guard:6 Level=2 Place:8 Path=/p ");

        /* The sections, each named once, in the table's order. */
        check_error("[Nope]\n", -EINVAL,
                    "x.conf:1: unknown section [Nope]; the sections are [Guard], [Item] and [Place]");
        check_error("[guard]\n", -EINVAL, "x.conf:1: unknown section [guard] (did you mean [Guard]?)");
        check_error("[Guard]\nName=x\n", -EINVAL, "x.conf:2: Name= belongs in section [Item], not [Guard]");
        check_error("[Guard]\nlevel=1\n", -EINVAL,
                    "x.conf:2: unknown key level= in section [Guard] (did you mean Level=?)");
        check_error("[Item]\nSize=1\nName=n\n", -EINVAL,
                    "x.conf:2: Size= comes before Name= in a [Item] section: Name= must come first");
        check_error("[Item]\nName=n\nName=m\n", -EINVAL,
                    "x.conf:3: Name= is given twice in one [Item] section");
        /* A required key is given only when its parser took it. */
        check_error("[Place]\nPath=bad\n", -EINVAL, "x.conf:2: Path=bad is bad");
        check_error("[Place]\n[Guard]\n", -EINVAL, "x.conf:1: [Place] section has no Path=");
        check_error("# one\n[Place]\n", -EINVAL, "x.conf:2: [Place] section has no Path=");
        /* The table's line cap, and the first error ends the reading. */
        check_error("[Guard]\nMode=0123456789012345678901234567890123456\n", -EBADMSG,
                    "x.conf:2: line is longer than 40 bytes; a list setting can be split over several "
                    "assignments");
        check_error("[Guard]\nMode=bad\nMode\n", -EINVAL, "x.conf:2: Mode=bad is bad");
}

TEST(line_checks) {
        char buf[LINE_PROBLEM_MAX];

        check(!line_bytes_problem("a\tb c", 5, buf));
        check_streq(line_bytes_problem("a\0b", 3, buf), "contains a NUL byte");
        check_streq(line_bytes_problem("a\x1b", 2, buf), "contains the control character 0x1b");
        check_streq(line_bytes_problem("\x7f", 1, buf), "contains the control character 0x7f");
        /* Bytes past n are not looked at. */
        check(!line_bytes_problem("ab\x01", 2, buf));
}

static int error(char **m, const char *filename, unsigned line, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = line_error_va(m, filename, line, -EBADMSG, format, ap);
        va_end(ap);
        return r;
}

TEST(messages) {
        char *m = NULL;

        check(error(&m, "f", 3, "%s", "bad") == -EBADMSG);
        check_streq(m, "f:3: bad");
        free(m);
        check(error(&m, "f", 0, "%d", 7) == -EBADMSG);
        check_streq(m, "f: 7");
        free(m);
        check(error(&m, NULL, 3, "bad") == -EBADMSG);
        check_streq(m, "3: bad");
        free(m);
        check(error(&m, NULL, 0, "bad") == -EBADMSG);
        check_streq(m, "bad");
        free(m);
        check(error(NULL, "f", 1, "bad") == -EBADMSG);
}

int main(void) {
        RUN(table);
        RUN(line_checks);
        RUN(messages);
        return tests_done();
}
