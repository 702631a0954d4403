/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE (SHA256_DIGEST_SIZE * 2 + 1)

/* The SHA-256 of the whole file behind fd, read with pread(2) from offset 0 to its end, so the fd's
 * offset does not move (the same fd goes to finit_module(2) next). Computed by libcrypto. Returns 0,
 * -ENOMEM, -EIO when libcrypto fails, or the error of pread(2) (-ESPIPE for a pipe or socket,
 * -EISDIR for a directory). ret is written only on success. Safe to call from several threads. */
int sha256_fd(int fd, uint8_t ret[SHA256_DIGEST_SIZE]);

/* The SHA-256 of size bytes at p, by libcrypto. Returns 0, or -EIO when libcrypto fails. */
int sha256_buffer(const void *p, size_t size, uint8_t ret[SHA256_DIGEST_SIZE]);

/* 64 lowercase hex digits and a NUL. */
void sha256_to_hex(const uint8_t d[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]);

/* Exactly 64 hex digits (either case), nothing before or after, else -EINVAL. ret is written only on
 * success. */
int sha256_from_hex(const char *s, uint8_t ret[SHA256_DIGEST_SIZE]);
