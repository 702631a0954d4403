/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "compression.h"
#include "trust.h"
#include "tests.h"

static FileOrigin good(void) {
        return (FileOrigin) {
                .mode = S_IFREG | 0644,
                .uid = 0,
                .sb_ro = true,
                .mount_ro = true,
        };
}

TEST(evaluate) {
        FileOrigin o = good();

        check(trust_evaluate(&o, true) == TRUST_OK);

        o = good();
        o.mode = S_IFDIR | 0755;
        check(trust_evaluate(&o, true) == TRUST_NOT_REGULAR);

        o = good();
        o.mode = S_IFIFO | 0644;
        check(trust_evaluate(&o, true) == TRUST_NOT_REGULAR);

        o = good();
        o.uid = 1000;
        check(trust_evaluate(&o, true) == TRUST_NOT_ROOT_OWNED);

        o = good();
        o.mode = S_IFREG | 0664;
        check(trust_evaluate(&o, true) == TRUST_WRITABLE_BY_OTHERS);

        o = good();
        o.mode = S_IFREG | 0646;
        check(trust_evaluate(&o, true) == TRUST_WRITABLE_BY_OTHERS);

        /* A read-only bind mount of a writable filesystem. */
        o = good();
        o.sb_ro = false;
        o.mount_ro = true;
        check(trust_evaluate(&o, true) == TRUST_WRITABLE_SUPERBLOCK);
        /* RequireReadOnlySuperblock=no lifts that one check, no other. */
        check(trust_evaluate(&o, false) == TRUST_OK);
        o.uid = 1000;
        check(trust_evaluate(&o, false) == TRUST_NOT_ROOT_OWNED);

        for (TrustVerdict v = 0; v < _TRUST_VERDICT_MAX; v++)
                check(trust_verdict_to_string(v));
        check(!trust_verdict_to_string(_TRUST_VERDICT_MAX));
}

TEST(compression) {
        static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1 };
        static const uint8_t xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
        static const uint8_t zst[] = { 0x28, 0xb5, 0x2f, 0xfd, 0, 0 };
        static const uint8_t gz[] = { 0x1f, 0x8b, 8, 0, 0, 0 };
        static const uint8_t junk[] = { 'h', 'e', 'l', 'l', 'o', 0 };

        check(compression_from_magic(elf, sizeof(elf)) == COMPRESSION_NONE);
        check(compression_from_magic(xz, sizeof(xz)) == COMPRESSION_XZ);
        check(compression_from_magic(xz, 5) == COMPRESSION_UNKNOWN);
        check(compression_from_magic(zst, sizeof(zst)) == COMPRESSION_ZSTD);
        check(compression_from_magic(gz, sizeof(gz)) == COMPRESSION_GZIP);
        check(compression_from_magic(junk, sizeof(junk)) == COMPRESSION_UNKNOWN);
        check(compression_from_magic(junk, 0) == COMPRESSION_UNKNOWN);

        check(compression_from_sysfs("xz\n") == COMPRESSION_XZ);
        check(compression_from_sysfs("zstd") == COMPRESSION_ZSTD);
        check(compression_from_sysfs("gzip\n") == COMPRESSION_GZIP);
        check(compression_from_sysfs("none") == COMPRESSION_UNKNOWN);
        check(compression_from_sysfs("xzz") == COMPRESSION_UNKNOWN);
        check(compression_from_sysfs("") == COMPRESSION_UNKNOWN);
}

int main(void) {
        RUN(evaluate);
        RUN(compression);
        return tests_done();
}
