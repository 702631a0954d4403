/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-cmdline.h"
#include "module-name.h"
#include "policy.h"
#include "strv.h"

static const char *const policy_mode_table[_POLICY_MODE_MAX] = {
        [POLICY_ENFORCE] = "enforce",
        [POLICY_PERMISSIVE] = "permissive",
};

const char *policy_mode_to_string(PolicyMode m) {
        return m >= 0 && m < _POLICY_MODE_MAX ? policy_mode_table[m] : NULL;
}

PolicyMode policy_mode_from_string(const char *s) {
        for (PolicyMode m = 0; m < _POLICY_MODE_MAX; m++)
                if (streq_ptr(policy_mode_table[m], s))
                        return m;
        return _POLICY_MODE_INVALID;
}

static const char *const rule_kind_table[_RULE_KIND_MAX] = {
        [RULE_ALLOW] = "allow",
        [RULE_DENY] = "deny",
        [RULE_DENY_REQUEST] = "deny-request",
        [RULE_DEFAULT] = "default",
        [RULE_PARAMETERS] = "parameters",
};

const char *rule_kind_to_string(RuleKind k) {
        return k >= 0 && k < _RULE_KIND_MAX ? rule_kind_table[k] : NULL;
}

void policy_rule_done(PolicyRule *r) {
        free(r->pattern);
        free(r->file);
        free(r->option);
        *r = (PolicyRule) {};
}

int policy_rule_set(PolicyRule *r, RuleKind kind, const char *pattern, const char *file, unsigned line,
                    const char *option) {
        PolicyRule t = { .kind = kind, .line = line };

        assert(r);

        if (strdup_or_null(pattern, &t.pattern) < 0 || strdup_or_null(file, &t.file) < 0 ||
            strdup_or_null(option, &t.option) < 0) {
                policy_rule_done(&t);
                return -ENOMEM;
        }
        policy_rule_done(r);
        *r = t;
        return 0;
}

static void policy_layer_done(PolicyLayer *l) {
        policy_rule_done(&l->default_rule);
        for (size_t i = 0; i < l->n_rules; i++)
                policy_rule_done(&l->rules[i]);
        free(l->rules);
        *l = (PolicyLayer) {};
}

void policy_init(Policy *p) {
        assert(p);

        *p = (Policy) {
                .mode = POLICY_ENFORCE,
                .request_parameters_any = true,
        };
}

void policy_done(Policy *p) {
        policy_rule_done(&p->mode_rule);
        policy_layer_done(&p->global);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                policy_layer_done(&p->sources[i]);
        policy_rule_done(&p->request_parameters_rule);
        for (size_t i = 0; i < p->n_parameters; i++) {
                free(p->parameters[i].module);
                strv_free(p->parameters[i].allow);
                policy_rule_done(&p->parameters[i].rule);
        }
        free(p->parameters);
        *p = (Policy) {};
}

void policy_layer_clear_kind(PolicyLayer *l, RuleKind kind) {
        size_t k = 0;

        assert(l);

        for (size_t i = 0; i < l->n_rules; i++) {
                if (l->rules[i].kind == kind)
                        policy_rule_done(&l->rules[i]);
                else
                        l->rules[k++] = l->rules[i];
        }
        l->n_rules = k;
}

int policy_layer_add(PolicyLayer *l, RuleKind kind, const char *pattern, const char *file, unsigned line,
                     const char *option) {
        PolicyRule *a;

        assert(l);

        if (l->n_rules >= POLICY_RULES_MAX)
                return -E2BIG;
        a = reallocarray(l->rules, l->n_rules + 1, sizeof(PolicyRule));
        if (!a)
                return -ENOMEM;
        l->rules = a;
        a[l->n_rules] = (PolicyRule) {};
        if (policy_rule_set(&a[l->n_rules], kind, pattern, file, line, option) < 0)
                return -ENOMEM;
        l->n_rules++;
        return 0;
}

static bool rule_matches(const PolicyRule *r, const char *s) {
        return r->pattern && fnmatch(r->pattern, s, 0) == 0;
}

static const PolicyRule *layer_find(const PolicyLayer *l, RuleKind kind, const char *s) {
        for (size_t i = 0; i < l->n_rules; i++)
                if (l->rules[i].kind == kind && rule_matches(&l->rules[i], s))
                        return &l->rules[i];
        return NULL;
}

static const PolicyLayer *source_layer(const Policy *p, RequestSource source) {
        return source >= 0 && source < _SOURCE_MAX ? &p->sources[source] : NULL;
}

static PolicyVerdict deny(const PolicyRule *rule) {
        return (PolicyVerdict) { .verdict = VERDICT_DENY, .rule = rule };
}

/* libkmod looks a key up with '-' read as '_' outside brackets (alias_normalize()): so must a rule
 * on keys be matched, or crypto-ecdh_nist_p256 would pass DenyRequest=crypto-ecdh-nist-p* and still
 * resolve to the same module. In place. */
static void key_normalize(char *s) {
        bool bracket = false;

        for (; *s; s++) {
                if (*s == '[')
                        bracket = true;
                else if (*s == ']')
                        bracket = false;
                else if (*s == '-' && !bracket)
                        *s = '_';
        }
}

static bool request_rule_matches(const PolicyRule *r, const char *key) {
        _cleanup_free_ char *pattern = r->pattern ? strdup(r->pattern) : NULL;

        if (!pattern)
                return false;
        key_normalize(pattern);
        return fnmatch(pattern, key, 0) == 0;
}

PolicyVerdict policy_check_request(const Policy *p, RequestSource source, const char *key) {
        const PolicyLayer *layers[] = { &p->global, source_layer(p, source) };
        _cleanup_free_ char *k = key ? strdup(key) : NULL;

        assert(p);

        /* Out of memory, nothing can be matched: deny rather than let a denied key pass. */
        if (key && !k)
                return deny(NULL);
        if (k)
                key_normalize(k);
        for (size_t i = 0; k && i < ELEMENTSOF(layers); i++)
                for (size_t j = 0; layers[i] && j < layers[i]->n_rules; j++) {
                        const PolicyRule *r = &layers[i]->rules[j];

                        if (r->kind == RULE_DENY_REQUEST && request_rule_matches(r, k))
                                return deny(r);
                }
        return (PolicyVerdict) { .verdict = VERDICT_ALLOW };
}

/* A layer in allowlist mode lets through only what one of its Allow= matches. */
static bool layer_passes(const PolicyLayer *l, const char *module, const PolicyRule **ret_allow) {
        const PolicyRule *a = layer_find(l, RULE_ALLOW, module);

        if (a && !*ret_allow)
                *ret_allow = a;
        return a || !l->default_deny;
}

PolicyVerdict policy_check_module(const Policy *p, RequestSource source, const char *module) {
        const PolicyLayer *layers[] = { &p->global, source_layer(p, source) };
        const PolicyRule *allow = NULL;

        assert(p);

        /* A Deny= wins over every Allow=, in either layer. */
        for (size_t i = 0; i < ELEMENTSOF(layers); i++) {
                const PolicyRule *r = layers[i] ? layer_find(layers[i], RULE_DENY, module) : NULL;

                if (r)
                        return deny(r);
        }
        for (size_t i = 0; i < ELEMENTSOF(layers); i++)
                if (layers[i] && !layer_passes(layers[i], module, &allow))
                        return deny(&layers[i]->default_rule);
        return (PolicyVerdict) { .verdict = VERDICT_ALLOW, .rule = allow };
}

/* Whether the options string sets the key of word (normalized). */
static bool options_set_key(const char *options, const char *word) {
        size_t klen = strcspn(word, "=");
        char k[MODULE_PARAMETERS_MAX + 1];

        for (const char *p = options ?: ""; ; ) {
                size_t n = kernel_next_arg(&p);

                if (n == 0)
                        return false;
                if (n < sizeof(k)) {
                        memcpy(k, p, n);
                        k[n] = '\0';
                        kernel_arg_normalize(k);
                        if (strcspn(k, "=") == klen && memcmp(k, word, klen) == 0)
                                return true;
                }
                p += n;
        }
}

/* An Allow= entry of a [Parameters] section: "*", or "KEY=VALUE" with globs on both sides; a word
 * without '=' is a boolean parameter and matches "KEY=" with an empty value glob or "*". */
static bool parameter_entry_matches(const char *entry, const char *word) {
        _cleanup_free_ char *k = NULL, *wk = NULL;
        const char *ev, *wv;

        if (strcmp(entry, "*") == 0)
                return true;
        ev = strchr(entry, '=');
        wv = strchr(word, '=');
        k = strndup(entry, ev ? (size_t) (ev - entry) : strlen(entry));
        wk = strndup(word, wv ? (size_t) (wv - word) : strlen(word));
        if (!k || !wk || fnmatch(k, wk, 0) != 0)
                return false;
        return fnmatch(ev ? ev + 1 : "", wv ? wv + 1 : "", 0) == 0;
}

static const ParameterRule *parameter_rule_find(const Policy *p, const char *module) {
        /* The last section that matches: a later drop-in refines an earlier one. */
        for (size_t i = p->n_parameters; i > 0; i--)
                if (fnmatch(p->parameters[i - 1].module, module, 0) == 0)
                        return &p->parameters[i - 1];
        return NULL;
}

static bool parameter_allowed(const Policy *p, const ParameterRule *pr, const char *word) {
        if (!pr)
                return p->request_parameters_any;
        for (char **e = pr->allow; e && *e; e++)
                if (parameter_entry_matches(*e, word))
                        return true;
        return false;
}

PolicyVerdict policy_check_parameters(const Policy *p, const char *module, const char *admin_options,
                                      const char *parameters, char *buf, size_t size,
                                      const char **ret_word) {
        const ParameterRule *pr = parameter_rule_find(p, module);
        const PolicyRule *rule = pr ? &pr->rule : &p->request_parameters_rule;

        assert(p);

        *ret_word = NULL;
        for (const char *s = parameters ?: ""; ; ) {
                size_t n = kernel_next_arg(&s);

                if (n == 0)
                        break;
                if (n >= size)
                        return *ret_word = NULL, deny(rule);
                memcpy(buf, s, n);
                buf[n] = '\0';
                s += n;
                kernel_arg_normalize(buf);
                *ret_word = buf;
                if (options_set_key(admin_options, buf))
                        return (PolicyVerdict) { .verdict = VERDICT_DENY, .admin_option = true };
                if (!parameter_allowed(p, pr, buf))
                        return deny(rule);
        }
        *ret_word = NULL;
        return (PolicyVerdict) { .verdict = VERDICT_ALLOW, .rule = pr ? &pr->rule : NULL };
}

int policy_rule_describe(const PolicyRule *r, char **ret) {
        int k;

        if (!r || !r->file)
                k = asprintf(ret, "%s", r && r->option ? r->option : "the default");
        else if (r->line > 0)
                k = asprintf(ret, "%s:%u (%s)", r->file, r->line, r->option ?: rule_kind_to_string(r->kind));
        else
                k = asprintf(ret, "%s (%s)", r->file, r->option ?: rule_kind_to_string(r->kind));
        return k < 0 ? -ENOMEM : 0;
}

/* The value of a kernel command line word "name=value" as kernel_arg_normalize() left it, or NULL
 * when the word is not that option. */
static const char *cmdline_value(const char *word, const char *name) {
        size_t n = strlen(name);

        return strncmp(word, name, n) == 0 && word[n] == '=' ? word + n + 1 : NULL;
}

static int cmdline_add_denies(Policy *p, const char *option, const char *value, char ***ignored) {
        _cleanup_free_ char *copy = strdup(value);
        char *state = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *m = strtok_r(copy, ",", &state); m; m = strtok_r(NULL, ",", &state)) {
                _cleanup_free_ char *text = NULL;
                int r;

                if (asprintf(&text, "%s=%s", option, m) < 0)
                        return -ENOMEM;
                if (!module_name_is_valid(m)) {
                        r = strv_consume(ignored, TAKE_PTR(text));
                        if (r < 0)
                                return r;
                        continue;
                }
                module_name_normalize(m);
                r = policy_layer_add(&p->global, RULE_DENY, m, POLICY_CMDLINE, 0, text);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* module_blacklist= and modprobe.blacklist=, as the kernel and libkmod read them. */
static int cmdline_add_blacklists(Policy *p, const char *cmdline, char ***ignored) {
        static const char *const blacklists[] = { "module_blacklist", "modprobe.blacklist" };

        for (const char *s = cmdline;;) {
                _cleanup_free_ char *word = NULL;
                size_t n = kernel_next_arg(&s);

                if (n == 0)
                        return 0;
                word = strndup(s, n);
                if (!word)
                        return -ENOMEM;
                s += n;
                kernel_arg_normalize(word);
                for (size_t i = 0; i < ELEMENTSOF(blacklists); i++) {
                        const char *v = cmdline_value(word, blacklists[i]);
                        int r;

                        if (!v)
                                continue;
                        r = cmdline_add_denies(p, blacklists[i], v, ignored);
                        if (r < 0)
                                return r;
                        break;
                }
        }
}

/* modgate.mode=, our own option, read as systemd reads its own; the last one counts. */
static int cmdline_set_mode(Policy *p, const char *cmdline, char ***ignored) {
        static const char *const keys[] = { "modgate.mode", NULL };
        _cleanup_strv_free_ char **values = NULL;
        int r;

        r = systemd_cmdline_values(cmdline, keys, &values);
        if (r < 0)
                return r;
        for (char **v = values; v && *v; v++) {
                _cleanup_free_ char *text = NULL;
                PolicyMode m;

                if (asprintf(&text, "modgate.mode=%s", *v) < 0)
                        return -ENOMEM;
                m = policy_mode_from_string(*v);
                if (m < 0) {
                        r = strv_consume(ignored, TAKE_PTR(text));
                        if (r < 0)
                                return r;
                        continue;
                }
                p->mode = m;
                r = policy_rule_set(&p->mode_rule, RULE_DEFAULT, NULL, POLICY_CMDLINE, 0, text);
                if (r < 0)
                        return r;
        }
        return 0;
}

int policy_add_cmdline(Policy *p, const char *cmdline, char ***ret_ignored) {
        _cleanup_strv_free_ char **ignored = NULL;
        int r;

        r = cmdline_add_blacklists(p, cmdline, &ignored);
        if (r >= 0)
                r = cmdline_set_mode(p, cmdline, &ignored);
        if (r < 0)
                return r;
        *ret_ignored = TAKE_PTR(ignored);
        return 0;
}

static int cmp_strings(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A layer's rules as sorted, unique "kind pattern" lines: Deny= wins whatever its place, and any
 * Allow= admits, so neither order nor repetition changes what a layer decides. */
static int serialize_layer(FILE *f, const char *name, const PolicyLayer *l) {
        _cleanup_free_ char **lines = calloc(l->n_rules + 1, sizeof(char *));
        int r = 0;

        if (!lines)
                return -ENOMEM;
        for (size_t i = 0; i < l->n_rules; i++)
                if (asprintf(&lines[i], "%s %s", rule_kind_to_string(l->rules[i].kind),
                             l->rules[i].pattern) < 0) {
                        r = -ENOMEM;
                        break;
                }
        if (r == 0) {
                qsort(lines, l->n_rules, sizeof(char *), cmp_strings);
                fprintf(f, "[%s] default=%s\n", name, l->default_deny ? "deny" : "allow");
                for (size_t i = 0; i < l->n_rules; i++)
                        if (i == 0 || strcmp(lines[i], lines[i - 1]) != 0)
                                fprintf(f, "%s\n", lines[i]);
        }
        for (size_t i = 0; i < l->n_rules; i++)
                free(lines[i]);
        return r;
}

int policy_serialize(const Policy *p, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        assert(p);

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "mode=%s\nrequest-parameters=%s\n", policy_mode_to_string(p->mode),
                p->request_parameters_any ? "any" : "none");
        r = serialize_layer(f, "policy", &p->global);
        for (RequestSource s = 0; r >= 0 && s < _SOURCE_MAX; s++)
                r = serialize_layer(f, request_source_to_string(s), &p->sources[s]);
        /* The last matching section decides, so the order of [Parameters] sections counts. */
        for (size_t i = 0; r >= 0 && i < p->n_parameters; i++) {
                fprintf(f, "[parameters] module=%s\n", p->parameters[i].module);
                for (char **e = p->parameters[i].allow; e && *e; e++)
                        fprintf(f, "allow %s\n", *e);
        }
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}

int policy_judge_plan(const Policy *p, RequestSource source, const Plan *plan, ModuleVerdict **ret,
                      size_t *ret_first) {
        ModuleVerdict *v = calloc(plan->n_specs ?: 1, sizeof(ModuleVerdict));
        size_t first = SIZE_MAX;

        assert(ret_first);

        if (!v)
                return -ENOMEM;
        /* Plan order puts what a module needs before it, so each dependency is judged already. */
        for (size_t i = 0; i < plan->n_specs; i++) {
                const ModuleSpec *s = plan->specs + i;

                v[i].self = policy_check_module(p, source, s->name);
                v[i].denied = v[i].self.verdict == VERDICT_DENY;
                v[i].via = SIZE_MAX;
                for (size_t k = 0; !v[i].denied && k < s->n_requires; k++)
                        if (v[s->requires[k]].denied) {
                                v[i].denied = true;
                                v[i].via = s->requires[k];
                        }
                if (v[i].denied && s->role == ROLE_REQUESTED && first == SIZE_MAX)
                        first = i;
        }
        *ret = v;
        *ret_first = first;
        return 0;
}

const PolicyRule *policy_chain_rule(const ModuleVerdict *v, size_t i) {
        while (v[i].via != SIZE_MAX)
                i = v[i].via;
        return v[i].self.rule;
}

int policy_chain(const Plan *plan, const ModuleVerdict *v, size_t i, char **ret) {
        _cleanup_free_ char *buf = NULL, *rule = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        assert(plan);

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs(plan->specs[i].name, f);
        for (; v[i].via != SIZE_MAX; i = v[i].via)
                fprintf(f, " needs %s", plan->specs[v[i].via].name);
        r = policy_rule_describe(v[i].self.rule, &rule);
        if (r >= 0 && v[i].self.rule && v[i].self.rule->kind == RULE_DEFAULT)
                fprintf(f, ", which no Allow= admits under %s", rule);
        else if (r >= 0)
                fprintf(f, ", denied by %s", rule);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}
