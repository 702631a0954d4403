/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* [Policy], [Source] and [Parameters] of modgate.conf: the module policy's rules (policy.h), each
 * with the file and line where it was written, so that a denial can name them. */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "request.h"

#define MODULE_GLOB_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-*?[]!"

/* A layer has Allow=, Deny= and DenyRequest=, each capped at CONFIG_LIST_MAX: policy_layer_add()
 * cannot run out of room. */
_Static_assert(3 * CONFIG_LIST_MAX <= POLICY_RULES_MAX, "a layer holds every list");

int config_normalize_module_glob(char *s) {
        bool bracket = false;

        if (s[0] == '\0' || s[strspn(s, MODULE_GLOB_CHARS)] != '\0')
                return -EINVAL;
        for (char *p = s; *p; p++) {
                if (*p == '[')
                        bracket = true;
                else if (*p == ']')
                        bracket = false;
                else if (*p == '-' && !bracket)
                        *p = '_';
        }
        return 0;
}

/* Printable ASCII without whitespace, as request keys and module parameters are (request.c), and
 * none of the bytes in refused. */
static bool is_printable_word(const char *s, const char *refused) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= ' ' || *p >= 0x7f || strchr(refused, *p))
                        return false;
        return true;
}

static int check_module_glob(ParseState *s, const char *key, char *word) {
        if (config_normalize_module_glob(word) < 0)
                return parse_error(s, -EINVAL,
                                   "%s=%s is not a module name glob (letters, digits, '_', '-' and "
                                   "* ? [ ] !)",
                                   key, word);
        return 0;
}

/* A request key is kept as asked: no '-' for '_', since net-pf-38 is no module name. Nothing that
 * reads as a path or as quoting. */
static int check_request_glob(ParseState *s, const char *key, char *word) {
        if (!is_printable_word(word, "/\\\"'"))
                return parse_error(s, -EINVAL,
                                   "%s=%s is not a request key glob (printable ASCII without '/', "
                                   "'\\' or quotes)",
                                   key, word);
        return 0;
}

/* Where a setting was written. r is replaced only on success. */
static int rule_set(ParseState *s, PolicyRule *r, RuleKind kind, const char *pattern, unsigned line,
                    const char *key, const char *value) {
        _cleanup_free_ char *option = NULL;

        if (asprintf(&option, "%s=%s", key, value) < 0) {
                option = NULL;
                return parse_error(s, -ENOMEM, "out of memory");
        }
        if (policy_rule_set(r, kind, pattern, s->parser.filename, line, option) < 0)
                return parse_error(s, -ENOMEM, "out of memory");
        return 0;
}

int config_parse_mode(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        Policy *p = &s->config->policy;
        PolicyMode m = value[0] == '\0' ? POLICY_ENFORCE : policy_mode_from_string(value);

        assert(parser);

        if (m < 0)
                return parse_error(s, -EINVAL, "%s=%s: the modes are enforce and permissive", key, value);
        p->mode = m;
        if (value[0] == '\0') {
                policy_rule_done(&p->mode_rule);
                return 0;
        }
        return rule_set(s, &p->mode_rule, RULE_DEFAULT, NULL, s->parser.line, key, value);
}

int config_parse_default(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        PolicyLayer *l = s->layer;

        assert(parser);

        if (value[0] == '\0' || strcmp(value, "allow") == 0) {
                l->default_deny = false;
                policy_rule_done(&l->default_rule);
                return 0;
        }
        if (strcmp(value, "deny") != 0)
                return parse_error(s, -EINVAL, "%s=%s is neither allow nor deny", key, value);
        l->default_deny = true;
        return rule_set(s, &l->default_rule, RULE_DEFAULT, NULL, s->parser.line, key, value);
}

int config_parse_request_parameters(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        Policy *p = &s->config->policy;

        assert(parser);

        if (value[0] == '\0') {
                p->request_parameters_any = true;
                policy_rule_done(&p->request_parameters_rule);
                return 0;
        }
        if (strcmp(value, "any") != 0 && strcmp(value, "none") != 0)
                return parse_error(s, -EINVAL, "%s=%s is neither any nor none", key, value);
        p->request_parameters_any = strcmp(value, "any") == 0;
        return rule_set(s, &p->request_parameters_rule, RULE_PARAMETERS, NULL, s->parser.line, key, value);
}

static size_t layer_count(const PolicyLayer *l, RuleKind kind, const char *pattern) {
        size_t n = 0;

        for (size_t i = 0; i < l->n_rules; i++)
                if (l->rules[i].kind == kind && (!pattern || streq_ptr(l->rules[i].pattern, pattern)))
                        n++;
        return n;
}

/* One rule per word, once per pattern; the option names the word as it was written. */
static int add_rule(ParseState *s, const char *key, RuleKind kind, const char *word, const char *pattern) {
        _cleanup_free_ char *option = NULL;
        PolicyLayer *l = s->layer;

        if (layer_count(l, kind, pattern) > 0)
                return 0;
        if (layer_count(l, kind, NULL) >= CONFIG_LIST_MAX)
                return parse_error(s, -EINVAL, "%s= has more than %d entries", key, CONFIG_LIST_MAX);
        if (asprintf(&option, "%s=%s", key, word) < 0) {
                option = NULL;
                return parse_error(s, -ENOMEM, "out of memory");
        }
        if (policy_layer_add(l, kind, pattern, s->parser.filename, s->parser.line, option) < 0)
                return parse_error(s, -ENOMEM, "out of memory");
        return 0;
}

static int parse_rules(ParseState *s, const char *key, const char *value, RuleKind kind, WordCheck check) {
        if (value[0] == '\0') {
                /* systemd's list reset: the layer's rules of this kind written so far go. */
                policy_layer_clear_kind(s->layer, kind);
                return 0;
        }

        for (const char *p = value;;) {
                _cleanup_free_ char *word = NULL, *pattern = NULL;
                int r;

                if (conf_next_word(&p, &word) < 0 || (word && !(pattern = strdup(word))))
                        return parse_error(s, -ENOMEM, "out of memory");
                if (!word)
                        return 0;
                r = check(s, key, pattern);
                if (r >= 0)
                        r = add_rule(s, key, kind, word, pattern);
                if (r < 0)
                        return r;
        }
}

int config_parse_allow(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_rules(s, key, value, RULE_ALLOW, check_module_glob);
}

int config_parse_deny(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_rules(s, key, value, RULE_DENY, check_module_glob);
}

int config_parse_deny_request(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_rules(s, key, value, RULE_DENY_REQUEST, check_request_glob);
}

/* Several [Source] sections of one name add to the same layer, as drop-ins do. */
int config_parse_source_name(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        RequestSource source = request_source_from_string(value);

        if (source < 0)
                return parse_error(s, -EINVAL, "%s=%s: the sources are kernel, udev, boot and admin", key,
                                   value);
        s->layer = &s->config->policy.sources[source];
        return 0;
}

int config_start_parameters(ParseState *s) {
        assert(s);

        if (s->config->policy.n_parameters >= CONFIG_PARAMETERS_MAX)
                return parse_error(s, -EINVAL, "more than %d [Parameters] sections", CONFIG_PARAMETERS_MAX);
        return 0;
}

/* Each [Parameters] section is a rule of its own, named by its header's line. */
int config_parse_parameters_module(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        _cleanup_free_ char *glob = strdup(value);
        Policy *p = &s->config->policy;
        ParameterRule t = {}, *a;
        int r;

        assert(parser);

        if (!glob)
                return parse_error(s, -ENOMEM, "out of memory");
        if (glob[strcspn(glob, CONF_WHITESPACE)] != '\0')
                return parse_error(s, -EINVAL, "%s=%s: a [Parameters] section is about one module name glob",
                                   key, value);
        r = check_module_glob(s, key, glob);
        if (r >= 0)
                r = rule_set(s, &t.rule, RULE_PARAMETERS, glob, s->parser.section_line, key, value);
        if (r < 0)
                return r;

        a = reallocarray(p->parameters, p->n_parameters + 1, sizeof(ParameterRule));
        if (!a) {
                policy_rule_done(&t.rule);
                return parse_error(s, -ENOMEM, "out of memory");
        }
        p->parameters = a;
        t.module = TAKE_PTR(glob);
        s->parameters = &a[p->n_parameters++];
        *s->parameters = t;
        return 0;
}

/* "KEY=VALUE", KEY a glob over parameter names (canonical, as module names are), VALUE a glob over
 * printable ASCII; or "*", any parameter. */
static int check_parameter(ParseState *s, const char *key, char *word) {
        char *eq = strchr(word, '=');
        bool ok;

        if (strcmp(word, "*") == 0)
                return 0;
        if (!eq)
                return parse_error(s, -EINVAL, "%s=%s is neither KEY=VALUE nor *", key, word);
        *eq = '\0';
        ok = config_normalize_module_glob(word) >= 0;
        *eq = '=';
        if (!ok)
                return parse_error(s, -EINVAL,
                                   "%s=%s: a parameter name is letters, digits, '_' and '-', or a glob "
                                   "of them",
                                   key, word);
        if (!is_printable_word(eq + 1, ""))
                return parse_error(s, -EINVAL, "%s=%s: a parameter value is printable ASCII", key, word);
        return 0;
}

int config_parse_parameters_allow(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return config_parse_list(s, key, value, &s->parameters->allow, check_parameter);
}
