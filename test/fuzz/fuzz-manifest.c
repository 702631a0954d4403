/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "manifest.h"

/* An accepted manifest lists exactly its entry lines, each found again with its digest. */
static void check_manifest(const Manifest *m, const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;
        size_t n = 0;

        fuzz_assert(manifest_kernel_is_valid(manifest_kernel(m)));
        fuzz_assert(manifest_origin_to_string(manifest_origin(m)));
        fuzz_assert(size > 0 && data[size - 1] == '\n');

        /* The header first, then entries and comments. */
        p = memchr(p, '\n', size) + 1;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                _cleanup_free_ char *path = NULL;
                char hex[SHA256_HEX_SIZE];
                uint8_t want[SHA256_DIGEST_SIZE];
                const uint8_t *got;

                fuzz_assert(nl && nl > p);
                if (*p != '#') {
                        fuzz_assert(nl - p > SHA256_HEX_SIZE + 1);
                        memcpy(hex, p, SHA256_HEX_SIZE - 1);
                        hex[SHA256_HEX_SIZE - 1] = '\0';
                        fuzz_assert(sha256_from_hex(hex, want) == 0);
                        path = strndup(p + SHA256_HEX_SIZE + 1, (size_t) (nl - p) - SHA256_HEX_SIZE - 1);
                        fuzz_assert(path);
                        fuzz_assert(!manifest_path_problem(path));
                        got = manifest_lookup(m, path);
                        fuzz_assert(got && memcmp(got, want, SHA256_DIGEST_SIZE) == 0);
                        n++;
                }
                p = nl + 1;
        }
        fuzz_assert(n == manifest_entries(m));
        fuzz_assert(n <= MANIFEST_ENTRIES_MAX);
}

/* Every refusal says where and what, and echoes only printable text back. */
static void check_message(int r, const char *message) {
        fuzz_assert(r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
        if (!message) {
                fuzz_assert(r == -ENOMEM);
                return;
        }
        if (r == -EBADMSG) {
                size_t k = strspn(message, "0123456789");
                fuzz_assert(k > 0 && message[0] != '0' && strncmp(message + k, ": ", 2) == 0);
        }
        for (const char *p = message; *p; p++)
                fuzz_assert((unsigned char) *p >= ' ' || *p == '\t');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *message = NULL;
        FILE *f;
        int r;

        /* fmemopen() wants a buffer even for no bytes. */
        f = fmemopen(size > 0 ? (void *) data : (void *) "", size, "r");
        if (!f)
                return 0;
        r = manifest_parse(f, &m, &message);
        fclose(f);

        if (r >= 0) {
                fuzz_assert(r == 0 && m && !message);
                check_manifest(m, data, size);
        } else {
                fuzz_assert(!m);
                check_message(r, message);
        }
        return 0;
}
