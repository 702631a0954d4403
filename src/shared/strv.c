/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        for (char **p = l; p && *p; p++)
                free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        for (char *const *p = l; p && *p; p++)
                if (strcmp(*p, s) == 0)
                        return true;
        return false;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **t;

        t = reallocarray(*l, n + 2, sizeof(char *));
        if (!t) {
                free(s);
                return -ENOMEM;
        }
        t[n] = s;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        char *c = strdup(s);

        if (!c)
                return -ENOMEM;
        return strv_consume(l, c);
}

char **strv_copy_n(char *const *l, size_t n) {
        char **c = calloc(n + 1, sizeof(char *));

        for (size_t i = 0; c && i < n; i++)
                if (!(c[i] = strdup(l[i])))
                        return strv_free(c);
        return c;
}
