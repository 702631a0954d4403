/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "module-name.h"

static bool char_is_valid(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-';
}

bool module_name_is_valid(const char *name) {
        size_t n;

        if (!name || name[0] == '\0' || name[0] == '-')
                return false;

        n = strnlen(name, MODULE_NAME_MAX + 1);
        if (n > MODULE_NAME_MAX)
                return false;

        for (size_t i = 0; i < n; i++)
                if (!char_is_valid(name[i]))
                        return false;

        return true;
}

void module_name_normalize(char *name) {
        for (char *p = name; *p; p++)
                if (*p == '-')
                        *p = '_';
}

bool module_name_equal(const char *a, const char *b) {
        for (;; a++, b++) {
                char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;

                if (x != y)
                        return false;
                if (x == '\0')
                        return true;
        }
}
