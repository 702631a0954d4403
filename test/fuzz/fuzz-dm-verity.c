/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What modgate decodes of a file's origin below the file system: a verity target's table and status
 * lines (the prober parses what the kernel reports), and the security.ima attribute (the daemon
 * reads it off the fd). The first byte chooses; the rest is the input. */

#include <errno.h>
#include <string.h>

#include "dm-verity.h"
#include "fuzz.h"
#include "origin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        DmVerityTable t;
        Ima ima;
        int r;

        if (size == 0)
                return 0;
        if (data[0] == 'i') {
                ima_parse(data + 1, size - 1, &ima);
                fuzz_assert(ima.type >= 0 && ima.type < _IMA_TYPE_MAX);
                fuzz_assert(memchr(ima.hash_algorithm, '\0', sizeof(ima.hash_algorithm)));
                fuzz_assert(ima_is_signature(ima.type) || ima.key_id == 0);
                return 0;
        }

        text = strndup((const char *) data + 1, size - 1);
        if (!text)
                return 0;
        if (data[0] == 's') {
                r = dm_verity_status_corrupted(text);
                fuzz_assert(r == 0 || r == 1 || r == -EBADMSG);
                return 0;
        }
        r = dm_verity_table_parse(text, &t);
        if (r >= 0) {
                fuzz_assert(strlen(t.root_hash) >= 2 && strspn(t.root_hash, "0123456789abcdef") == strlen(t.root_hash));
                fuzz_assert(t.data_device[0] && t.hash_device[0] && t.algorithm[0]);
                fuzz_assert(!t.ignore_corruption || (t.options && strstr(t.options, "ignore_corruption")));
                dm_verity_table_done(&t);
        } else
                fuzz_assert(r == -EBADMSG || r == -ENOMEM);
        return 0;
}
