/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int policy_rule_set(PolicyRule *r, RuleKind kind, const char *pattern, const char *file, unsigned line,
                           const char *option) {
        PolicyRule t = { .kind = kind, .line = line };

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

int policy_layer_add(PolicyLayer *l, RuleKind kind, const char *pattern, const char *file, unsigned line,
                     const char *option) {
        PolicyRule *a;

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
