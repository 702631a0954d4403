/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-files.h"
#include "fileio.h"
#include "macro.h"
#include "modprobe-options.h"
#include "module-name.h"
#include "strv.h"

const char *const modprobe_d_dirs[] = {
        "/etc/modprobe.d",
        "/run/modprobe.d",
        "/usr/local/lib/modprobe.d",
        "/usr/lib/modprobe.d",
        "/lib/modprobe.d",
        NULL,
};

#define MODPROBE_D_FILES_MAX 1024U

/* Whether line is "options NAME ..." for name: the module name compared as libkmod does, '-' and
 * '_' alike. */
static bool line_sets_options(const char *line, const char *name) {
        char word[64], module[64];

        if (sscanf(line, " %63s %63s", word, module) != 2 || strcmp(word, "options") != 0)
                return false;
        return module_name_equal(module, name);
}

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

/* A statement may go on over lines that end in a backslash: it is named by its first line. */
static int scan_file(const char *path, const char *display, const char *name, char **list) {
        _cleanup_(fclosep) FILE *f = NULL;
        char buf[4096];
        unsigned n = 0, first = 0;
        bool continued = false;

        f = fopen(path, "re");
        if (!f)
                return 0;       /* gone, or not ours to read: libkmod skips it too */
        while (fgets(buf, sizeof(buf), f)) {
                size_t len = strlen(buf);
                bool ends_wrapped;

                n++;
                while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
                        buf[--len] = 0;
                ends_wrapped = len > 0 && buf[len - 1] == '\\';
                if (!continued) {
                        first = n;
                        if (line_sets_options(buf, name) && add_source(list, display, first) < 0)
                                return -ENOMEM;
                }
                continued = ends_wrapped;
        }
        return 0;
}

/* NAME.KEY=VALUE words, as the kernel passes them on to a module loaded later. */
static bool cmdline_sets_options(const char *cmdline, const char *name) {
        for (const char *p = cmdline; p && *p;) {
                size_t len, dot;

                p += strspn(p, " \t\n");
                len = strcspn(p, " \t\n");
                dot = strcspn(p, ".");
                if (dot < len && dot > 0 && dot < 64 && memchr(p + dot, '=', len - dot)) {
                        char module[64];

                        memcpy(module, p, dot);
                        module[dot] = 0;
                        if (module_name_equal(module, name))
                                return true;
                }
                p += len;
        }
        return false;
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
        if (cmdline_sets_options(cmdline, name) && add_source(&list, "the kernel command line", 0) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(list);
        return 0;
}
