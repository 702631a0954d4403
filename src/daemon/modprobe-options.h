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

/* The directories libkmod reads modprobe.d files from, highest priority first. */
extern const char *const modprobe_d_dirs[];
