/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-cmdline.h"
#include "macro.h"
#include "modules-load-conf.h"
#include "strv.h"

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

        while ((p = systemd_cmdline_next_word(p, word))) {
                const char *key = word, *v;

                /* rd. options are for the initrd alone; there both forms count. */
                if (strncmp(key, "rd.", 3) == 0) {
                        if (!in_initrd)
                                continue;
                        key += 3;
                }
                v = systemd_cmdline_value(key, "modules_load");
                if (!v)
                        continue;
                r = add_comma_separated(v, names);
                if (r < 0)
                        return r;
        }
        return 0;
}
