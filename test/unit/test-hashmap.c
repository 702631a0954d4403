/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "hashmap.h"
#include "tests.h"

static unsigned freed;

static void count_free(void *p) {
        freed++;
        free(p);
}

TEST(basic) {
        Hashmap *h = hashmap_new(count_free);
        char key[32];

        check(h);
        check(hashmap_put(h, "a", strdup("1")) == 0);
        check(hashmap_put(h, "a", NULL) == -EEXIST);
        check_streq(hashmap_get(h, "a"), "1");
        check(!hashmap_get(h, "b"));

        /* Enough entries to make it grow twice. */
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(key, sizeof(key), "key%u", i);
                check(hashmap_put(h, key, strdup(key)) == 0);
        }
        check(hashmap_size(h) == 1001);
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(key, sizeof(key), "key%u", i);
                check_streq(hashmap_get(h, key), key);
        }

        free(hashmap_remove(h, "key7"));
        check(!hashmap_get(h, "key7"));
        check(hashmap_size(h) == 1000);
        check(!hashmap_remove(h, "key7"));

        freed = 0;
        hashmap_clear(h);
        check(freed == 1000 && hashmap_size(h) == 0);
        hashmap_free(h);
}

TEST(iterate) {
        Hashmap *h = hashmap_new(NULL);
        const char *k;
        size_t state = 0, n = 0;

        check(hashmap_put(h, "x", (void *) 1) == 0);
        check(hashmap_put(h, "y", (void *) 2) == 0);
        while (hashmap_iterate(h, &state, &k, NULL))
                n++;
        check(n == 2);
        hashmap_free(h);
}

int main(void) {
        RUN(basic);
        RUN(iterate);
        return tests_done();
}
