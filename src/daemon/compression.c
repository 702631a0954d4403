/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "compression.h"
#include "macro.h"

static const struct {
        Compression compression;
        const char *name;
        uint8_t magic[COMPRESSION_MAGIC_MAX];
        size_t magic_len;
} table[] = {
        { COMPRESSION_NONE, "none", { 0x7f, 'E', 'L', 'F' }, 4 },
        { COMPRESSION_XZ, "xz", { 0xfd, '7', 'z', 'X', 'Z', 0x00 }, 6 },
        { COMPRESSION_ZSTD, "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4 },
        { COMPRESSION_GZIP, "gzip", { 0x1f, 0x8b }, 2 },
};

Compression compression_from_magic(const uint8_t *buf, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (n >= table[i].magic_len && memcmp(buf, table[i].magic, table[i].magic_len) == 0)
                        return table[i].compression;
        return COMPRESSION_UNKNOWN;
}

Compression compression_from_sysfs(const char *s) {
        size_t n = strcspn(s, "\n");

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].compression != COMPRESSION_NONE && strlen(table[i].name) == n &&
                    strncmp(s, table[i].name, n) == 0)
                        return table[i].compression;
        return COMPRESSION_UNKNOWN;
}

const char *compression_to_string(Compression c) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].compression == c)
                        return table[i].name;
        return "unknown";
}
