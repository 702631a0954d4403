/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Configuration files with systemd's precedence. dirs is a NULL-terminated list of absolute
 * directories, highest priority first, for example /etc/X, /run/X, /usr/local/lib/X, /usr/lib/X.
 * When root is neither NULL nor "/", every directory is looked up below it and the returned paths
 * start with it, so that tests (and a config check of an image) can point at another tree.
 *
 * A symlink whose target is exactly "/dev/null", or an entry that is the null device itself (a
 * device node, or a symlink that resolves to it), masks its name: it is never listed, and it hides
 * the same name in lower-priority directories. Directories that do not exist are skipped; so are
 * hidden names (starting with '.') and entries that are not regular files (directories, dangling
 * symlinks). The functions return a negative errno on failure (opendir/readdir/stat failures other
 * than a missing directory, -ENOMEM), and write *ret only on success. */

typedef enum ConfFilesFlags {
        /* The returned paths leave out root: they name the files as the system that root holds sees
         * them, for messages and records; the caller prefixes root to open them. */
        CONF_FILES_NO_ROOT_PREFIX = 1 << 0,
} ConfFilesFlags;

/* The files called "*SUFFIX" in all dirs, merged by file name (the highest-priority directory wins),
 * in lexical order of file name: the order in which to apply them. Used for drop-in directories,
 * and for lists without a main file such as modules-load.d (suffix ".conf"). More than max names
 * (masks included, SIZE_MAX for no cap) is -E2BIG. Returns 0. */
int conf_files_list(const char *const *dirs, const char *root, const char *suffix, ConfFilesFlags flags,
                    size_t max, char ***ret);

/* The first of dirs that has NAME: returns 1 and its path, or 0 and NULL when it is a mask there;
 * -ENOENT when no directory has it as a file or a mask. */
int conf_files_find(const char *const *dirs, const char *root, const char *name, ConfFilesFlags flags,
                    char **ret);

/* A main file plus its drop-ins: the first NAME found in dirs (a mask there means no main file),
 * then the files ending in ".conf" in NAME.d/ of all dirs, merged as above. Returns 0. */
int conf_files_list_main(const char *const *dirs, const char *root, const char *name, char ***ret);
