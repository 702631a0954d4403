/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The history's memfd across restarts: what one instance wrote, the next reads whole, and reading it
 * adds nothing to it; a line cut short is closed once and counted as one. */

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "record-history.h"
#include "tests.h"

static off_t size_of(int fd) {
        struct stat st;

        check(fstat(fd, &st) == 0);
        return st.st_size;
}

static unsigned reopen(int fd) {
        History *h = NULL;
        unsigned skipped = 99;

        check(history_open_fd(dup(fd), &h, &skipped) == 0);
        history_free(h);
        return skipped;
}

TEST(restarts) {
        static const char text[] = "{\"module\":\"dummy\",\"outcome\":\"loaded\"}\n"
                                   "{\"module\":\"tun\",\"outcome\":\"loaded\"}\n";
        int fd = history_memfd_new();

        check(fd >= 0);
        check(pwrite(fd, text, strlen(text), 0) == (ssize_t) strlen(text));
        /* Read by three instances in turn: nothing skipped, nothing written. */
        for (int i = 0; i < 3; i++) {
                check(reopen(fd) == 0);
                check(size_of(fd) == (off_t) strlen(text));
        }
        close(fd);
}

TEST(cut_short) {
        static const char text[] = "{\"module\":\"dummy\",\"outcome\":\"loaded\"}\n{\"module\":\"tu";
        char last;
        int fd = history_memfd_new();

        check(fd >= 0);
        check(pwrite(fd, text, strlen(text), 0) == (ssize_t) strlen(text));
        check(reopen(fd) == 1);
        /* Closed with a newline, once: the next instances count the same one line. */
        check(size_of(fd) == (off_t) strlen(text) + 1);
        check(pread(fd, &last, 1, (off_t) strlen(text)) == 1 && last == '\n');
        check(reopen(fd) == 1);
        check(size_of(fd) == (off_t) strlen(text) + 1);
        close(fd);
}

int main(void) {
        RUN(restarts);
        RUN(cut_short);
        return tests_done();
}
