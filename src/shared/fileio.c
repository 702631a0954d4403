/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

#define READ_CHUNK 4096

int read_small_file_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, size - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        return 0;
}

int read_line_at(int dirfd, const char *path, char *buf, size_t size) {
        int r;

        r = read_small_file_at(dirfd, path, buf, size);
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t done = 0;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        text = malloc((size_t) st.st_size + 1);
        if (!text)
                return -ENOMEM;
        while (done < (size_t) st.st_size) {
                ssize_t k = pread(fd, text + done, (size_t) st.st_size - done, (off_t) done);

                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        text[done] = '\0';
        *ret = TAKE_PTR(text);
        if (ret_size)
                *ret_size = done;
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_size) {
        _cleanup_(fclosep) FILE *f = NULL;
        size_t size;
        int fd, r;

        assert(path);
        assert(ret);

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "r");
        if (!f) {
                r = negative_errno();
                close(fd);
                return r;
        }
        r = read_full_stream(f, max, ret, &size);
        if (r >= 0 && ret_size)
                *ret_size = size;
        return r;
}

int read_full_stream(FILE *f, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        assert(ret_size);

        for (;;) {
                size_t want, n;

                if (size > max)
                        return -EFBIG;
                if (allocated - size < READ_CHUNK + 1) {
                        char *t;

                        allocated = size + READ_CHUNK + 1 + size / 2;
                        t = realloc(buf, allocated);
                        if (!t)
                                return -ENOMEM;
                        buf = t;
                }

                /* Never read more than one byte past the cap: that byte is how we know. */
                want = READ_CHUNK;
                if (want > max + 1 - size)
                        want = max + 1 - size;
                n = fread(buf + size, 1, want, f);
                size += n;
                if (n < want) {
                        if (ferror(f))
                                return negative_errno();
                        break;
                }
        }

        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
