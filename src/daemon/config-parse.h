/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the reader of the syntax (config-parse.c), the settings (config.c) and the policy's settings
 * (config-policy.c) share. Not for other users: they call config_parse_file() and config_load(). */

#include <stdbool.h>

#include "config.h"
#include "macro.h"
#include "policy.h"

#define WHITESPACE " \t"

typedef struct ParseState {
        Config *config;
        const char *filename;
        const char *next, *end;         /* the rest of the file, for the reader */
        unsigned line;                  /* the reader's last line; 0 for errors about the whole file */
        const char *section;            /* the current section, from the table; NULL before one */
        unsigned section_line;          /* of its header */
        bool named;                     /* its required key (Path=, Name=, Module=) was given */
        RootConfig *root;               /* in [Trust] or a [Root]: the settings assigned to */
        PolicyLayer *layer;             /* in [Policy], or in a [Source] after Name=: the rules added to */
        ParameterRule *parameters;      /* in a [Parameters] after Module= */
        int error;                      /* the first error, and the line where it was found */
        unsigned error_line;
        char **reterr_message;
} ParseState;

/* Sets the message, "FILE:LINE: " followed by the format, and returns r. */
_printf_(4, 5) int config_error_at(ParseState *s, unsigned line, int r, const char *format, ...);
#define parse_error(s, r, ...) config_error_at(s, (s)->line, r, __VA_ARGS__)

/* Takes the next whitespace-separated word from *p into *ret, or returns 0 with *ret NULL at the
 * end. Returns 0 or -ENOMEM. */
int config_next_word(const char **p, char **ret);

typedef int (*WordCheck)(ParseState *s, const char *key, char *word);

/* Adds each word of value to *list once, after check() accepted (and maybe rewrote) it; at most
 * CONFIG_LIST_MAX entries. An empty value empties the list. */
int config_parse_list(ParseState *s, const char *key, const char *value, char ***list, WordCheck check);

/* config.c: at a section header, after the previous section is finished (its required key given);
 * and at each Key=Value. */
int config_finish_section(ParseState *s);
int config_start_section(ParseState *s, const char *name);
int config_parse_assignment(ParseState *s, const char *key, const char *value);

/* The settings of config-policy.c, for config.c's table. */
int config_parse_mode(ParseState *s, const char *key, const char *value);
int config_parse_default(ParseState *s, const char *key, const char *value);
int config_parse_allow(ParseState *s, const char *key, const char *value);
int config_parse_deny(ParseState *s, const char *key, const char *value);
int config_parse_deny_request(ParseState *s, const char *key, const char *value);
int config_parse_request_parameters(ParseState *s, const char *key, const char *value);
int config_parse_source_name(ParseState *s, const char *key, const char *value);
int config_parse_parameters_module(ParseState *s, const char *key, const char *value);
int config_parse_parameters_allow(ParseState *s, const char *key, const char *value);

/* At a [Parameters] header: refuses one more than CONFIG_PARAMETERS_MAX. */
int config_start_parameters(ParseState *s);
