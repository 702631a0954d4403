/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "macro.h"
#include "modules-load-conf.h"

#define WHITESPACE " \t\n\r"

int str_list_add(StrList *l, const char *s, size_t len) {
        char **items, *copy;

        if (l->n >= MODULES_LOAD_ENTRIES_MAX)
                return -E2BIG;

        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        items = realloc(l->items, (l->n + 1) * sizeof(char *));
        if (!items) {
                free(copy);
                return -ENOMEM;
        }
        items[l->n++] = copy;
        l->items = items;
        return 0;
}

void str_list_done(StrList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i]);
        free(l->items);
        *l = (StrList) {};
}

int modules_load_parse_text(const char *text, StrList *names) {
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
                        r = str_list_add(names, line + start, end - start);
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

static int add_comma_separated(const char *value, StrList *names) {
        for (const char *p = value; *p;) {
                size_t len = strcspn(p, ",");
                int r;

                if (len > 0) {
                        r = str_list_add(names, p, len);
                        if (r < 0)
                                return r;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        return 0;
}

int modules_load_parse_cmdline(const char *cmdline, bool in_initrd, StrList *names) {
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

static char *path_join(const char *a, const char *b) {
        char *s;

        if (asprintf(&s, "%s%s%s", a, a[0] && a[strlen(a) - 1] != '/' ? "/" : "", b[0] == '/' ? b + 1 : b) < 0)
                return NULL;
        return s;
}

bool modules_load_path_is_masked(const char *path) {
        char target[16];
        struct stat st;
        ssize_t n;

        n = readlink(path, target, sizeof(target) - 1);
        if (n >= 0) {
                target[n] = '\0';
                if (strcmp(target, "/dev/null") == 0)
                        return true;
        }
        return stat(path, &st) >= 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

typedef struct ConfEntry {
        char *name;
        char *path;             /* as seen on the running system, without root */
        bool masked;
} ConfEntry;

static int conf_entry_compare(const void *a, const void *b) {
        return strcmp(((const ConfEntry *) a)->name, ((const ConfEntry *) b)->name);
}

static bool name_is_conf(const char *name) {
        size_t n = strlen(name);

        return name[0] != '.' && n > strlen(".conf") && strcmp(name + n - strlen(".conf"), ".conf") == 0;
}

static bool entries_have(const ConfEntry *e, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(e[i].name, name) == 0)
                        return true;
        return false;
}

/* Adds the *.conf entries of one directory that no earlier directory had. */
static int scan_dir(const char *root, const char *dir, ConfEntry **entries, size_t *n) {
        _cleanup_free_ char *full = path_join(root, dir);
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (!full)
                return -ENOMEM;
        d = opendir(full);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();

        while ((de = readdir(d))) {
                _cleanup_free_ char *p = NULL;
                struct stat st;
                ConfEntry *e;

                if (!name_is_conf(de->d_name) || entries_have(*entries, *n, de->d_name))
                        continue;

                p = path_join(full, de->d_name);
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                /* Only regular files and masks count; a directory called x.conf is not a file. */
                bool masked = modules_load_path_is_masked(p);
                if (!masked && (stat(p, &st) < 0 || !S_ISREG(st.st_mode)))
                        continue;

                if (*n >= MODULES_LOAD_FILES_MAX) {
                        r = -E2BIG;
                        break;
                }
                e = realloc(*entries, (*n + 1) * sizeof(ConfEntry));
                if (!e) {
                        r = -ENOMEM;
                        break;
                }
                *entries = e;
                e[*n] = (ConfEntry) {
                        .name = strdup(de->d_name),
                        .path = path_join(dir, de->d_name),
                        .masked = masked,
                };
                (*n)++;
                if (!e[*n - 1].name || !e[*n - 1].path) {
                        r = -ENOMEM;
                        break;
                }
        }

        closedir(d);
        return r;
}

int modules_load_conf_files(const char *root, const char *const *dirs, StrList *ret_paths) {
        ConfEntry *entries = NULL;
        StrList paths = {};
        size_t n = 0;
        int r = 0;

        for (const char *const *d = dirs; *d && r >= 0; d++)
                r = scan_dir(root ?: "", *d, &entries, &n);

        if (r >= 0) {
                if (n > 1)
                        qsort(entries, n, sizeof(ConfEntry), conf_entry_compare);
                for (size_t i = 0; i < n && r >= 0; i++)
                        if (!entries[i].masked)
                                r = str_list_add(&paths, entries[i].path, strlen(entries[i].path));
        }

        for (size_t i = 0; i < n; i++) {
                free(entries[i].name);
                free(entries[i].path);
        }
        free(entries);

        if (r < 0) {
                str_list_done(&paths);
                return r;
        }
        *ret_paths = paths;
        return 0;
}
