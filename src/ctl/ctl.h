/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-json.h>

#include "ctl-table.h"

/* What the command line set, for every verb (modgatectl.c parses it). */

#define DEFAULT_ADDRESS "/run/modgate/io.modgate"

extern const char *arg_address;
extern const char *arg_parameters;
extern const char *arg_source;
extern bool arg_modalias;
extern bool arg_no_pager;
extern bool arg_legend;
extern char **arg_seal_load;
extern sd_json_format_flags_t arg_json_format_flags;

/* The verbs: each takes its arguments (after the verb) and returns 0 or -errno, with the exit status
 * recorded by ctl_fail() or ctl_log_error(). */
int verb_load(char **args, size_t n);
int verb_unload(char **args, size_t n);
int verb_explain(char **args, size_t n);
int verb_list(char **args, size_t n);
int verb_describe(char **args, size_t n);
int verb_status(char **args, size_t n);
int verb_monitor(char **args, size_t n);
int verb_reload(char **args, size_t n);
int verb_seal(char **args, size_t n);
int verb_plot(char **args, size_t n);

/* The modules of a Load or Seal reply (or of an error that carries them) as rows of a table with
 * these columns. */
#define MODULE_COLUMNS 4
extern const char *const module_headers[MODULE_COLUMNS];
int table_add_modules(Table *t, sd_json_variant *modules);
