/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* /proc/PID/cgroup as authorization reads it: which cgroup a caller is in, and the systemd unit that
 * cgroup belongs to (udevd's and the boot list's units may claim their request sources). The input
 * is the file. Each line is "ID:CONTROLLERS:PATH", where only the path is the cgroup's own words (a
 * delegated subtree names its cgroups, ':' included). */

#include <errno.h>
#include <string.h>

#include "authorize.h"
#include "fuzz.h"

/* The path as the kernel's lines say it: the unified hierarchy's (ID 0, no controllers), or the
 * named systemd hierarchy's on a hybrid system when the unified one holds nothing. */
static const char *reference_path(const char *text, size_t *ret_len) {
        const char *unified = NULL, *named = NULL, *p;
        size_t unified_len = 0, named_len = 0;

        for (p = text; *p;) {
                size_t n = strcspn(p, "\n");
                const char *c1 = memchr(p, ':', n), *c2;

                c2 = c1 ? memchr(c1 + 1, ':', n - (size_t) (c1 + 1 - p)) : NULL;
                if (c2) {
                        const char *path = c2 + 1;
                        size_t len = n - (size_t) (path - p);

                        if (c1 - p == 1 && p[0] == '0' && c2 == c1 + 1)
                                unified = path, unified_len = len;
                        else if (c2 - c1 - 1 == 12 && strncmp(c1 + 1, "name=systemd", 12) == 0)
                                named = path, named_len = len;
                }
                p += n + (p[n] == '\n');
        }
        if (named && (!unified || (unified_len == 1 && unified[0] == '/'))) {
                *ret_len = named_len;
                return named;
        }
        *ret_len = unified_len;
        return unified;
}

static bool has_suffix(const char *s, size_t n, const char *suffix) {
        size_t m = strlen(suffix);

        return n > m && strncmp(s + n - m, suffix, m) == 0;
}

/* The unit is the first component that is not a slice, when it is a service or a scope; a unit of
 * system.slice sits right below it. */
static void check_unit(const char *path, const char *unit, bool system, bool root) {
        const char *c = path;
        unsigned depth = 0;
        bool only_system = true;

        fuzz_assert(root == (strcmp(path, "/") == 0));
        fuzz_assert(!system || unit);
        for (;;) {
                size_t n;

                c += strspn(c, "/");
                n = strcspn(c, "/");
                if (n == 0 || !has_suffix(c, n, ".slice"))
                        break;
                only_system = only_system && depth == 0 && n == 12 && strncmp(c, "system.slice", 12) == 0;
                depth++;
                c += n;
        }
        if (!unit) {
                size_t n = strcspn(c, "/");

                fuzz_assert(!has_suffix(c, n, ".service") && !has_suffix(c, n, ".scope"));
                return;
        }
        fuzz_assert(strncmp(c, unit, strlen(unit)) == 0 && (c[strlen(unit)] == '/' || c[strlen(unit)] == '\0'));
        fuzz_assert(has_suffix(unit, strlen(unit), ".service") || has_suffix(unit, strlen(unit), ".scope"));
        fuzz_assert(system == (only_system && depth == 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size), *path = NULL, *unit = NULL;
        const char *want;
        size_t want_len;
        bool system = false, root = false;
        int r, k;

        if (!text)
                return 0;

        r = cgroup_path(text, &path);
        want = reference_path(text, &want_len);
        if (r < 0) {
                fuzz_assert(r == -EBADMSG || r == -ENOMEM);
                fuzz_assert(r == -ENOMEM || !want || want_len == 0 || want[0] != '/');
        } else {
                fuzz_assert(want && strlen(path) == want_len && strncmp(path, want, want_len) == 0);
                fuzz_assert(path[0] == '/' && !strchr(path, '\n'));
        }

        k = cgroup_unit(text, &unit, &system, &root);
        fuzz_assert(k == r || k == -ENOMEM || r == -ENOMEM);
        if (k == 0 && r == 0)
                check_unit(path, unit, system, root);
        return 0;
}
