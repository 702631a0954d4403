/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <string.h>

#include "chatter.h"
#include "tests.h"

TEST(first_then_counted) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        ChatterSummary s;

        check(chatter_new(&c) == 0);
        check(!chatter_pending(c));
        check(chatter_note(c, CHATTER_NOT_FOUND, "net-pf-99") == 1);
        check(!chatter_pending(c));
        for (unsigned i = 0; i < 5; i++)
                check(chatter_note(c, CHATTER_NOT_FOUND, "net-pf-99") == 0);
        /* Kinds are apart: the same key as an already-loaded module is its own first. */
        check(chatter_note(c, CHATTER_PRESENT, "net-pf-99") == 1);
        check(chatter_pending(c));
        check(!chatter_take(c, CHATTER_PRESENT, &s));
        check(chatter_take(c, CHATTER_NOT_FOUND, &s));
        check(s.total == 5 && s.n_keys == 1 && s.n_top == 1);
        check_streq(s.top[0].key, "net-pf-99");
        check(s.top[0].n == 5);
        /* A new window: counts gone, the key still known, so never journaled again. */
        check(!chatter_pending(c));
        check(!chatter_take(c, CHATTER_NOT_FOUND, &s) && s.total == 0);
        check(chatter_note(c, CHATTER_NOT_FOUND, "net-pf-99") == 0);
}

/* A flood of distinct keys: a few are journaled each window, the rest counted. */
TEST(window_cap) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        unsigned journaled = 0;
        ChatterSummary s;
        char key[32];

        check(chatter_new(&c) == 0);
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(key, sizeof(key), "fs-nosuch%u", i);
                journaled += chatter_note(c, CHATTER_NOT_FOUND, key) == 1;
        }
        check(journaled == CHATTER_FIRST_PER_WINDOW);
        check(chatter_take(c, CHATTER_NOT_FOUND, &s));
        check(s.total == 1000 - CHATTER_FIRST_PER_WINDOW && s.n_keys == 1000 - CHATTER_FIRST_PER_WINDOW);
        check(s.n_top == CHATTER_TOP);
        /* The next window has room for new keys again. */
        check(chatter_note(c, CHATTER_NOT_FOUND, "fs-new") == 1);
}

TEST(top_order) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        static const char *const keys[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j" };
        ChatterSummary s;

        check(chatter_new(&c) == 0);
        for (unsigned k = 0; k < 10; k++) {
                check(chatter_note(c, CHATTER_PRESENT, keys[k]) == 1);
                for (unsigned i = 0; i < (k * 7) % 10 + 1; i++)
                        check(chatter_note(c, CHATTER_PRESENT, keys[k]) == 0);
        }
        check(chatter_take(c, CHATTER_PRESENT, &s));
        check(s.n_keys == 10 && s.n_top == CHATTER_TOP);
        for (size_t i = 1; i < s.n_top; i++)
                check(s.top[i - 1].n >= s.top[i].n);
        check(s.top[0].n == 10);        /* k = 7: 49 % 10 + 1 */
        check_streq(s.top[0].key, "h");
}

/* Past CHATTER_KEYS_MAX keys nothing more is remembered: counted as one "other". */
TEST(keys_cap) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        ChatterSummary s;
        unsigned long total = 0;
        char key[32];

        check(chatter_new(&c) == 0);
        for (unsigned i = 0; i < CHATTER_KEYS_MAX + 500; i++) {
                snprintf(key, sizeof(key), "k%u", i);
                total += chatter_note(c, CHATTER_NOT_FOUND, key) == 0;
        }
        check(chatter_take(c, CHATTER_NOT_FOUND, &s));
        check(s.total == total);
        check(s.n_keys <= CHATTER_KEYS_MAX);
        check_streq(s.top[0].key, "(other keys)");
        check(s.top[0].n == 501);       /* the map is full once the "other" entry takes the last slot */
}

int main(void) {
        RUN(first_then_counted);
        RUN(window_cap);
        RUN(top_order);
        RUN(keys_cap);
        return tests_done();
}
