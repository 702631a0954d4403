/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf-parser.h"
#include "fileio.h"

#define BOM "\xef\xbb\xbf"

const char *line_bytes_problem(const char *line, size_t n, char buf[static LINE_PROBLEM_MAX]) {
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) line[i];

                if (c == '\0')
                        return "contains a NUL byte";
                if ((c < ' ' && c != '\t') || c == 0x7f) {
                        snprintf(buf, LINE_PROBLEM_MAX, "contains the control character 0x%02x", c);
                        return buf;
                }
        }
        return NULL;
}

int line_error_va(char **reterr_message, const char *filename, unsigned line, int r, const char *format,
                  va_list ap) {
        _cleanup_free_ char *msg = NULL;
        int k;

        if (!reterr_message)
                return r;
        *reterr_message = NULL;
        if (vasprintf(&msg, format, ap) < 0)
                return r;
        if (filename && line > 0)
                k = asprintf(reterr_message, "%s:%u: %s", filename, line, msg);
        else if (filename)
                k = asprintf(reterr_message, "%s: %s", filename, msg);
        else if (line > 0)
                k = asprintf(reterr_message, "%u: %s", line, msg);
        else {
                *reterr_message = TAKE_PTR(msg);
                return r;
        }
        if (k < 0)
                *reterr_message = NULL;
        return r;
}

int conf_error_at(ConfParser *p, unsigned line, int r, const char *format, ...) {
        va_list ap;

        assert(p);

        va_start(ap, format);
        (void) line_error_va(p->reterr_message, p->filename, line, r, format, ap);
        va_end(ap);
        return r;
}

int conf_next_word(const char **s, char **ret) {
        const char *w = *s + strspn(*s, CONF_WHITESPACE);
        size_t n = strcspn(w, CONF_WHITESPACE);

        *s = w + n;
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = strndup(w, n);
        return *ret ? 0 : -ENOMEM;
}

/* The setting with this key in section (any section when section is NULL), compared with strcmp()
 * or, for suggestions, strcasecmp(). */
static const ConfSetting *setting_find(const ConfParser *p, const char *section, const char *key,
                                       int (*cmp)(const char *, const char *)) {
        for (size_t i = 0; i < p->n_settings; i++) {
                if (section && strcmp(p->settings[i].section, section) != 0)
                        continue;
                if (cmp(p->settings[i].key, key) == 0)
                        return &p->settings[i];
        }
        return NULL;
}

static const char *section_find(const ConfParser *p, const char *name,
                                int (*cmp)(const char *, const char *)) {
        for (size_t i = 0; i < p->n_settings; i++)
                if (cmp(p->settings[i].section, name) == 0)
                        return p->settings[i].section;
        return NULL;
}

/* The key of the current section with this flag, such as [Root] Path=. */
static const ConfSetting *section_key(const ConfParser *p, ConfSettingFlags flag) {
        for (size_t i = 0; p->section && i < p->n_settings; i++)
                if (strcmp(p->settings[i].section, p->section) == 0 && (p->settings[i].flags & flag))
                        return &p->settings[i];
        return NULL;
}

/* A section is complete when the next header or the end of the file comes. */
static int finish_section(ConfParser *p) {
        const ConfSetting *required = section_key(p, CONF_SETTING_REQUIRED);

        if (required && !p->named)
                return conf_error_at(p, p->section_line, -EINVAL, "[%s] section has no %s=", p->section,
                                     required->key);
        return 0;
}

/* Whether row i is the first of its section in the table. */
static bool section_first_row(const ConfParser *p, size_t i) {
        for (size_t j = 0; j < i; j++)
                if (strcmp(p->settings[j].section, p->settings[i].section) == 0)
                        return false;
        return true;
}

/* Lists the sections of the table in its order: "[A], [B] and [C]". */
static int unknown_section(ConfParser *p, const char *name) {
        _cleanup_free_ char *list = NULL;
        const char *known = section_find(p, name, strcasecmp);
        size_t size = 0, n = 0, total = 0;
        FILE *f;

        if (known)
                return conf_error(p, -EINVAL, "unknown section [%s] (did you mean [%s]?)", name, known);

        for (size_t i = 0; i < p->n_settings; i++)
                total += section_first_row(p, i);
        f = open_memstream(&list, &size);
        if (!f)
                return conf_error(p, -ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_settings; i++)
                if (section_first_row(p, i)) {
                        const char *sep = ++n == 1 ? "" : n == total ? " and " : ", ";

                        fprintf(f, "%s[%s]", sep, p->settings[i].section);
                }
        if (fclose(f) != 0)
                return conf_error(p, -ENOMEM, "out of memory");
        return conf_error(p, -EINVAL, "unknown section [%s]; the sections are %s", name, list);
}

/* line has n bytes, starts with '[' and has no trailing whitespace. The name is what comes before
 * the first ']'. */
static int parse_header(ConfParser *p, const char *line, size_t n) {
        _cleanup_free_ char *name = NULL;
        const char *end = memchr(line, ']', n), *rest;
        int r;

        r = finish_section(p);
        if (r < 0)
                return r;

        if (!end)
                return conf_error(p, -EBADMSG, "section header %.*s is missing ']'", (int) n, line);
        rest = end + 1 + strspn(end + 1, CONF_WHITESPACE);
        if (rest < line + n && !(rest[0] == ';' && rest > end + 1))
                return conf_error(p, -EBADMSG, "unexpected text after ']' in section header %.*s",
                                  (int) n, line);

        name = strndup(line + 1, (size_t) (end - line - 1));
        if (!name)
                return conf_error(p, -ENOMEM, "out of memory");
        p->section = section_find(p, name, strcmp);
        if (!p->section)
                return unknown_section(p, name);
        p->section_line = p->line;
        p->named = false;
        return p->start_section ? p->start_section(p) : 0;
}

static int unknown_key(ConfParser *p, const char *key) {
        const ConfSetting *other;

        other = setting_find(p, NULL, key, strcmp);
        if (other)
                return conf_error(p, -EINVAL, "%s= belongs in section [%s], not [%s]", key, other->section,
                                  p->section);
        other = setting_find(p, p->section, key, strcasecmp);
        if (other)
                return conf_error(p, -EINVAL, "unknown key %s= in section [%s] (did you mean %s=?)", key,
                                  p->section, other->key);
        return conf_error(p, -EINVAL, "unknown key %s= in section [%s]", key, p->section);
}

static int check_key_order(ConfParser *p, const ConfSetting *setting) {
        const ConfSetting *first = section_key(p, CONF_SETTING_FIRST);

        if (!first)
                return 0;
        if (setting != first && !p->named)
                return conf_error(p, -EINVAL, "%s= comes before %s= in a [%s] section: %s= must come first",
                                  setting->key, first->key, p->section, first->key);
        if (setting == first && p->named)
                return conf_error(p, -EINVAL, "%s= is given twice in one [%s] section",
                                  setting->key, p->section);
        return 0;
}

static int assign(ConfParser *p, const char *key, const char *value) {
        const ConfSetting *setting;
        int r;

        if (key[0] == '\0')
                return conf_error(p, -EBADMSG, "assignment without a key: =%s", value);
        if (!p->section)
                return conf_error(p, -EBADMSG, "%s= comes before the first [Section] header", key);

        setting = setting_find(p, p->section, key, strcmp);
        if (!setting)
                return unknown_key(p, key);
        r = check_key_order(p, setting);
        if (r < 0)
                return r;
        r = setting->parse(p, key, value);
        if (r < 0)
                return r;
        if (setting->flags & CONF_SETTING_REQUIRED)
                p->named = true;
        return 0;
}

/* Where a comment starts in s: at a ';' after whitespace. Stops at one of stop first. */
static char *find_stop_or_comment(char *s, const char *stop) {
        for (char *c = s; *c; c++)
                if (strchr(stop, *c) || (*c == ';' && c > s && strchr(CONF_WHITESPACE, c[-1])))
                        return c;
        return s + strlen(s);
}

static void strip_trailing(char *s) {
        size_t n = strlen(s);

        while (n > 0 && strchr(CONF_WHITESPACE, s[n - 1]))
                s[--n] = '\0';
}

/* "Key=Value" or "Key:Value", the first '=' or ':' separating them. line is neither blank nor
 * indented. */
static int parse_assignment(ConfParser *p, char *line) {
        char *sep = find_stop_or_comment(line, "=:"), *value;

        if (*sep != '=' && *sep != ':')
                return conf_error(p, -EBADMSG, "expected [Section], Key=Value or a comment");
        *sep = '\0';
        strip_trailing(line);
        value = sep + 1;
        *find_stop_or_comment(value, "") = '\0';
        value += strspn(value, CONF_WHITESPACE);
        strip_trailing(value);
        return assign(p, line, value);
}

/* One line of n bytes, without its line end; line[n] may be anything. */
static int parse_line(ConfParser *p, const char *line, size_t n) {
        _cleanup_free_ char *copy = NULL;
        char buf[LINE_PROBLEM_MAX];
        const char *problem;
        size_t skip;

        if (n > p->line_max)
                return conf_error(p, -EBADMSG, "line is longer than %zu bytes; a list setting can be split "
                                  "over several assignments", p->line_max);
        problem = line_bytes_problem(line, n, buf);
        if (problem)
                return conf_error(p, -EBADMSG, "line %s", problem);

        skip = strspn(line, CONF_WHITESPACE);
        while (n > skip && strchr(CONF_WHITESPACE, line[n - 1]))
                n--;
        line += skip;
        n -= skip;
        if (n == 0 || line[0] == '#' || line[0] == ';')
                return 0;
        if (line[0] == '[')
                return parse_header(p, line, n);
        copy = strndup(line, n);
        if (!copy)
                return conf_error(p, -ENOMEM, "out of memory");
        return parse_assignment(p, copy);
}

int conf_parse_buffer(ConfParser *p, const char *text, size_t size) {
        const char *end = text + size;
        int r;

        assert(p);

        p->line = 0;
        p->section = NULL;
        p->named = false;
        /* A byte order mark, as some editors write. */
        if (size >= 3 && memcmp(text, BOM, 3) == 0)
                text += 3;

        while (text < end) {
                const char *nl = memchr(text, '\n', (size_t) (end - text));
                size_t n = nl ? (size_t) (nl - text) : (size_t) (end - text);

                p->line++;
                r = parse_line(p, text, n > 0 && text[n - 1] == '\r' ? n - 1 : n);
                if (r < 0)
                        return r;
                text = nl ? nl + 1 : end;
        }
        return finish_section(p);
}

int conf_parse_file(ConfParser *p, FILE *f, size_t max) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        assert(p);

        p->line = 0;
        r = read_full_stream(f, max, &text, &size);
        if (r == -EFBIG)
                return conf_error(p, r, "file is larger than %zu MiB", max / (1024 * 1024));
        if (r < 0)
                return conf_error(p, r, "failed to read: %s", strerror(-r));
        return conf_parse_buffer(p, text, size);
}
