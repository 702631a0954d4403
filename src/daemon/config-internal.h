/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the settings (config.c) and the policy's settings (config-policy.c) share: the state of one
 * file's reading by the shared reader (conf-parser.h). Not for other users: they call
 * config_parse_file() and config_load(). */

#include <stddef.h>

#include "conf-parser.h"
#include "config.h"
#include "policy.h"

typedef struct ParseState {
        ConfParser parser;              /* the reader's, with the file, the line and the section */
        Config *config;
        RootConfig *root;               /* in [Trust] or a [Root]: the settings assigned to */
        PolicyLayer *layer;             /* in [Policy], or in a [Source] after Name=: the rules added to */
        ParameterRule *parameters;      /* in a [Parameters] after Module= */
} ParseState;

/* The state around the reader that a setting's parser is given. */
static inline ParseState *parse_state(ConfParser *p) {
        return (ParseState *) ((char *) p - offsetof(ParseState, parser));
}

#define parse_error(s, r, ...) conf_error(&(s)->parser, r, __VA_ARGS__)

typedef int (*WordCheck)(ParseState *s, const char *key, char *word);

/* Adds each word of value to *list once, after check() accepted (and maybe rewrote) it; at most
 * CONFIG_LIST_MAX entries. An empty value empties the list. */
int config_parse_list(ParseState *s, const char *key, const char *value, char ***list, WordCheck check);

/* The settings of config-policy.c, for config.c's table. */
int config_parse_mode(ConfParser *parser, const char *key, const char *value);
int config_parse_default(ConfParser *parser, const char *key, const char *value);
int config_parse_allow(ConfParser *parser, const char *key, const char *value);
int config_parse_deny(ConfParser *parser, const char *key, const char *value);
int config_parse_deny_request(ConfParser *parser, const char *key, const char *value);
int config_parse_request_parameters(ConfParser *parser, const char *key, const char *value);
int config_parse_source_name(ConfParser *parser, const char *key, const char *value);
int config_parse_parameters_module(ConfParser *parser, const char *key, const char *value);
int config_parse_parameters_allow(ConfParser *parser, const char *key, const char *value);

/* At a [Parameters] header: refuses one more than CONFIG_PARAMETERS_MAX. */
int config_start_parameters(ParseState *s);
