/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "module-name.h"

static void check_config(const Config *c) {
        fuzz_assert(c->workers >= 1 && c->workers <= CONFIG_WORKERS_MAX);
        for (char **p = c->load_alone; p && *p; p++)
                fuzz_assert(module_name_is_valid(*p) && !strchr(*p, '-'));
        for (char **p = c->trusted_roots; p && *p; p++)
                fuzz_assert((*p)[0] == '/');
}

/* Every refusal names the file, and echoes only printable text back. */
static void check_message(int r, const char *message) {
        fuzz_assert(r == -EINVAL || r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
        if (!message) {
                fuzz_assert(r == -ENOMEM);
                return;
        }
        fuzz_assert(strncmp(message, "fuzz.conf:", strlen("fuzz.conf:")) == 0);
        for (const char *p = message; *p; p++)
                fuzz_assert((unsigned char) *p >= ' ' || *p == '\t');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *message = NULL;
        FILE *f;
        int r;

        /* fmemopen() wants a buffer even for no bytes. */
        f = fmemopen(size > 0 ? (void *) data : (void *) "", size, "r");
        if (!f)
                return 0;

        config_init_defaults(&c);
        r = config_parse_file(&c, f, "fuzz.conf", &message);
        fclose(f);

        if (r >= 0) {
                fuzz_assert(r == 0 && !message);
                check_config(&c);
        } else
                check_message(r, message);
        return 0;
}
