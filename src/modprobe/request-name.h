/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The kernel formats request_module() names into MODULE_NAME_LEN (56) bytes; this cap leaves room for
 * a kernel that ever allows more, and refuses what can only be garbage. */
#define REQUEST_NAME_MAX 255U

/* Whether name can be a kernel module request (fs-erofs, net-pf-38, crypto-hmac(sha256),
 * char-major-10-229, ...): not empty, at most REQUEST_NAME_MAX bytes, not starting with '-', no '/',
 * no whitespace and no control characters. Anything else is refused before modgated is asked. */
bool request_name_is_valid(const char *name);
