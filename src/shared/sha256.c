/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "sha256.h"

/* Large enough that the syscalls cost little next to the hashing, small enough for any thread. */
#define SHA256_READ_CHUNK (128U * 1024U)

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free);

int sha256_fd(int fd, uint8_t ret[SHA256_DIGEST_SIZE]) {
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned digest_size = 0;
        off_t offset = 0;

        if (fd < 0)
                return -EBADF;

        buf = malloc(SHA256_READ_CHUNK);
        ctx = EVP_MD_CTX_new();
        if (!buf || !ctx)
                return -ENOMEM;
        if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
                return -EIO;

        for (;;) {
                ssize_t n = pread(fd, buf, SHA256_READ_CHUNK, offset);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                if (EVP_DigestUpdate(ctx, buf, (size_t) n) != 1)
                        return -EIO;
                offset += n;
        }

        if (EVP_DigestFinal_ex(ctx, digest, &digest_size) != 1 || digest_size != SHA256_DIGEST_SIZE)
                return -EIO;
        memcpy(ret, digest, SHA256_DIGEST_SIZE);
        return 0;
}

int sha256_buffer(const void *p, size_t size, uint8_t ret[SHA256_DIGEST_SIZE]) {
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned digest_size = 0;

        if (EVP_Digest(p, size, digest, &digest_size, EVP_sha256(), NULL) != 1 ||
            digest_size != SHA256_DIGEST_SIZE)
                return -EIO;
        memcpy(ret, digest, SHA256_DIGEST_SIZE);
        return 0;
}

void sha256_to_hex(const uint8_t d[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
                ret[2 * i] = digits[d[i] >> 4];
                ret[2 * i + 1] = digits[d[i] & 0xf];
        }
        ret[SHA256_HEX_SIZE - 1] = '\0';
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int sha256_from_hex(const char *s, uint8_t ret[SHA256_DIGEST_SIZE]) {
        uint8_t d[SHA256_DIGEST_SIZE];

        if (!s || strnlen(s, SHA256_HEX_SIZE) != SHA256_HEX_SIZE - 1)
                return -EINVAL;
        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
                int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                d[i] = (uint8_t) (hi << 4 | lo);
        }
        memcpy(ret, d, sizeof(d));
        return 0;
}
