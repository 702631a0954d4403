/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "strv.h"
#include "tests.h"

TEST(basics) {
        _cleanup_strv_free_ char **l = NULL;

        check(strv_length(l) == 0);
        check(!strv_contains(l, "a"));
        check(strv_extend(&l, "a") == 0);
        check(strv_consume(&l, strdup("b")) == 0);
        check(strv_length(l) == 2);
        check_streq(l[0], "a");
        check_streq(l[1], "b");
        check(!l[2]);
        check(strv_contains(l, "b"));
        check(!strv_contains(l, "c"));
        l = strv_free(l);
        check(!l);
}

TEST(copy_n) {
        char *src[] = { (char *) "a", (char *) "b", (char *) "c", NULL };
        _cleanup_strv_free_ char **c = NULL, **none = NULL;

        c = strv_copy_n(src, 2);
        check(c && strv_length(c) == 2);
        check_streq(c[1], "b");
        none = strv_copy_n(NULL, 0);
        check(none && strv_length(none) == 0);
}

int main(void) {
        RUN(basics);
        RUN(copy_n);
        return tests_done();
}
