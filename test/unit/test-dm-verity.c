/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "dm-verity.h"
#include "tests.h"

#define HASH "4b3c0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
#define SALT "8d2fe0b7a11bd7e9b1c3ff5e46c5ae5d0d1c3f2e4a5b6c7d8e9f0a1b2c3d4e5f"

static void check_bad(const char *line) {
        DmVerityTable t = {};

        if (dm_verity_table_parse(line, &t) != -EBADMSG) {
                fprintf(stderr, "accepted: %s\n", line);
                check(false);
        }
}

TEST(table) {
        DmVerityTable t = {};

        /* As veritysetup open sets it up and the kernel reports it. */
        check(dm_verity_table_parse("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT, &t) == 0);
        check(t.version == 1);
        check_streq(t.data_device, "254:16");
        check_streq(t.hash_device, "254:16");
        check_streq(t.algorithm, "sha256");
        check_streq(t.root_hash, HASH);
        check(!t.options && !t.ignore_corruption);
        dm_verity_table_done(&t);

        check(dm_verity_table_parse("1 7:0 7:1 4096 4096 10 1 sha256 " HASH " - 3 ignore_zero_blocks "
                                    "ignore_corruption check_at_most_once", &t) == 0);
        check_streq(t.options, "ignore_zero_blocks ignore_corruption check_at_most_once");
        check(t.ignore_corruption);
        dm_verity_table_done(&t);

        check(dm_verity_table_parse("0 7:0 7:1 512 4096 10 1 sha1 " HASH " " SALT " 2 root_hash_sig_key_desc k ", &t) == 0);
        check_streq(t.options, "root_hash_sig_key_desc k");
        dm_verity_table_done(&t);

        check_bad("");
        check_bad("2 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT);
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH);
        check_bad("1 /dev/vdb 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT);
        check_bad("1 254:16 254:16 4k 4096 25600 25601 sha256 " HASH " " SALT);
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH "Z " SALT);
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 ABCD " SALT);
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT " 2 ignore_corruption");
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT " 1 a b");
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT " 0");
        check_bad("1 254:16 254:16 4096 4096 25600 25601 sha256 " HASH " " SALT " x");
}

TEST(status) {
        check(dm_verity_status_corrupted("V") == 0);
        check(dm_verity_status_corrupted("C") == 1);
        check(dm_verity_status_corrupted("V 0") == 0);
        check(dm_verity_status_corrupted("C 12") == 1);
        check(dm_verity_status_corrupted("") == -EBADMSG);
        check(dm_verity_status_corrupted("VC") == -EBADMSG);
        check(dm_verity_status_corrupted("X") == -EBADMSG);
}

TEST(encode_dev) {
        /* The kernel's new_encode_dev(): minor's low byte, major, minor's high bits. */
        check(dm_encode_dev(254, 0) == 0xfe00);
        check(dm_encode_dev(254, 3) == 0xfe03);
        check(dm_encode_dev(253, 0x123) == (0x23 | (253 << 8) | (0x100ULL << 12)));
}

int main(void) {
        RUN(table);
        RUN(status);
        RUN(encode_dev);
        return tests_done();
}
