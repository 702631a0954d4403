/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A modules-load.d file, as modgate-modules-load reads it: one module per line, '#' and ';' start
 * comments; and each module's request. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "load-plain.h"
#include "module-name.h"
#include "modules-load-conf.h"
#include "strv.h"

/* Each name is one line's text without the blanks around it, and not a comment. */
static void check_names(char **names, size_t n_lines) {
        fuzz_assert(strv_length(names) <= n_lines && strv_length(names) <= MODULES_LOAD_ENTRIES_MAX);
        for (char **n = names; n && *n; n++) {
                size_t len = strlen(*n);

                fuzz_assert(len > 0 && !strchr(*n, '\n') && !strchr("#;", (*n)[0]));
                fuzz_assert(!strchr(" \t\r", (*n)[0]) && !strchr(" \t\r", (*n)[len - 1]));
        }
}

/* Each name is asked for on its own: one that names no module (not even UTF-8) is refused as an
 * invalid name, which modgate-modules-load reports as not found, and the others go on. */
static void check_requests(char **names) {
        const RequestContext context = { .source = SOURCE_BOOT, .file = "/etc/modules-load.d/fuzz.conf",
                                         .seqnum = -1 };

        for (char **n = names; n && *n; n++) {
                _cleanup_free_ char *text = NULL;
                LoadRefusal refusal = {};
                size_t len;
                int r;

                r = plain_request_message(&(PlainRequest) { .name = *n, .context = &context }, USEC_INFINITY,
                                          &text, &len, &refusal);
                fuzz_assert(r == 0 || r == 1 || r == -ENOMEM);
                fuzz_assert(r != 0 || module_name_is_valid(*n));
                fuzz_assert(r != 1 || streq_ptr(refusal.error, "io.modgate.Manager.InvalidName"));
        }
}

/* Written back one per line, the names read the same. */
static void check_round_trip(char **names) {
        _cleanup_strv_free_ char **again = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&text, &size);
        fuzz_assert(f);
        for (char **n = names; n && *n; n++)
                fprintf(f, "%s\n", *n);
        fuzz_assert(fclose(f) == 0);
        fuzz_assert(modules_load_parse_text(text, &again) == 0);
        fuzz_assert(strv_equal(names, again));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *text = strndup((const char *) data, size);
        size_t n_lines = 1;
        int r;

        if (!text)
                return 0;
        for (const char *p = text; (p = strchr(p, '\n')); p++)
                n_lines++;

        r = modules_load_parse_text(text, &names);
        if (r < 0) {
                fuzz_assert(r == -E2BIG || r == -ENOMEM);
                return 0;
        }
        check_names(names, n_lines);
        check_round_trip(names);
        check_requests(names);
        return 0;
}
