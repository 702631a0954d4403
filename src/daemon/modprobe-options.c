/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-files.h"
#include "fileio.h"
#include "kernel-cmdline.h"
#include "macro.h"
#include "modprobe-options.h"
#include "module-name.h"
#include "strv.h"

/* libkmod's defaults without /run/modprobe.d, which a process denied module loading can usually
 * still write, and without /lib/modprobe.d: on a merged /usr (Debian since 12, and what systemd
 * requires) it is /usr/lib/modprobe.d, and on a split /usr it sits on the root file system beside
 * /etc but outside what ProtectSystem= makes read-only. */
const char *const modprobe_d_dirs[] = {
        "/etc/modprobe.d",
        "/usr/local/lib/modprobe.d",
        "/usr/lib/modprobe.d",
        NULL,
};

const char *const modprobe_d_ignored_dirs[] = {
        "/run/modprobe.d",
        NULL,
};

#define MODPROBE_D_FILES_MAX 1024U

static int add_source(char **list, const char *what, unsigned line) {
        char *s;
        int r;

        if (line > 0)
                r = asprintf(&s, "%s%s%s:%u", *list ?: "", *list ? ", " : "", what, line);
        else
                r = asprintf(&s, "%s%s%s", *list ?: "", *list ? ", " : "", what);
        if (r < 0)
                return -ENOMEM;
        free(*list);
        *list = s;
        return 0;
}

/* The next statement of a modprobe.d file, as libkmod reads it (freadline_wrapped()): a backslash
 * before a newline joins two lines, before any other byte stands for that byte; lines may be of any
 * length. *lines counts the lines read. Returns 1 and the statement, 0 at the end, -ENOMEM. */
static int read_statement(FILE *f, unsigned *lines, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, size = 0;

        for (;;) {
                int c = getc(f);

                if (c == EOF && n == 0) {
                        *ret = NULL;
                        return 0;
                }
                if (c == EOF || c == '\n') {
                        (*lines)++;
                        break;
                }
                if (c == '\\') {
                        c = getc(f);
                        if (c == '\n')
                                (*lines)++;
                        if (c == '\n' || c == EOF)
                                continue;
                }
                if (n + 2 > size) {
                        char *b = realloc(buf, size = MAX(size * 2, 256U));

                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                buf[n++] = (char) c;
        }
        if (!buf && !(buf = strdup("")))
                return -ENOMEM;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        return 1;
}

/* Whether a statement is "options NAME OPTIONS" for name, as libkmod takes it: words separated by
 * spaces and tabs, NAME compared with '-' and '_' alike, and something after NAME (libkmod refuses
 * the statement without). */
static bool statement_sets_options(char *line, const char *name) {
        char *state = NULL, *word, *module;

        if (line[0] == '#')
                return false;
        word = strtok_r(line, " \t", &state);
        if (!word || strcmp(word, "options") != 0)
                return false;
        module = strtok_r(NULL, " \t", &state);
        return module && strtok_r(NULL, "", &state) && module_name_equal(module, name);
}

/* A statement is named by its first line. */
static int scan_file(const char *path, const char *display, const char *name, char **list) {
        _cleanup_(fclosep) FILE *f = NULL;
        unsigned lines = 0;

        f = fopen(path, "re");
        if (!f)
                return 0;       /* gone, or not ours to read: libkmod skips it too */
        for (;;) {
                _cleanup_free_ char *statement = NULL;
                unsigned first = lines + 1;
                int r;

                r = read_statement(f, &lines, &statement);
                if (r <= 0)
                        return r;
                if (statement_sets_options(statement, name) && add_source(list, display, first) < 0)
                        return -ENOMEM;
        }
}

int modprobe_options_sources(const char *root, const char *cmdline, const char *name, char **ret) {
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_free_ char *list = NULL;
        bool rooted = root && strcmp(root, "/") != 0;
        int r;

        r = conf_files_list(modprobe_d_dirs, root, ".conf", CONF_FILES_NO_ROOT_PREFIX, MODPROBE_D_FILES_MAX,
                            &files);
        if (r == -ENOMEM)
                return r;
        for (char **f = r >= 0 ? files : NULL; f && *f; f++) {
                _cleanup_free_ char *full = NULL;

                if (rooted && asprintf(&full, "%s%s", root, *f) < 0)
                        return -ENOMEM;
                r = scan_file(full ?: *f, *f, name, &list);
                if (r < 0)
                        return r;
        }
        if (kmod_cmdline_sets_options(cmdline, name) && add_source(&list, "the kernel command line", 0) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(list);
        return 0;
}

int modprobe_d_ignored_files(const char *root, char ***ret) {
        return conf_files_list(modprobe_d_ignored_dirs, root, ".conf", 0, MODPROBE_D_FILES_MAX, ret);
}
