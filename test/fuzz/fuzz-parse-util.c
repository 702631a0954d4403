/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The small value parsers: booleans, numbers and time spans of the configuration, the kernel's
 * module compression (/sys/module/compression), and a trusted root's identity as recorded in the
 * runtime directory ("dev=254:0 diskseq=5 fstype=erofs roothash=HEX"). The input is the value. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "compression.h"
#include "fuzz.h"
#include "parse-util.h"
#include "root-identity.h"

/* The decimal digits of s without its leading zeros (one zero is kept). */
static const char *significant(const char *s) {
        while (s[0] == '0' && s[1] != '\0')
                s++;
        return s;
}

static void check_numbers(const char *s) {
        char buf[64];
        uint64_t u64;
        unsigned u;
        int r;

        r = parse_boolean(s);
        fuzz_assert(r == 0 || r == 1 || r == -EINVAL);

        r = parse_unsigned(s, &u);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r != -EINVAL)
                fuzz_assert(*s && strspn(s, "0123456789") == strlen(s));
        if (r == 0) {
                snprintf(buf, sizeof(buf), "%u", u);
                fuzz_assert(strcmp(buf, significant(s)) == 0);
        }

        r = parse_uint64(s, &u64);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r != -EINVAL)
                fuzz_assert(*s && strspn(s, "0123456789") == strlen(s));
        if (r == 0) {
                snprintf(buf, sizeof(buf), "%" PRIu64, u64);
                fuzz_assert(strcmp(buf, significant(s)) == 0);
        }
}

/* A span taken is the whole string, and reads the same written back in microseconds. */
static void check_timespan(const char *s) {
        uint64_t usec, again;
        char buf[64];
        int r;

        r = parse_timespan(s, &usec);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0)
                return;
        fuzz_assert(!strchr(" \t", s[0]) && !strchr(" \t", s[strlen(s) - 1]));
        if (usec == USEC_INFINITY) {
                fuzz_assert(strcmp(s, "infinity") == 0);
                return;
        }
        snprintf(buf, sizeof(buf), "%" PRIu64 "us", usec);
        fuzz_assert(parse_timespan(buf, &again) == 0 && again == usec);
}

static void check_compression(const char *s) {
        Compression c = compression_from_sysfs(s);

        fuzz_assert(c >= 0 && c < _COMPRESSION_MAX && c != COMPRESSION_NONE);
        if (c != COMPRESSION_UNKNOWN)
                fuzz_assert(strncmp(s, compression_to_string(c), strlen(compression_to_string(c))) == 0 &&
                            strchr("\n", s[strlen(compression_to_string(c))]));
}

/* An identity read back is written as it was read, and reads the same again. */
static void check_root_identity(const char *s) {
        RootIdentity id, again;
        char buf[512];

        if (root_identity_parse(s, &id) < 0)
                return;
        fuzz_assert(memchr(id.fstype, '\0', sizeof(id.fstype)) && memchr(id.root_hash, '\0', sizeof(id.root_hash)));
        fuzz_assert(strspn(id.root_hash, "0123456789abcdef") == strlen(id.root_hash));
        root_identity_format(&id, buf, sizeof(buf));
        fuzz_assert(root_identity_parse(buf, &again) == 0);
        fuzz_assert(root_identity_equal(&id, &again));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = strndup((const char *) data, size);

        if (!s)
                return 0;
        check_numbers(s);
        check_timespan(s);
        check_compression(s);
        check_root_identity(s);
        return 0;
}
