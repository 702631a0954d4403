/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "module-name.h"
#include "policy.h"
#include "strv.h"

/* A stored module glob is canonical already, and each rule says where it was written. */
static void check_rule(const PolicyRule *r, bool module_glob) {
        char buf[CONFIG_LINE_MAX + 1];

        fuzz_assert(r->file && strcmp(r->file, "fuzz.conf") == 0 && r->line > 0 && r->option);
        if (!module_glob)
                return;
        fuzz_assert(r->pattern && strlen(r->pattern) < sizeof(buf));
        strcpy(buf, r->pattern);
        fuzz_assert(config_normalize_module_glob(buf) == 0 && strcmp(buf, r->pattern) == 0);
}

static void check_layer(const PolicyLayer *l) {
        fuzz_assert(l->n_rules <= 3 * CONFIG_LIST_MAX);
        for (size_t i = 0; i < l->n_rules; i++)
                check_rule(&l->rules[i], l->rules[i].kind != RULE_DENY_REQUEST);
        if (l->default_deny)
                check_rule(&l->default_rule, false);
}

static void check_policy(const Policy *p) {
        check_layer(&p->global);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                check_layer(&p->sources[i]);
        fuzz_assert(p->n_parameters <= CONFIG_PARAMETERS_MAX);
        for (size_t i = 0; i < p->n_parameters; i++) {
                check_rule(&p->parameters[i].rule, true);
                fuzz_assert(strcmp(p->parameters[i].module, p->parameters[i].rule.pattern) == 0);
                fuzz_assert(strv_length(p->parameters[i].allow) <= CONFIG_LIST_MAX);
        }
}

static void check_config(const Config *c) {
        fuzz_assert(c->workers >= 1 && c->workers <= CONFIG_WORKERS_MAX);
        for (char **p = c->load_alone; p && *p; p++)
                fuzz_assert(module_name_is_valid(*p) && !strchr(*p, '-'));
        for (char **p = c->trusted_roots; p && *p; p++)
                fuzz_assert((*p)[0] == '/');
        check_policy(&c->policy);
}

/* Every refusal names the file, and echoes only printable text back. */
static void check_message(int r, const char *message) {
        fuzz_assert(r == -EINVAL || r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
        if (!message) {
                fuzz_assert(r == -ENOMEM);
                return;
        }
        fuzz_assert(strncmp(message, "fuzz.conf:", strlen("fuzz.conf:")) == 0);
        for (const char *p = message; *p; p++)
                fuzz_assert((unsigned char) *p >= ' ' || *p == '\t');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *message = NULL;
        FILE *f;
        int r;

        /* fmemopen() wants a buffer even for no bytes. */
        f = fmemopen(size > 0 ? (void *) data : (void *) "", size, "r");
        if (!f)
                return 0;

        config_init_defaults(&c);
        r = config_parse_file(&c, f, "fuzz.conf", &message);
        fclose(f);

        if (r >= 0) {
                fuzz_assert(r == 0 && !message);
                check_config(&c);
        } else
                check_message(r, message);
        return 0;
}
