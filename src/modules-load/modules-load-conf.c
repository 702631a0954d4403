/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "modules-load-conf.h"
#include "strv.h"

#define WHITESPACE " \t\n\r"

int modules_load_names_add(char ***names, const char *s, size_t len) {
        char *copy;

        if (strv_length(*names) >= MODULES_LOAD_ENTRIES_MAX)
                return -E2BIG;
        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        return strv_consume(names, copy);
}

int modules_load_parse_text(const char *text, char ***names) {
        for (const char *line = text; *line;) {
                size_t len = strcspn(line, "\n"), start, end;
                int r;

                start = strspn(line, " \t\r");
                if (start > len)
                        start = len;
                end = len;
                while (end > start && strchr(" \t\r", line[end - 1]))
                        end--;

                if (end > start && !strchr("#;", line[start])) {
                        r = modules_load_names_add(names, line + start, end - start);
                        if (r < 0)
                                return r;
                }

                line += len;
                if (*line == '\n')
                        line++;
        }
        return 0;
}

/* Copies the next word of a kernel command line into buf without its quotes. Returns the position
 * after the word, or NULL at the end. */
static const char *cmdline_next_word(const char *p, char *buf) {
        char quote = 0;
        size_t n = 0;

        p += strspn(p, WHITESPACE);
        if (*p == '\0')
                return NULL;

        for (; *p; p++) {
                if (quote) {
                        if (*p == quote)
                                quote = 0;
                        else
                                buf[n++] = *p;
                } else if (*p == '"' || *p == '\'')
                        quote = *p;
                else if (strchr(WHITESPACE, *p))
                        break;
                else
                        buf[n++] = *p;
        }
        buf[n] = '\0';
        return p;
}

static bool key_equal(const char *a, const char *b, size_t len_a) {
        size_t i;

        for (i = 0; i < len_a && b[i]; i++) {
                char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];

                if (x != y)
                        return false;
        }
        return i == len_a && b[i] == '\0';
}

static int add_comma_separated(const char *value, char ***names) {
        for (const char *p = value; *p;) {
                size_t len = strcspn(p, ",");
                int r;

                if (len > 0) {
                        r = modules_load_names_add(names, p, len);
                        if (r < 0)
                                return r;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        return 0;
}

int modules_load_parse_cmdline(const char *cmdline, bool in_initrd, char ***names) {
        _cleanup_free_ char *word = NULL;
        const char *p = cmdline;
        int r;

        word = malloc(strlen(cmdline) + 1);
        if (!word)
                return -ENOMEM;

        while ((p = cmdline_next_word(p, word))) {
                const char *key = word, *eq = strchr(word, '=');

                if (!eq)
                        continue;
                /* rd. options are for the initrd alone; there both forms count. */
                if (strncmp(key, "rd.", 3) == 0) {
                        if (!in_initrd)
                                continue;
                        key += 3;
                }
                if (!key_equal(key, "modules_load", (size_t) (eq - key)))
                        continue;

                r = add_comma_separated(eq + 1, names);
                if (r < 0)
                        return r;
        }
        return 0;
}
