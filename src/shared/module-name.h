/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The kernel keeps module names in a 56-byte field (MODULE_NAME_LEN), NUL included. */
#define MODULE_NAME_MAX 55

/* A name as a client may send it: letters, digits, '_' and '-', not starting with '-', 1 to
 * MODULE_NAME_MAX characters. Anything else (paths, spaces, options, globs) is refused before any
 * lookup is made. */
bool module_name_is_valid(const char *name);

/* The kernel treats '-' and '_' alike in module names; the canonical form uses '_'. */
void module_name_normalize(char *name);
bool module_name_equal(const char *a, const char *b);

/* The kernel's build names a module after its object file: the file name of path without its
 * .ko, .ko.xz, .ko.zst or .ko.gz, normalized. NULL when out of memory. */
char *module_name_from_path(const char *path);
