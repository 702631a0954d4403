/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

void strv_free(char **l) {
        for (char **p = l; p && *p; p++)
                free(*p);
        free(l);
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

char **strv_copy_n(char *const *l, size_t n) {
        char **c = calloc(n + 1, sizeof(char *));

        for (size_t i = 0; c && i < n; i++)
                if (!(c[i] = strdup(l[i]))) {
                        strv_free(c);
                        return NULL;
                }
        return c;
}

int strv_extend(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char **a, *c;

        c = strdup(s);
        if (!c)
                return -ENOMEM;
        a = reallocarray(*l, n + 2, sizeof(char *));
        if (!a) {
                free(c);
                return -ENOMEM;
        }
        a[n] = c;
        a[n + 1] = NULL;
        *l = a;
        return 0;
}
