/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Where a module's options are written, for its record: the "options NAME ..." statements of
 * modprobe.d and NAME.KEY=VALUE on the kernel command line. The input is the module name (a line),
 * the kernel command line (a line) and the rest, a modprobe.d file; libkmod itself reads the same
 * file, and must find as many statements for the module as the record names. (libkmod reads the
 * command line only from /proc/cmdline: a model of its reading stands in for it, for words without
 * quotes.) */

#include <errno.h>
#include <libkmod.h>
#include <string.h>

#include "fuzz.h"
#include "modprobe-options.h"
#include "module-name.h"

#define CONF "etc/modprobe.d/fuzz.conf"
#define CMDLINE_SOURCE "the kernel command line"
#define BLANKS " \t\n\v\f\r"

/* The "options" statements for name in a context: libkmod's own reading. */
static size_t kmod_options(struct kmod_ctx *ctx, const char *name) {
        struct kmod_config_iter *i = kmod_config_get_options(ctx);
        size_t n = 0;

        fuzz_assert(i);
        while (kmod_config_iter_next(i))
                if (strcmp(kmod_config_iter_get_key(i), name) == 0)
                        n++;
        kmod_config_iter_free_iter(i);
        return n;
}

/* What libkmod has without any file: the kernel command line it reads itself (/proc/cmdline). */
static struct kmod_ctx *kmod_baseline(void) {
        static struct kmod_ctx *ctx = NULL;
        char *empty = NULL;

        if (ctx)
                return ctx;
        if (asprintf(&empty, "%s/empty", fuzz_tmp_dir()) < 0 || (mkdir(empty, 0755) < 0 && errno != EEXIST))
                abort();
        ctx = kmod_new(fuzz_tmp_dir(), (const char *const[]) { empty, NULL });
        fuzz_assert(ctx);
        free(empty);
        return ctx;
}

static size_t kmod_file_options(const char *name) {
        _cleanup_free_ char *dir = NULL;
        struct kmod_ctx *ctx;
        size_t n;

        if (asprintf(&dir, "%s/etc/modprobe.d", fuzz_tmp_dir()) < 0)
                abort();
        ctx = kmod_new(fuzz_tmp_dir(), (const char *const[]) { dir, NULL });
        fuzz_assert(ctx);
        n = kmod_options(ctx, name);
        kmod_unref(ctx);
        return n - kmod_options(kmod_baseline(), name);
}

/* Whether a command line without quotes gives name options, as libkmod reads it: a word
 * MODULE.PARAM[=VALUE] with PARAM not empty and without a '.'. */
static bool cmdline_names(const char *cmdline, const char *name) {
        for (const char *w = cmdline + strspn(cmdline, BLANKS); *w; w += strspn(w, BLANKS)) {
                size_t len = strcspn(w, BLANKS), dot = strcspn(w, ".=");
                size_t key = dot < len ? strcspn(w + dot + 1, "=" BLANKS) : 0;
                char m[MODULE_NAME_MAX + 1];

                if (dot < len && w[dot] == '.' && dot + 1 < len && !memchr(w + dot + 1, '.', key) &&
                    dot < sizeof(m)) {
                        memcpy(m, w, dot);
                        m[dot] = '\0';
                        if (module_name_equal(m, name) &&
                            !(strcmp(m, "modprobe") == 0 && strncmp(w + dot + 1, "blacklist=", 10) == 0))
                                return true;
                }
                w += len;
        }
        return false;
}

/* The sources named: this file's statements by their first line, in order, then the command line. */
static void check_sources(const char *sources, const char *cmdline, const char *name, size_t n_lines,
                          size_t n_kmod) {
        const char *file = "/" CONF ":";
        unsigned last = 0;
        size_t n = 0;
        bool cmdline_named = false;

        for (const char *p = sources; p && *p;) {
                size_t len = strcspn(p, ",");

                fuzz_assert(!cmdline_named);
                if (strncmp(p, file, strlen(file)) == 0) {
                        char *end;
                        unsigned long line = strtoul(p + strlen(file), &end, 10);

                        fuzz_assert(end == p + len && line > last && line <= n_lines);
                        last = (unsigned) line;
                        n++;
                } else {
                        fuzz_assert(len == strlen(CMDLINE_SOURCE) && strncmp(p, CMDLINE_SOURCE, len) == 0);
                        cmdline_named = true;
                }
                p += len;
                if (*p) {
                        fuzz_assert(strncmp(p, ", ", 2) == 0);
                        p += 2;
                }
        }
        fuzz_assert(n == n_kmod);
        if (!strchr(cmdline, '"'))
                fuzz_assert(cmdline_named == cmdline_names(cmdline, name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size, *nl;
        _cleanup_free_ char *name = NULL, *cmdline = NULL, *sources = NULL, *path = NULL;
        size_t n_lines = 1;
        int r;

        /* libkmod says nothing of what it skips. */
        (void) setenv("KMOD_LOG", "0", 0);

        nl = memchr(p, '\n', size);
        name = strndup(p, nl ? (size_t) (nl - p) : size);
        if (!name || !module_name_is_valid(name)) {
                free(name);
                name = strdup("fuzz");
                fuzz_assert(name);
        }
        module_name_normalize(name);
        p = nl ? nl + 1 : end;
        nl = memchr(p, '\n', (size_t) (end - p));
        cmdline = strndup(p, nl ? (size_t) (nl - p) : (size_t) (end - p));
        fuzz_assert(cmdline);
        p = nl ? nl + 1 : end;

        for (const char *q = p; (q = memchr(q, '\n', (size_t) (end - q))); q++)
                n_lines++;
        path = fuzz_write_file(CONF, p, (size_t) (end - p));

        r = modprobe_options_sources(fuzz_tmp_dir(), cmdline, name, &sources);
        fuzz_assert(r == 0 || r == -ENOMEM);
        if (r == 0)
                check_sources(sources, cmdline, name, n_lines, kmod_file_options(name));
        return 0;
}
