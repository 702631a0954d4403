/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "tests-tmp.h"

/* Digests as `sha256sum` prints them for the same bytes (the first three are also FIPS 180-2's). */
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA256_MILLION_A "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
#define SHA256_TWO_BLOCKS "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
/* 300001 bytes, byte i = (7i + 3) mod 251: more than two read chunks, the last one partial. */
#define PATTERN_SIZE 300001
#define SHA256_PATTERN "6d3400318c683ea2ca91be7d2d76a555a39f89be92ae2f4344f659ccfb12e707"

static int write_file(const char *root, const char *name, const void *data, size_t n) {
        _cleanup_free_ char *p = tmp_path(root, name);
        int fd;

        fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, data, n) == (ssize_t) n);
        return fd;
}

static void check_fd_digest(int fd, const char *hex) {
        uint8_t d[SHA256_DIGEST_SIZE];
        char got[SHA256_HEX_SIZE];

        check(sha256_fd(fd, d) == 0);
        sha256_to_hex(d, got);
        check_streq(got, hex);
}

/* What sha256sum itself says about the file now. */
static void check_against_sha256sum(const char *path, const char *hex) {
        _cleanup_free_ char *cmd = NULL;
        char line[256] = "";
        FILE *p;

        check(asprintf(&cmd, "sha256sum '%s'", path) > 0);
        p = popen(cmd, "re");
        check(p);
        check(fgets(line, sizeof(line), p));
        check(pclose(p) == 0);
        check(strlen(line) > SHA256_HEX_SIZE - 1);
        line[SHA256_HEX_SIZE - 1] = '\0';
        check_streq(line, hex);
}

TEST(known_inputs) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *million = malloc(1000000), *pattern = malloc(PATTERN_SIZE);
        _cleanup_free_ char *path = tmp_path(root, "pattern");
        static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        _cleanup_close_ int empty = -EBADF, abc = -EBADF, fa = -EBADF, fb = -EBADF, fp = -EBADF;

        check(million && pattern);
        memset(million, 'a', 1000000);
        for (size_t i = 0; i < PATTERN_SIZE; i++)
                pattern[i] = (char) ((i * 7 + 3) % 251);

        empty = write_file(root, "empty", "", 0);
        abc = write_file(root, "abc", "abc", 3);
        fa = write_file(root, "million", million, 1000000);
        fb = write_file(root, "two-blocks", two_blocks, strlen(two_blocks));
        fp = write_file(root, "pattern", pattern, PATTERN_SIZE);

        check_fd_digest(empty, SHA256_EMPTY);
        check_fd_digest(abc, SHA256_ABC);
        check_fd_digest(fa, SHA256_MILLION_A);
        check_fd_digest(fb, SHA256_TWO_BLOCKS);
        check_fd_digest(fp, SHA256_PATTERN);
        check_against_sha256sum(path, SHA256_PATTERN);

        /* The same bytes give the same digest, one more byte another. */
        check(write(abc, "d", 1) == 1);
        check_fd_digest(abc, "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
}

static void check_buffer_digest(const void *p, size_t size, const char *want) {
        uint8_t d[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];

        check(sha256_buffer(p, size, d) == 0);
        sha256_to_hex(d, hex);
        check_streq(hex, want);
}

TEST(buffer) {
        check_buffer_digest("", 0, SHA256_EMPTY);
        check_buffer_digest("abc", 3, SHA256_ABC);
        check_buffer_digest("abcd", 4, "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
}

TEST(offset_does_not_move) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_close_ int fd = -EBADF;
        char c;

        fd = write_file(root, "abc", "abc", 3);
        /* The whole file whatever the offset: at its end (after write()), and in the middle. */
        check(lseek(fd, 0, SEEK_CUR) == 3);
        check_fd_digest(fd, SHA256_ABC);
        check(lseek(fd, 0, SEEK_CUR) == 3);

        check(lseek(fd, 1, SEEK_SET) == 1);
        check_fd_digest(fd, SHA256_ABC);
        check(lseek(fd, 0, SEEK_CUR) == 1);
        check(read(fd, &c, 1) == 1 && c == 'b');
}

TEST(read_errors) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *path = tmp_path(root, "abc");
        uint8_t d[SHA256_DIGEST_SIZE], before[SHA256_DIGEST_SIZE];
        int pipefd[2], fd;

        memset(d, 0x5a, sizeof(d));
        memcpy(before, d, sizeof(d));

        check(sha256_fd(-1, d) == -EBADF);
        check(pipe2(pipefd, O_CLOEXEC) == 0);
        check(write(pipefd[1], "abc", 3) == 3);
        check(sha256_fd(pipefd[0], d) == -ESPIPE);
        check(close(pipefd[0]) == 0 && close(pipefd[1]) == 0);
        /* A closed descriptor, a directory and an O_PATH descriptor cannot be read. */
        check(sha256_fd(pipefd[0], d) == -EBADF);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        check(fd >= 0);
        check(sha256_fd(fd, d) == -EISDIR);
        close(fd);
        close(write_file(root, "abc", "abc", 3));
        fd = open(path, O_PATH | O_CLOEXEC);
        check(fd >= 0);
        check(sha256_fd(fd, d) == -EBADF);
        close(fd);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        check(fd >= 0);
        check(sha256_fd(fd, d) == -EBADF);
        close(fd);

        /* Nothing is written on failure. */
        check(memcmp(d, before, sizeof(d)) == 0);
}

TEST(hex_round_trip) {
        uint8_t d[SHA256_DIGEST_SIZE], e[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];

        check(sha256_from_hex(SHA256_ABC, d) == 0);
        check(d[0] == 0xba && d[1] == 0x78 && d[30] == 0x15 && d[31] == 0xad);
        sha256_to_hex(d, hex);
        check_streq(hex, SHA256_ABC);
        check(strlen(hex) == 64);

        /* Every byte value survives the trip. */
        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++)
                d[i] = (uint8_t) (i * 8 + (i & 7));
        d[0] = 0x00;
        d[31] = 0xff;
        sha256_to_hex(d, hex);
        check(strncmp(hex, "00", 2) == 0 && strcmp(hex + 62, "ff") == 0);
        check(sha256_from_hex(hex, e) == 0);
        check(memcmp(d, e, sizeof(d)) == 0);

        /* Either case is read; lowercase is written. */
        check(sha256_from_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", e) == 0);
        check(sha256_from_hex(SHA256_ABC, d) == 0);
        check(memcmp(d, e, sizeof(d)) == 0);
}

TEST(bad_hex) {
        static const char *const bad[] = {
                "",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",      /* 63 */
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0",    /* 65 */
                "ga7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015aG",
                " a7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a\n",
                "0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015",
                "ba7816bf8f01cfea414140de5dae2223-00361a396177a9cb410ff61f20015ad",
        };
        uint8_t d[SHA256_DIGEST_SIZE], before[SHA256_DIGEST_SIZE];

        memset(d, 0x5a, sizeof(d));
        memcpy(before, d, sizeof(d));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (sha256_from_hex(bad[i], d) != -EINVAL)
                        fprintf(stderr, "accepted: '%s'\n", bad[i]);
                check(sha256_from_hex(bad[i], d) == -EINVAL);
        }
        check(sha256_from_hex(NULL, d) == -EINVAL);
        check(memcmp(d, before, sizeof(d)) == 0);
}

int main(void) {
        RUN(known_inputs);
        RUN(buffer);
        RUN(offset_does_not_move);
        RUN(read_errors);
        RUN(hex_round_trip);
        RUN(bad_hex);
        return tests_done();
}
