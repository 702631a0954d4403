/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>
#include <string.h>

#include "macro.h"
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

char *module_name_from_path(const char *path) {
        static const char *const suffixes[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz" };
        const char *base = strrchr(path, '/');
        size_t n;
        char *name;

        name = strdup(base ? base + 1 : path);
        if (!name)
                return NULL;
        n = strlen(name);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t k = strlen(suffixes[i]);

                if (n > k && strcmp(name + n - k, suffixes[i]) == 0) {
                        name[n - k] = '\0';
                        break;
                }
        }
        module_name_normalize(name);
        return name;
}
