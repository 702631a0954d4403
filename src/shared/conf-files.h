/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Configuration files with systemd's precedence. dirs is a NULL-terminated list of absolute
 * directories, highest priority first, for example /etc/X, /run/X, /usr/local/lib/X, /usr/lib/X.
 * When root is neither NULL nor "/", every directory is looked up below it and the returned paths
 * start with it, so that tests (and a config check of an image) can point at another tree.
 *
 * A symlink whose target is exactly "/dev/null" masks its name: it is never listed, and it hides
 * the same name in lower-priority directories. Directories that do not exist are skipped; so are
 * hidden names (starting with '.') and entries that are not regular files (directories, dangling
 * symlinks). Both functions return 0 or a negative errno (opendir/readdir/stat failures other than
 * a missing directory, -ENOMEM), and write *ret only on success. */

/* The files called "*SUFFIX" in all dirs, merged by file name (the highest-priority directory wins),
 * in lexical order of file name: the order in which to apply them. Used for drop-in directories,
 * and for lists without a main file such as modules-load.d (suffix ".conf"). */
int conf_files_list(const char *const *dirs, const char *root, const char *suffix, char ***ret);

/* A main file plus its drop-ins: the first NAME found in dirs (a mask there means no main file),
 * then the files ending in ".conf" in NAME.d/ of all dirs, merged as above. */
int conf_files_list_main(const char *const *dirs, const char *root, const char *name, char ***ret);
