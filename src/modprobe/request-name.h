/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel formats request_module() names into MODULE_NAME_LEN (56) bytes; this cap leaves room for
 * a kernel that ever allows more, and refuses what can only be garbage. */
#define REQUEST_NAME_MAX 255U

/* Whether name can be a kernel module request (fs-erofs, net-pf-38, crypto-hmac(sha256),
 * char-major-10-229, ...). The name is sent as a modalias, so first it must pass the daemon's
 * modalias_check(), whose words are returned for what it refuses; then, as the kernel's names go,
 * at most REQUEST_NAME_MAX bytes and no '/'. Returns NULL when it can, else the reason. */
const char *request_name_check(const char *name);
