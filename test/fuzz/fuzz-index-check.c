/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A depmod index (modules.*.bin) as index-check.c walks it before libkmod maps it. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "index-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char detail[128];
        int r;

        r = index_check_buffer(data, size, detail, sizeof(detail));
        fuzz_assert(r == 0 || r == -EBADMSG);
        fuzz_assert(r == 0 || memchr(detail, '\0', sizeof(detail)));
        return 0;
}
