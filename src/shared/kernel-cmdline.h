/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The kernel command line, and the ways to split it: each option is split as the program that acts
 * on it splits it, so that modgate reads the same option there as that program does. Pure but for
 * kernel_cmdline_read(); libc only (modgate-modules-load uses it too).
 *
 *   the kernel's rules   module_blacklist= and modprobe.blacklist=, and every module parameter
 *                        string (what init_module() is given)
 *   libkmod's rules      MODULE.PARAM=VALUE options (the options libkmod passes to a module)
 *   systemd's rules      roothash=, usrhash= (systemd-veritysetup-generator), modules_load=
 *                        (systemd-modules-load), and modgate.mode=, our own, read as systemd reads
 *                        its options */

/* Far beyond what any architecture's COMMAND_LINE_SIZE lets a boot loader pass (2 KiB on x86). */
#define KERNEL_CMDLINE_MAX (64U * 1024U)

/* The blanks between words, as the kernel's isspace() has them. */
#define KERNEL_BLANKS " \t\n\v\f\r"

/* The blanks between words, as systemd's proc_cmdline_parse() has them. */
#define SYSTEMD_CMDLINE_BLANKS " \t\n\r"

/* Reads the command line (path: NULL for /proc/cmdline), without its newline. Returns 0, -EFBIG
 * when it is longer than KERNEL_CMDLINE_MAX, -ENOMEM, or the error reading it. */
int kernel_cmdline_read(const char *path, char **ret);

/* The kernel's next_arg(): the next "key[=value]" word at *p, after the blanks before it (*p moves
 * past them), where a double quote keeps blanks in the word until the next one. Returns its length,
 * 0 at the end. */
size_t kernel_next_arg(const char **p);

/* A word as the kernel then reads it: a leading double quote quotes the whole word and goes, with
 * its closing one; a value in double quotes loses them; '-' and '_' are alike in the key (parameq()),
 * and become '_'. In place. */
void kernel_arg_normalize(char *word);

/* libkmod's kmod_config_parse_kcmdline(): whether the command line gives module name options, with
 * words MODULE.PARAM[=VALUE], where a double quote may open a word, and double quotes in a value keep
 * blanks in it; a word with a quote elsewhere, a second '.' before its value, or '=' before its '.'
 * is no option, and a quote left open hides the rest. modprobe.blacklist= gives no options; a NULL
 * command line, none. */
bool kmod_cmdline_sets_options(const char *cmdline, const char *name);

/* systemd's proc_cmdline_parse() (extract_first_word() with EXTRACT_UNQUOTE, EXTRACT_RELAX and
 * EXTRACT_RETAIN_ESCAPE): the next word at p, copied to buf (which has room for strlen(p) + 1 bytes)
 * without its quotes. Words are separated by SYSTEMD_CMDLINE_BLANKS; single or double quotes anywhere
 * keep blanks in a word until the same quote closes them, or until the end; a backslash keeps itself
 * and makes the byte after it plain (one at the very end is dropped). Returns the position after the
 * word, or NULL at the end. */
const char *systemd_cmdline_next_word(const char *p, char *buf);

/* The value of word when it is "key=value", with '-' and '_' alike in the key as systemd compares
 * them (proc_cmdline_key_streq()); else NULL. */
const char *systemd_cmdline_value(const char *word, const char *key);

/* The values of the words "KEY=value" for any KEY of keys, in the command line's order, words read as
 * systemd_cmdline_next_word() reads them. *ret is NULL when there are none. */
int systemd_cmdline_values(const char *cmdline, const char *const *keys, char ***ret);
