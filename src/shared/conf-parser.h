/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

/* The reader of modgate.conf's syntax, given the table of settings; and the checks of a text line
 * that the manifest's reader (manifest.c) makes too. Pure: nothing here opens a file or logs.
 *
 * Our own reader rather than libinih: as Debian builds it (the defaults, which a distribution's
 * package fixes for every user), libinih splits a line longer than INI_MAX_LINE (200 bytes) into two
 * without saying so, cuts a section name at 50 bytes, takes an indented line as the continuation of
 * the value before it, does not call the handler at a section header (so an empty [Root] or an
 * unknown section followed by nothing goes unseen), and reports a line it cannot parse only after it
 * has handed on the lines after it. Each of these would let a typo in a security setting pass
 * unnoticed or be reported at the wrong line. Working around them took more code than reading the
 * few lines of syntax below, which is what libinih accepts, minus its surprises. */

#define CONF_WHITESPACE " \t"

/* Words for what is wrong with a line's bytes: "contains a NUL byte", "contains the control
 * character 0x01". */
#define LINE_PROBLEM_MAX 48

/* Whether the n bytes of line are text: no NUL, and no control character but the tab. Returns NULL,
 * or what is wrong, written to buf, so that a message may echo the line. */
const char *line_bytes_problem(const char *line, size_t n, char buf[static LINE_PROBLEM_MAX]);

/* Sets *reterr_message (when reterr_message is not NULL) to the formatted message after "FILE:LINE: ",
 * "FILE: " (line 0), "LINE: " (filename NULL) or nothing, and returns r. Never reads what
 * *reterr_message held: the first error is the only one. It is NULL when there was no memory. */
_printf_(5, 0) int line_error_va(char **reterr_message, const char *filename, unsigned line, int r,
                                 const char *format, va_list ap);

typedef struct ConfParser ConfParser;

/* Parses the value of one assignment. Returns 0, or a negative errno after conf_error(). */
typedef int (*ConfSettingParser)(ConfParser *p, const char *key, const char *value);

typedef enum ConfSettingFlags {
        CONF_SETTING_REQUIRED = 1u << 0,        /* the section must have it: it says what it is about */
        CONF_SETTING_FIRST = 1u << 1,           /* and must come before its other keys, once */
} ConfSettingFlags;

/* One row of the table: the sections are those that the table names, in the order it first names
 * them. */
typedef struct ConfSetting {
        const char *section;
        const char *key;
        ConfSettingParser parse;
        ConfSettingFlags flags;
} ConfSetting;

struct ConfParser {
        /* Set by the caller. */
        const ConfSetting *settings;
        size_t n_settings;
        /* At each header of a section of the table, after the section before it was complete. May be
         * NULL. Returns 0, or a negative errno after conf_error(). */
        int (*start_section)(ConfParser *p);
        void *userdata;
        const char *filename;           /* for messages */
        size_t line_max;                /* bytes in a line, without its line end */
        char **reterr_message;          /* NULL: no message */

        /* Where the reader is, for the parsers. */
        unsigned line;                  /* 0 for errors about the whole file */
        const char *section;            /* the current section, from the table; NULL before one */
        unsigned section_line;          /* of its header */
        bool named;                     /* its CONF_SETTING_REQUIRED key was given */
};

/* Sets the message, as line_error_va() does with p's file, and returns r. */
_printf_(4, 5) int conf_error_at(ConfParser *p, unsigned line, int r, const char *format, ...);
#define conf_error(p, r, ...) conf_error_at(p, (p)->line, r, __VA_ARGS__)

/* Takes the next word (separated by CONF_WHITESPACE) from *s into *ret, or returns 0 with *ret NULL
 * at the end. Returns 0 or -ENOMEM. */
int conf_next_word(const char **s, char **ret);

/* Reads a file's text (size bytes; NULs in it are refused) with the syntax of systemd's unit files as
 * modgate.conf(5) describes it: [Section] headers, Key=Value (or Key:Value) assignments, comment
 * lines starting with '#' or ';', blank lines; a ';' after whitespace starts a comment in a value and
 * after a header. The indentation of a line and whitespace around keys and values are ignored; CRLF
 * line ends and a UTF-8 byte order mark are accepted. Each assignment goes to the parser that the
 * table has for its section and key. The first error ends the reading: an unknown section or key, a
 * section without its required key, a required-first key that is not first or comes twice, a line
 * longer than p->line_max or with control characters. Returns 0, -EBADMSG (syntax), -EINVAL (names),
 * -ENOMEM, or a parser's error; with a message (conf_error()). */
int conf_parse_buffer(ConfParser *p, const char *text, size_t size);

/* Reads f to its end (at most max bytes, else -EFBIG) and parses it with conf_parse_buffer(). */
int conf_parse_file(ConfParser *p, FILE *f, size_t max);
