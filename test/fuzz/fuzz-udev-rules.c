/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The module names udev's installed rules pass to modgate-udev, which decide what udevd may load
 * without CAP_SYS_MODULE: each with the SUBSYSTEM== and KERNEL== matches of its rule. The input is
 * the rules file. A name is only ever allowed under the conditions of the rule that names it, as
 * udev reads that rule: a line continued with a backslash is one rule. */

#include <errno.h>
#include <string.h>

#include "authorize.h"
#include "fuzz.h"
#include "module-name.h"
#include "peer.h"
#include "strv.h"
#include "udev-rules.h"

#define RULES "80-modgate.rules"

/* The rules as udev reads them: blanks at the start of a line go, comment lines are skipped, and a
 * line that ends in a backslash goes on on the next one. Written here anew, from udev's
 * udev_rule_file_read(), to check peer.c's reading against. */
static char **logical_lines(const char *text) {
        _cleanup_free_ char *cont = NULL;
        char **lines = NULL;

        for (const char *p = text; *p;) {
                size_t n = strcspn(p, "\n"), skip = MIN(strspn(p, " \t\r"), n);
                const char *line = p + skip;
                size_t len = n - skip;
                char *joined;

                p += n + (p[n] == '\n');
                if (len > 0 && line[0] == '#')
                        continue;
                if (asprintf(&joined, "%s%.*s", cont ?: "", (int) len, line) < 0)
                        abort();
                free(cont);
                cont = joined;
                len = strlen(cont);
                if (len > 0 && cont[len - 1] == '\\') {
                        cont[len - 1] = '\0';
                        continue;
                }
                fuzz_assert(strv_consume(&lines, TAKE_PTR(cont)) == 0);
        }
        /* A rule still continued at the end of the file is dropped. */
        return lines;
}

/* Every KEY=="VALUE" of a rule, the key at the start or after a comma or a blank, up to one whose value
 * has no end; NULL when none. */
static char **match_values(const char *line, const char *key) {
        char **values = NULL;
        size_t n = strlen(key);

        for (const char *p = line; (p = strstr(p, key)); p++) {
                const char *v, *end;

                if ((p == line || strchr(", \t", p[-1])) && strncmp(p + n, "==\"", 3) == 0) {
                        v = p + n + 3;
                        end = strchr(v, '"');
                        if (!end)
                                break;
                        fuzz_assert(strv_consume(&values, strndup(v, (size_t) (end - v))) == 0);
                }
        }
        return values;
}

/* Whether a rule passes name to modgate-udev, with these matches. */
static bool rule_names(const char *line, const UdevRuleName *e) {
        _cleanup_strv_free_ char **subsystems = match_values(line, "SUBSYSTEM"),
                                 **kernels = match_values(line, "KERNEL");
        const char *run = strstr(line, "/modgate-udev ");
        size_t n = strlen(e->name);

        if (!run || !strv_equal(subsystems, e->subsystems) || !strv_equal(kernels, e->kernels))
                return false;
        run += strlen("/modgate-udev ");
        for (const char *w = run; *w && *w != '"'; w++)
                if ((w == run || strchr(" \t", w[-1])) && strncmp(w, e->name, n) == 0 && strchr(" \t\"", w[n]))
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *path = NULL, *missing = NULL, *text = strndup((const char *) data, size);
        _cleanup_strv_free_ char **lines = NULL;
        UdevRuleName *names = NULL;
        size_t n = 0;
        int r;

        if (!text)
                return 0;
        path = fuzz_write_file(RULES, data, size);
        if (asprintf(&missing, "%s/missing.rules", fuzz_tmp_dir()) < 0)
                return 0;

        /* Every file is read: one that does not exist is no rules at all. */
        r = udev_rule_names_read((const char *const[]) { missing, path, NULL }, &names, &n);
        if (r < 0) {
                fuzz_assert(r == -ENOMEM);
                return 0;
        }
        /* Names passed to udev's kmod builtin count as modgate-udev-rules' copy passes them on: the
         * rewrite is checked on its own below. */
        {
                _cleanup_free_ char *rewritten = NULL;

                r = udev_rules_rewrite_kmod(text, "/modgate-udev", &rewritten, NULL, NULL, NULL);
                if (r < 0) {
                        fuzz_assert(r == -ENOMEM);
                        udev_rule_names_free(names, n);
                        return 0;
                }
                lines = logical_lines(rewritten);
        }
        for (size_t i = 0; i < n; i++) {
                bool found = false;

                fuzz_assert(module_name_is_valid(names[i].name));
                for (char **v = names[i].subsystems; v && *v; v++)
                        fuzz_assert(!strpbrk(*v, "\"\n"));
                for (char **v = names[i].kernels; v && *v; v++)
                        fuzz_assert(!strpbrk(*v, "\"\n"));
                for (char **l = lines; l && *l && !found; l++)
                        found = rule_names(*l, &names[i]);
                fuzz_assert(found);
        }
        udev_rule_names_free(names, n);

        /* modgate-udev-rules' rewrite of kmod builtin calls: nothing else changes, and what it
         * writes has no call left to rewrite. */
        {
                _cleanup_free_ char *out = NULL, *again = NULL;
                _cleanup_strv_free_ char **subsystems = NULL;
                bool unmatched = false;
                size_t k = 0, k2 = 0;

                r = udev_rules_rewrite_kmod(text, "/h/modgate-udev", &out, &k, &subsystems, &unmatched);
                if (r < 0) {
                        fuzz_assert(r == -ENOMEM);
                        return 0;
                }
                if (k == 0)
                        fuzz_assert(streq_ptr(out, text) && !subsystems && !unmatched);
                fuzz_assert(udev_rules_rewrite_kmod(out, "/h/modgate-udev", &again, &k2, NULL, NULL) == 0);
                fuzz_assert(k2 == 0 && streq_ptr(again, out));
        }
        return 0;
}
