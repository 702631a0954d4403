/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a module's options come from, for its record: libkmod gives the options merged, not where
 * each was written. This reads the same places libkmod reads, in its order: the "options NAME ..."
 * lines of modprobe.d (its directories, a file in a higher one hiding the same name in a lower one)
 * and NAME.KEY=VALUE words of the kernel command line. */

/* "FILE:LINE, FILE:LINE, the kernel command line", as many as there are, in libkmod's order; *ret is
 * NULL when nothing sets options for name (canonical). root is NULL or "/" for the system, or a tree
 * to look in instead; cmdline is the kernel command line (NULL: none). Returns 0 or -ENOMEM. */
int modprobe_options_sources(const char *root, const char *cmdline, const char *name, char **ret);

/* The directories modprobe.d files are read from, highest priority first (NULL-terminated): /etc and
 * /usr only. libkmod is given this list (kmod_new()) instead of its defaults. */
extern const char *const modprobe_d_dirs[];

/* libkmod's default directories that are not read: /run/modprobe.d (NULL-terminated). */
extern const char *const modprobe_d_ignored_dirs[];

/* The *.conf files in modprobe_d_ignored_dirs below root, for the record that says they are not
 * read. Returns 0, or a negative errno. */
int modprobe_d_ignored_files(const char *root, char ***ret);
