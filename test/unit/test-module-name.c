/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "module-name.h"
#include "tests.h"

TEST(valid) {
        check(module_name_is_valid("e1000"));
        check(module_name_is_valid("vport-vxlan"));
        check(module_name_is_valid("nf_conntrack"));
        check(module_name_is_valid("A"));
        /* 55 characters is the longest name the kernel can hold. */
        check(module_name_is_valid("abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde"));
}

TEST(invalid) {
        static const char *const bad[] = {
                "", "-r", "--help", "../x", "a/b", "a b", "a\tb", "x.ko", "*", "a?", "snd-*",
                "fs\n", "café", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdef", ".",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (module_name_is_valid(bad[i]))
                        fprintf(stderr, "accepted: '%s'\n", bad[i]);
                check(!module_name_is_valid(bad[i]));
        }
        check(!module_name_is_valid(NULL));
}

TEST(normalize) {
        char s[] = "vport-vxlan-x";

        module_name_normalize(s);
        check_streq(s, "vport_vxlan_x");
        check(module_name_equal("snd-hda_intel", "snd_hda-intel"));
        check(!module_name_equal("snd_hda", "snd_hda_intel"));
        check(!module_name_equal("a", "b"));
}

int main(void) {
        RUN(valid);
        RUN(invalid);
        RUN(normalize);
        return tests_done();
}
