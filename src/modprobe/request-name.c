/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "request-name.h"

bool request_name_is_valid(const char *name) {
        size_t n;

        if (!name || name[0] == '\0' || name[0] == '-')
                return false;

        n = strnlen(name, REQUEST_NAME_MAX + 1);
        if (n > REQUEST_NAME_MAX)
                return false;

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) name[i];

                /* Space and every control character, DEL included; '/' would make it a path. */
                if (c <= ' ' || c == 0x7f || c == '/')
                        return false;
        }
        return true;
}
