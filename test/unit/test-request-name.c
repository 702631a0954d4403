/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "request-name.h"
#include "tests.h"

TEST(kernel_names) {
        /* What request_module() asks for, from the kernel's own callers. */
        static const char *const ok[] = {
                "fs-erofs", "net-pf-38", "crypto-hmac(sha256)", "char-major-10-229", "block-major-8-0",
                "crypto-authenc(hmac(sha256),cbc(aes))", "rtnl-link-vxlan", "nls_iso8859-1", "ip6t_REJECT",
                "net-pf-16-proto-16-family-nl80211", "xt_conntrack", "sound-slot-0", "fs-fuse.sshfs",
                "vxlan", "a",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                check(request_name_is_valid(ok[i]));
}

TEST(refused) {
        static const char *const bad[] = {
                "", "-r", "--", "-", "a b", "a\tb", "a\nb", "fs-\x1b[31m", "a/b", "../x", "/lib/x.ko", "x\x7f",
                " x", "x ",
        };
        char big[300];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                check(!request_name_is_valid(bad[i]));
        check(!request_name_is_valid(NULL));

        memset(big, 'x', sizeof(big));
        big[255] = '\0';
        check(request_name_is_valid(big));
        big[255] = 'x';
        big[256] = '\0';
        check(!request_name_is_valid(big));
}

int main(void) {
        RUN(kernel_names);
        RUN(refused);
        return tests_done();
}
