/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The boot list, as modules-load.d(5) and systemd-modules-load.service(8) define it: *.conf files in
 * the directories below, one module per line, '#' and ';' start comments; and modules_load= (and, in
 * the initrd, rd.modules_load=) on the kernel command line. Which files count (a file in an earlier
 * directory hiding the one of the same name in a later one, a symlink to /dev/null masking it) is
 * conf_files_list()'s business, with MODULES_LOAD_DIRS and MODULES_LOAD_FILES_MAX; this is the text. */

#define MODULES_LOAD_DIRS                                                               \
        ((const char *const[]) { "/etc/modules-load.d", "/run/modules-load.d",          \
                                 "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d", NULL })

/* Caps: more than this is a broken configuration, not a boot list. */
#define MODULES_LOAD_FILES_MAX 1024U
#define MODULES_LOAD_FILE_SIZE_MAX (1024U * 1024U)
#define MODULES_LOAD_ENTRIES_MAX 16384U

/* Appends a copy of the first len bytes of s to the strv names: -E2BIG when it holds
 * MODULES_LOAD_ENTRIES_MAX already, -ENOMEM. */
int modules_load_names_add(char ***names, const char *s, size_t len);

/* Appends the module names listed in the text of one modules-load.d file. */
int modules_load_parse_text(const char *text, char ***names);

/* Appends the modules named by modules_load= options of a kernel command line, and by
 * rd.modules_load= ones when in_initrd, read as systemd-modules-load reads them (systemd's rules,
 * kernel-cmdline.h): '-' and '_' are alike in the option name, values may be quoted, and the option
 * may be given more than once. */
int modules_load_parse_cmdline(const char *cmdline, bool in_initrd, char ***names);
