/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* How a module file is compressed, told from its first bytes. The kernel decompresses at most one
 * algorithm (the one in /sys/module/compression), and only when finit_module() is passed
 * MODULE_INIT_COMPRESSED_FILE. */
typedef enum Compression {
        COMPRESSION_NONE,       /* a plain ELF object */
        COMPRESSION_XZ,
        COMPRESSION_ZSTD,
        COMPRESSION_GZIP,
        COMPRESSION_UNKNOWN,    /* neither ELF nor a known compressor */
        _COMPRESSION_MAX,
} Compression;

#define COMPRESSION_MAGIC_MAX 6

Compression compression_from_magic(const uint8_t *buf, size_t n);

/* Parses the contents of /sys/module/compression ("xz\n"). Returns the compression, or
 * COMPRESSION_UNKNOWN for anything else. */
Compression compression_from_sysfs(const char *s);

const char *compression_to_string(Compression c);
