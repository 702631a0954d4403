/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Lines of /proc/self/mountinfo, read where statmount(2) is missing. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "mountinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        MountInfo m;
        FILE *f;
        int r;

        text = strndup((const char *) data, size);
        if (!text)
                return 0;

        r = mount_info_parse_line(text, &m);
        if (r >= 0) {
                fuzz_assert(m.mount_point && m.fstype && m.source);
                fuzz_assert(m.mount_id >= 0 && m.parent_id >= 0);
                mount_info_done(&m);
        } else
                fuzz_assert(r == -EBADMSG || r == -ENOMEM);

        /* The same bytes as a whole file: every line is parsed until the first bad one. */
        f = fmemopen(size > 0 ? (void *) data : (void *) "", size, "r");
        if (f) {
                r = mount_info_find(f, 98, &m);
                if (r >= 0)
                        mount_info_done(&m);
                fclose(f);
        }
        return 0;
}
