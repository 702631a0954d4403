/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The syntax of modgate.conf: libinih splits the lines, this feeds it the file and keeps count of
 * lines and sections; config.c knows the settings. */

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-parse.h"
#include "fileio.h"
#include "strv.h"

#define BOM "\xef\xbb\xbf"

/* libinih reads each line into a buffer of INI_MAX_LINE bytes, which holds its newline and a NUL
 * too, and silently splits a longer one: the reader refuses such lines instead. */
_Static_assert(CONFIG_LINE_MAX <= INI_MAX_LINE - 2, "a line must fit libinih's buffer");

int config_error_at(ParseState *s, unsigned line, int r, const char *format, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int k;

        if (!s->reterr_message)
                return r;

        va_start(ap, format);
        k = vasprintf(&msg, format, ap);
        va_end(ap);

        /* The first error is the only message (parse_buffer() frees one that an earlier syntax error
         * replaces): never read what was there. */
        *s->reterr_message = NULL;
        if (k < 0)
                return r;
        if (line > 0)
                k = asprintf(s->reterr_message, "%s:%u: %s", s->filename, line, msg);
        else
                k = asprintf(s->reterr_message, "%s: %s", s->filename, msg);
        if (k < 0)
                *s->reterr_message = NULL;
        return r;
}

int config_next_word(const char **p, char **ret) {
        const char *w = *p + strspn(*p, WHITESPACE);
        size_t n = strcspn(w, WHITESPACE);

        *p = w + n;
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = strndup(w, n);
        return *ret ? 0 : -ENOMEM;
}

int config_parse_list(ParseState *s, const char *key, const char *value, char ***list, WordCheck check) {
        int r;

        if (value[0] == '\0') {
                *list = strv_free(*list);
                return 0;
        }

        for (const char *p = value;;) {
                _cleanup_free_ char *word = NULL;

                if (config_next_word(&p, &word) < 0)
                        return parse_error(s, -ENOMEM, "out of memory");
                if (!word)
                        return 0;
                r = check(s, key, word);
                if (r < 0)
                        return r;
                if (strv_contains(*list, word))
                        continue;
                if (strv_length(*list) >= CONFIG_LIST_MAX)
                        return parse_error(s, -EINVAL, "%s= has more than %d entries", key, CONFIG_LIST_MAX);
                if (strv_consume(list, TAKE_PTR(word)) < 0)
                        return parse_error(s, -ENOMEM, "out of memory");
        }
}

/* libinih does not call the handler at a section header (Debian builds it without
 * INI_CALL_HANDLER_ON_NEW_SECTION), yet a header is where a repeated section such as [Root] begins,
 * where the previous one is found to lack its required key (an empty [Root] has no Path=), and where
 * an unknown section is. So the reader looks at header lines itself, and takes the name as libinih
 * does: up to the first ']'. line has n bytes, without trailing whitespace. */
static int parse_header(ParseState *s, const char *line, size_t n) {
        _cleanup_free_ char *name = NULL;
        const char *end = memchr(line, ']', n), *rest;
        int r;

        r = config_finish_section(s);
        if (r < 0)
                return r;

        if (!end)
                return parse_error(s, -EBADMSG, "section header %.*s is missing ']'", (int) n, line);
        /* libinih ignores whatever follows the ']': allow only what would be a comment after a value. */
        rest = end + 1 + strspn(end + 1, WHITESPACE);
        if (rest < line + n && !(rest[0] == ';' && rest > end + 1))
                return parse_error(s, -EBADMSG, "unexpected text after ']' in section header %.*s", (int) n, line);

        name = strndup(line + 1, (size_t) (end - line - 1));
        if (!name)
                return parse_error(s, -ENOMEM, "out of memory");
        return config_start_section(s, name);
}

/* The first error ends the parse: the reader gives libinih no more lines, the handler does nothing. */
static void record_error(ParseState *s, int r) {
        s->error = r;
        s->error_line = s->line;
}

/* libinih's handler, for each Key=Value (or Key:Value), split and stripped of whitespace and an
 * inline comment. The section is the reader's, not libinih's copy, which is cut at 50 bytes. */
static int handle_assignment(void *userdata, const char *section, const char *key, const char *value) {
        ParseState *s = userdata;
        int r;

        if (s->error < 0)
                return 0;
        r = config_parse_assignment(s, key, value);
        if (r < 0)
                record_error(s, r);
        return r >= 0;
}

/* Refuses bytes that have no place in a text line, so that messages echo only printable text, and
 * lines that libinih would split. */
static int check_line_bytes(ParseState *s, const char *line, size_t n, size_t max) {
        if (n > max)
                return parse_error(s, -EBADMSG, "line is longer than %zu bytes; a list setting can be split over "
                                   "several assignments", max);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) line[i];

                if (c == '\0')
                        return parse_error(s, -EBADMSG, "line contains a NUL byte");
                if ((c < ' ' && c != '\t') || c == 0x7f)
                        return parse_error(s, -EBADMSG, "line contains the control character 0x%02x", c);
        }
        return 0;
}

/* Copies the n bytes of a checked line to buf as fgets() would, without its indentation: libinih
 * would take an indented line as the continuation of the previous value, and systemd's syntax
 * ignores indentation. Looks at a section header on the way. */
static int copy_line(ParseState *s, const char *line, size_t n, char *buf) {
        size_t skip;

        memcpy(buf, line, n);
        memcpy(buf + n, "\n", 2);
        skip = strspn(buf, WHITESPACE);
        memmove(buf, buf + skip, n - skip + 2);
        n -= skip;

        /* libinih skips a byte order mark on its first line; parse_buffer() took the file's already,
         * and a second one would hide a header from the reader. */
        if (s->line == 1 && n >= 3 && memcmp(buf, BOM, 3) == 0)
                return parse_error(s, -EBADMSG, "expected [Section], Key=Value or a comment");
        while (n > 0 && strchr(WHITESPACE, buf[n - 1]))
                n--;
        return n > 0 && buf[0] == '[' ? parse_header(s, buf, n) : 0;
}

/* libinih's ini_reader: the next line of the file, one per call, so that s->line is the line of
 * the handler's next call (libinih hands on each line before it reads another). */
static char *read_line(char *buf, int size, void *userdata) {
        ParseState *s = userdata;
        const char *line = s->next, *nl;
        size_t n, max;
        int r;

        if (s->error < 0 || s->next >= s->end)
                return NULL;
        nl = memchr(line, '\n', (size_t) (s->end - line));
        n = nl ? (size_t) (nl - line) : (size_t) (s->end - line);
        s->next = nl ? nl + 1 : s->end;
        s->line++;

        if (n > 0 && line[n - 1] == '\r')
                n--;
        /* The line, its newline and a NUL must fit into libinih's buffer. */
        max = MIN((size_t) CONFIG_LINE_MAX, size > 2 ? (size_t) size - 2 : 0);
        r = check_line_bytes(s, line, n, max);
        if (r >= 0)
                r = copy_line(s, line, n, buf);
        if (r < 0) {
                record_error(s, r);
                return NULL;
        }
        return buf;
}

static int parse_buffer(ParseState *s, const char *buf, size_t size) {
        int r;

        s->next = buf;
        s->end = buf + size;
        /* A byte order mark, as some editors write. */
        if (size >= 3 && memcmp(buf, BOM, 3) == 0)
                s->next += 3;

        r = ini_parse_stream(read_line, s, handle_assignment, s);
        if (r < 0)
                return parse_error(s, -ENOMEM, "out of memory");
        /* libinih names the first line that it could not parse, or the one where the handler failed;
         * it goes on after the former, so an error of ours may come later. */
        if (r > 0 && (s->error == 0 || (unsigned) r < s->error_line)) {
                if (s->error < 0 && s->reterr_message)
                        free(*s->reterr_message);
                return config_error_at(s, (unsigned) r, -EBADMSG, "expected [Section], Key=Value or a comment");
        }
        if (s->error < 0)
                return s->error;
        return config_finish_section(s);
}

int config_parse_file(Config *c, FILE *f, const char *filename, char **reterr_message) {
        ParseState s = { .config = c, .filename = filename, .reterr_message = reterr_message };
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        r = read_full_stream(f, CONFIG_FILE_MAX, &buf, &size);
        if (r == -EFBIG)
                return parse_error(&s, r, "file is larger than %d MiB", CONFIG_FILE_MAX / (1024 * 1024));
        if (r < 0)
                return parse_error(&s, r, "failed to read: %s", strerror(-r));
        return parse_buffer(&s, buf, size);
}

