/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The boot list, as modules-load.d(5) and systemd-modules-load.service(8) define it: *.conf files in
 * the directories below, a file in an earlier directory hiding the one of the same name in a later
 * one and a symlink to /dev/null masking it; one module per line, '#' and ';' start comments; and
 * modules_load= (and, in the initrd, rd.modules_load=) on the kernel command line. Self-contained on
 * purpose; it may move onto a shared conf-files helper later. */

#define MODULES_LOAD_DIRS                                                               \
        ((const char *const[]) { "/etc/modules-load.d", "/run/modules-load.d",          \
                                 "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d", NULL })

/* Caps: more than this is a broken configuration, not a boot list. */
#define MODULES_LOAD_FILES_MAX 1024U
#define MODULES_LOAD_FILE_SIZE_MAX (1024U * 1024U)
#define MODULES_LOAD_ENTRIES_MAX 16384U

typedef struct StrList {
        char **items;
        size_t n;
} StrList;

int str_list_add(StrList *l, const char *s, size_t len);
void str_list_done(StrList *l);

/* Appends the module names listed in the text of one modules-load.d file. */
int modules_load_parse_text(const char *text, StrList *names);

/* Appends the modules named by modules_load= options of a kernel command line, and by
 * rd.modules_load= ones when in_initrd. '-' and '_' are alike in the option name, values may be
 * quoted, and the option may be given more than once. */
int modules_load_parse_cmdline(const char *cmdline, bool in_initrd, StrList *names);

/* The *.conf files to read, as paths below root (NULL or "/" for the running system), sorted by file
 * name, each name taken from the first of dirs that has it, masked names left out. */
int modules_load_conf_files(const char *root, const char *const *dirs, StrList *ret_paths);

/* Whether path (below root) is masked: a symlink to /dev/null, or /dev/null itself. */
bool modules_load_path_is_masked(const char *path);
