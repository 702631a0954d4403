/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "request-name.h"
#include "request.h"
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
                check(!request_name_check(ok[i]));
}

TEST(refused) {
        static const char *const bad[] = {
                "", "-r", "--", "-", "a b", "a\tb", "a\nb", "fs-\x1b[31m", "a/b", "../x", "/lib/x.ko", "x\x7f",
                " x", "x ", "caf\xc3\xa9",
        };
        char big[300];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                check(request_name_check(bad[i]));
        check(request_name_check(NULL));

        memset(big, 'x', sizeof(big));
        big[255] = '\0';
        check(!request_name_check(big));
        big[255] = 'x';
        big[256] = '\0';
        check_streq(request_name_check(big), "name is longer than 255 bytes");
}

/* What the daemon would refuse, modgate-modprobe refuses in the daemon's words. */
TEST(words) {
        check_streq(request_name_check("a b"), modalias_check("a b"));
        check_streq(request_name_check("-r"), "modalias starts with '-'");
        check_streq(request_name_check(""), "modalias is empty");
        check_streq(request_name_check("../x"), "name contains '/'");
}

int main(void) {
        RUN(kernel_names);
        RUN(refused);
        RUN(words);
        return tests_done();
}
