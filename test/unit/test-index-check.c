/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "index-check.h"
#include "tests.h"

/* A trie as depmod writes it (kmod's format): header, then each node before its children. Root at
 * 12: prefix "ab", children 'c'..'d' ('c' at 25, 'd' absent); node 25: values, one: priority 0,
 * "x.ko". */
static const uint8_t trie[] = {
        0xb0, 0x07, 0xf4, 0x57, 0x00, 0x02, 0x00, 0x01, 0xa0, 0x00, 0x00, 0x0c,   /* magic, 2.1, root */
        'a', 'b', 0, 'c', 'd', 0x40, 0x00, 0x00, 0x19, 0x00, 0x00, 0x00, 0x00,     /* root at 12 */
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 'x', '.', 'k', 'o', 0,     /* values at 25 */
};

static int check_copy(const uint8_t *p, size_t n) {
        char detail[128];

        return index_check_buffer(p, n, detail, sizeof(detail));
}

TEST(whole) {
        uint8_t t[sizeof(trie)];

        memcpy(t, trie, sizeof(t));
        check(check_copy(t, sizeof(t)) == 0);
        /* An empty trie, as depmod writes it: a root with nothing in it, at the end of the file. */
        memset(t + 8, 0, 4);
        t[11] = 0x0c;
        check(check_copy(t, 12) == 0);
        /* Or a root offset of 0. */
        t[11] = 0x00;
        check(check_copy(t, 12) == 0);
}

TEST(broken) {
        uint8_t t[sizeof(trie)];

        memcpy(t, trie, sizeof(t));
        check(check_copy(t, 0) == -EBADMSG);                    /* empty file */
        check(check_copy(t, 11) == -EBADMSG);                   /* header cut */
        check(check_copy(t, sizeof(t) - 1) == -EBADMSG);        /* last string cut */
        check(check_copy(t, 24) == -EBADMSG);                   /* child beyond the end */
        t[0] ^= 1;
        check(check_copy(t, sizeof(t)) == -EBADMSG);            /* magic */
        t[0] ^= 1;
        t[4] = 0x03;
        check(check_copy(t, sizeof(t)) == -EBADMSG);            /* version 3 */
        t[4] = 0x00;
        t[20] = 0x0c;
        check(check_copy(t, sizeof(t)) == -EBADMSG);            /* a child that is its parent: a loop */
        t[20] = 0x19;
        t[15] = 'e';
        t[16] = 'c';
        check(check_copy(t, sizeof(t)) == -EBADMSG);            /* a child range backwards */
}

int main(void) {
        RUN(whole);
        RUN(broken);
        return tests_done();
}
