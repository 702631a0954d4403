/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "module-name.h"
#include "strv.h"
#include "udev-rules.h"

#ifndef UDEV_RULES_DIR
#define UDEV_RULES_DIR "/usr/lib/udev/rules.d"
#endif

const char *const udev_rules_dirs[] = {
        "/etc/udev/rules.d",
        "/run/udev/rules.d",
        "/usr/local/lib/udev/rules.d",
        UDEV_RULES_DIR,
        NULL,
};

const char *const udev_rules_trusted_dirs[] = {
        "/etc/udev/rules.d",
        "/usr/local/lib/udev/rules.d",
        UDEV_RULES_DIR,
        NULL,
};

void udev_rule_names_free(UdevRuleName *a, size_t n) {
        for (size_t i = 0; a && i < n; i++) {
                free(a[i].name);
                strv_free(a[i].subsystems);
                strv_free(a[i].kernels);
        }
        free(a);
}

int udev_rule_matches(const char *line, const char *key, char ***ret) {
        _cleanup_strv_free_ char **values = NULL;
        size_t n = strlen(key);

        *ret = NULL;
        for (const char *p = line; (p = strstr(p, key)); p += n) {
                const char *v, *end;
                char *value;

                if (p != line && !strchr(", \t", p[-1]))
                        continue;
                if (strncmp(p + n, "==\"", 3) != 0)
                        continue;
                v = p + n + 3;
                end = strchr(v, '"');
                if (!end)
                        break;
                value = strndup(v, (size_t) (end - v));
                if (!value || strv_consume(&values, value) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(values);
        return 0;
}

bool udev_rule_value_matches(const char *pattern, const char *value) {
        if (!value)
                return false;
        for (const char *p = pattern;;) {
                size_t n = strcspn(p, "|");
                char glob[256];

                /* Longer than any name a device has: it cannot match, and is not cut to one that would. */
                if (n < sizeof(glob)) {
                        memcpy(glob, p, n);
                        glob[n] = '\0';
                        if (fnmatch(glob, value, 0) == 0)
                                return true;
                }
                if (!p[n])
                        return false;
                p += n + 1;
        }
}

bool udev_rule_name_applies(const UdevRuleName *r, const char *subsystem, const char *kernel) {
        assert(r);

        for (char **s = r->subsystems; s && *s; s++)
                if (!udev_rule_value_matches(*s, subsystem))
                        return false;
        for (char **k = r->kernels; k && *k; k++)
                if (!udev_rule_value_matches(*k, kernel))
                        return false;
        return true;
}

void udev_rules_join_lines(char *text) {
        char *out = text, *start = text;
        bool continued = false;

        for (char *p = text; *p;) {
                size_t n = strcspn(p, "\n"), skip = MIN(strspn(p, " \t\r"), n);
                const char *line = p + skip;
                bool newline = p[n] == '\n';

                p += n + newline;
                if (n > skip && line[0] == '#')
                        continue;
                memmove(out, line, n - skip);
                out += n - skip;
                continued = out > start && out[-1] == '\\';
                if (continued)
                        out--;
                else {
                        if (newline)
                                *out++ = '\n';
                        start = out;
                }
        }
        if (continued)
                out = start;
        *out = '\0';
}

static int strv_copy_or_null(char *const *l, char ***ret) {
        *ret = NULL;
        if (!l)
                return 0;
        *ret = strv_copy_n(l, strv_length(l));
        return *ret ? 0 : -ENOMEM;
}

/* The names one joined rule line passes to modgate-udev, appended to *names. */
static int line_names(char *line, UdevRuleName **names, size_t *n) {
        _cleanup_strv_free_ char **subsystems = NULL, **kernels = NULL;
        char *p = strstr(line, "/modgate-udev "), *end, *w;

        if (!p)
                return 0;
        if (udev_rule_matches(line, "SUBSYSTEM", &subsystems) < 0 ||
            udev_rule_matches(line, "KERNEL", &kernels) < 0)
                return -ENOMEM;
        p += strlen("/modgate-udev ");
        end = strchr(p, '"');
        if (!end)
                return 0;
        *end = '\0';
        for (w = strtok_r(p, " \t", &end); w; w = strtok_r(NULL, " \t", &end)) {
                UdevRuleName *a;

                if (!module_name_is_valid(w))
                        continue;
                a = reallocarray(*names, *n + 1, sizeof(**names));
                if (!a)
                        return -ENOMEM;
                *names = a;
                a[*n] = (UdevRuleName) { .name = strdup(w) };
                (*n)++;
                if (!a[*n - 1].name || strv_copy_or_null(subsystems, &a[*n - 1].subsystems) < 0 ||
                    strv_copy_or_null(kernels, &a[*n - 1].kernels) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int udev_rule_names_read(const char *const *files, UdevRuleName **ret, size_t *ret_n) {
        UdevRuleName *names = NULL;
        size_t n = 0;

        for (const char *const *f = files; f && *f; f++) {
                _cleanup_(fclosep) FILE *file = NULL;
                _cleanup_free_ char *raw = NULL, *text = NULL;
                char *lines = NULL;
                size_t size;

                file = fopen(*f, "re");
                if (!file)
                        continue;
                if (read_full_stream(file, 1024 * 1024, &raw, &size) < 0)
                        continue;
                /* The builtin's calls as modgate-udev-rules' copy has them: the names the source
                 * passes, read from the source rather than from a copy in /run. */
                if (udev_rules_rewrite_kmod(raw, "/modgate-udev", &text, NULL, NULL, NULL) < 0) {
                        udev_rule_names_free(names, n);
                        return -ENOMEM;
                }
                udev_rules_join_lines(text);
                for (char *line = strtok_r(text, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines))
                        if (line_names(line, &names, &n) < 0) {
                                udev_rule_names_free(names, n);
                                return -ENOMEM;
                        }
        }
        *ret = names;
        *ret_n = n;
        return 0;
}

/* At p, a RUN{builtin} call of the kmod builtin's "load": its length up to and including the closing
 * quote, with where its operator and its arguments (after "kmod load") start and end. 0 if p is
 * anything else. */
static size_t kmod_call(const char *p, const char **ret_op, size_t *ret_op_len, const char **ret_args,
                        size_t *ret_args_len) {
        const char *q = p + strlen("RUN{builtin}"), *op, *v, *args;
        size_t op_len;

        if (strncmp(p, "RUN{builtin}", strlen("RUN{builtin}")) != 0)
                return 0;
        q += strspn(q, " \t");
        op = q;
        if (strncmp(q, "+=", 2) == 0 || strncmp(q, ":=", 2) == 0)
                op_len = 2;
        else if (q[0] == '=' && q[1] != '=')
                op_len = 1;
        else
                return 0;
        q += op_len;
        q += strspn(q, " \t");
        if (*q != '"')
                return 0;
        v = q + 1;
        v += strspn(v, " \t");
        if (strncmp(v, "kmod", 4) != 0 || !strchr(" \t", v[4]) || v[4] == '\0')
                return 0;
        v += 4 + strspn(v + 4, " \t");
        if (strncmp(v, "load", 4) != 0 || !strchr(" \t\"", v[4]) || v[4] == '\0')
                return 0;
        args = v + 4;
        /* The value ends at the first quote that no backslash escapes, as udev reads it. */
        for (q = args; *q != '"'; q++) {
                if (*q == '\0' || *q == '\n')
                        return 0;
                if (q[0] == '\\' && q[1] == '"')
                        q++;
        }
        *ret_op = op;
        *ret_op_len = op_len;
        *ret_args = args;
        *ret_args_len = (size_t) (q - args);
        return (size_t) (q + 1 - p);
}

/* The subsystems of the rules that run helper, and whether one of them matches none. */
static int helper_subsystems(const char *text, const char *helper, char ***subsystems, bool *unmatched) {
        _cleanup_free_ char *joined = strdup(text), *needle = NULL;
        char *lines = NULL;

        if (!joined || asprintf(&needle, "\"%s", helper) < 0)
                return -ENOMEM;
        udev_rules_join_lines(joined);
        for (char *line = strtok_r(joined, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
                _cleanup_strv_free_ char **values = NULL;
                int r;

                if (!strstr(line, needle))
                        continue;
                r = udev_rule_matches(line, "SUBSYSTEM", &values);
                if (r < 0)
                        return r;
                /* A rule's events are among those of its first match's subsystems (all must match);
                 * one with a glob names no subsystem to replay, as one with no match. */
                if (!values || strpbrk(values[0], "*?[")) {
                        *unmatched = true;
                        continue;
                }
                for (const char *p = values[0];;) {
                        size_t n = strcspn(p, "|");
                        char *one = strndup(p, n);

                        if (!one)
                                return -ENOMEM;
                        if (strv_contains(*subsystems, one))
                                free(one);
                        else if (strv_consume(subsystems, one) < 0)
                                return -ENOMEM;
                        if (!p[n])
                                break;
                        p += n + 1;
                }
        }
        return 0;
}

int udev_rules_rewrite_kmod(const char *text, const char *helper, char **ret, size_t *ret_n,
                            char ***ret_subsystems, bool *ret_unmatched) {
        _cleanup_strv_free_ char **subsystems = NULL;
        _cleanup_free_ char *out = NULL;
        size_t size = 0, n = 0;
        bool unmatched = false;
        FILE *f;
        int r;

        f = open_memstream(&out, &size);
        if (!f)
                return -ENOMEM;
        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n"), skip = strspn(p, " \t\r");
                const char *end = p + len, *w = p;

                if (skip < len && p[skip] == '#') {
                        fwrite(p, 1, len, f);
                        w = end;
                }
                while (w < end) {
                        const char *op, *args;
                        size_t op_len, args_len, call = 0;

                        /* A value is never a key: what is quoted is copied as it is, up to its closing
                         * quote (one no backslash escapes), or to the end of the line. */
                        if (*w == '"') {
                                const char *q = w + 1;

                                while (q < end && *q != '"')
                                        q += q[0] == '\\' && q + 1 < end && q[1] == '"' ? 2 : 1;
                                q = MIN(q + 1, end);
                                fwrite(w, 1, (size_t) (q - w), f);
                                w = q;
                                continue;
                        }
                        if (w == p || strchr(", \t", w[-1]))
                                call = kmod_call(w, &op, &op_len, &args, &args_len);
                        if (call == 0 || w + call > end) {
                                fputc(*w++, f);
                                continue;
                        }
                        fprintf(f, "RUN%.*s\"%s%.*s\"", (int) op_len, op, helper, (int) args_len, args);
                        w += call;
                        n++;
                }
                if (*end == '\n')
                        fputc('\n', f);
                p = *end ? end + 1 : end;
        }
        if (fclose(f) != 0 || !out)
                return -ENOMEM;

        if (n > 0 && (ret_subsystems || ret_unmatched)) {
                r = helper_subsystems(out, helper, &subsystems, &unmatched);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(out);
        if (ret_n)
                *ret_n = n;
        if (ret_subsystems)
                *ret_subsystems = TAKE_PTR(subsystems);
        if (ret_unmatched)
                *ret_unmatched = unmatched;
        return 0;
}
