/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "request-name.h"
#include "request.h"

const char *request_name_check(const char *name) {
        const char *why = modalias_check(name);

        if (why)
                return why;
        /* Narrower than any modalias: the kernel's names are short, and never paths. */
        if (strnlen(name, REQUEST_NAME_MAX + 1) > REQUEST_NAME_MAX)
                return "name is longer than 255 bytes";
        if (strchr(name, '/'))
                return "name contains '/'";
        return NULL;
}
