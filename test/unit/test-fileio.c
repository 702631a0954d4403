/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "fileio.h"
#include "macro.h"
#include "tests-tmp.h"
#include "tests.h"

static int read_mem(const char *data, size_t n, size_t max, char **ret, size_t *ret_size) {
        FILE *f = fmemopen((void *) data, n, "r");
        int r;

        check(f);
        r = read_full_stream(f, max, ret, ret_size);
        fclose(f);
        return r;
}

TEST(read_full_stream_cap) {
        static const char data[] = "abc\0def";
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *c = NULL;
        size_t n = 0;

        check(read_mem(data, 7, 7, &a, &n) == 0);
        check(n == 7 && memcmp(a, "abc\0def", 8) == 0);
        check(read_mem(data, 7, 100, &b, &n) == 0);
        check(n == 7 && b[7] == '\0');
        check(read_mem(data, 7, 6, &c, &n) == -EFBIG);
        check(!c && n == 7);
}

TEST(read_full_stream_large) {
        size_t size = 3 * 4096 + 17, n;
        _cleanup_free_ char *data = malloc(size), *out = NULL;

        check(data);
        for (size_t i = 0; i < size; i++)
                data[i] = (char) ('a' + i % 26);
        check(read_mem(data, size, size, &out, &n) == 0);
        check(n == size && memcmp(out, data, size) == 0 && out[size] == '\0');
        check(read_mem(data, size, size - 1, &(char *) { NULL }, &n) == -EFBIG);
}

TEST(read_full_file) {
        _cleanup_(tmp_root_free) char *root = tmp_root_new();
        _cleanup_free_ char *path = tmp_path(root, "f"), *missing = tmp_path(root, "missing");
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *c = NULL;
        size_t n = 0;

        tmp_write(root, "f", "one\ntwo\n");
        check(read_full_file(path, 8, &a, &n) == 0);
        check(n == 8 && strcmp(a, "one\ntwo\n") == 0);
        check(read_full_file(path, 7, &c, NULL) == -EFBIG && !c);
        check(read_full_file(missing, 8, &c, NULL) == -ENOENT && !c);
        check(read_full_file(root, 8, &c, NULL) == -EISDIR && !c);
        /* A file of the kernel's with no size: read to its end all the same. */
        check(read_full_file("/proc/self/cmdline", 4096, &b, &n) == 0 && n > 0);
}

int main(void) {
        RUN(read_full_stream_cap);
        RUN(read_full_stream_large);
        RUN(read_full_file);
        return tests_done();
}
