/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "modinfo.h"

/* Reads ModInfo with libkmod from the already-open fd (through /proc/self/fd, so the same inode,
 * decompressed as libkmod does). alias_key, when not NULL, is the key a request was resolved from
 * (a modalias, an alias): the alias pattern it matched is looked up among the file's. ret_aliases,
 * when not NULL, gets every alias pattern of the file, in its order (NULL when it has none). A
 * private libkmod context with no configuration: safe on any thread. -errno when the file cannot be
 * read as a module; *ret and *ret_aliases are written only on success. */
int modinfo_from_fd(int fd, const char *alias_key, char ***ret_aliases, ModInfo *ret);
