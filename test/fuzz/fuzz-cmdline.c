/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The kernel command line, as each of its readers takes it: the policy (module_blacklist=,
 * modprobe.blacklist=, modgate.mode=), the trust settings (roothash=, usrhash=) and the boot list
 * (modules_load=, rd.modules_load=). */

#include <errno.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "load-plain.h"
#include "module-name.h"
#include "modules-load-conf.h"
#include "policy.h"
#include "strv.h"

#define KERNEL_SPACE " \t\n\v\f\r"

static bool layer_denies(const PolicyLayer *l, const char *module) {
        _cleanup_free_ char *canonical = strdup(module);

        fuzz_assert(canonical);
        module_name_normalize(canonical);
        for (size_t i = 0; i < l->n_rules; i++)
                if (l->rules[i].kind == RULE_DENY && strcmp(l->rules[i].pattern, canonical) == 0)
                        return true;
        return false;
}

/* Every name the kernel would blacklist is denied, when nothing is quoted (quotes make words that
 * this reference does not model). */
static void check_blacklist_complete(const char *text, const Policy *p) {
        static const char *const options[] = { "module_blacklist=", "modprobe.blacklist=" };

        if (strchr(text, '"'))
                return;
        for (const char *w = text + strspn(text, KERNEL_SPACE); *w; w += strspn(w, KERNEL_SPACE)) {
                size_t n = strcspn(w, KERNEL_SPACE);
                _cleanup_free_ char *word = strndup(w, n);

                fuzz_assert(word);
                w += n;
                for (size_t i = 0; i < ELEMENTSOF(options); i++) {
                        char *state = NULL;

                        if (strncmp(word, options[i], strlen(options[i])) != 0)
                                continue;
                        for (char *m = strtok_r(word + strlen(options[i]), ",", &state); m;
                             m = strtok_r(NULL, ",", &state))
                                if (module_name_is_valid(m))
                                        fuzz_assert(layer_denies(&p->global, m));
                }
        }
}

static void check_policy(const char *text) {
        _cleanup_strv_free_ char **ignored = NULL;
        _cleanup_(policy_done) Policy p = {};
        int r;

        policy_init(&p);
        r = policy_add_cmdline(&p, text, &ignored);
        if (r < 0) {
                fuzz_assert(r == -ENOMEM || r == -E2BIG);
                return;
        }
        fuzz_assert(p.mode >= 0 && p.mode < _POLICY_MODE_MAX);
        for (size_t i = 0; i < p.global.n_rules; i++) {
                const PolicyRule *rule = &p.global.rules[i];
                const char *v;

                fuzz_assert(rule->kind == RULE_DENY && rule->line == 0);
                fuzz_assert(strcmp(rule->file, POLICY_CMDLINE) == 0);
                fuzz_assert(module_name_is_valid(rule->pattern) && !strchr(rule->pattern, '-'));
                /* It says what was written: the option and the name as given. */
                v = strchr(rule->option, '=');
                fuzz_assert(v && module_name_equal(v + 1, rule->pattern));
        }
        for (char **i = ignored; i && *i; i++)
                fuzz_assert(strncmp(*i, "module_blacklist=", 17) == 0 ||
                            strncmp(*i, "modprobe.blacklist=", 19) == 0 || strncmp(*i, "modgate.mode=", 13) == 0);
        check_blacklist_complete(text, &p);
}

static void check_root_hashes(const char *text) {
        _cleanup_strv_free_ char **hashes = NULL;
        int r;

        r = config_cmdline_root_hashes(text, &hashes);
        if (r < 0) {
                fuzz_assert(r == -ENOMEM);
                return;
        }
        for (char **h = hashes; h && *h; h++) {
                char copy[129];

                /* Normalized already, each once, and written on the command line (in any case). */
                fuzz_assert(strlen(*h) < sizeof(copy));
                strcpy(copy, *h);
                fuzz_assert(config_normalize_root_hash(copy) == 0 && strcmp(copy, *h) == 0);
                for (char **g = hashes; g < h; g++)
                        fuzz_assert(strcmp(*g, *h) != 0);
                fuzz_assert(strcasestr(text, *h));
        }
}

/* Quotes may keep blanks in a name (which then is no module's), never a comma. Each is asked for on
 * its own: one that names no module is refused alone, as an invalid name. */
static void check_names(char **names, bool quoted) {
        fuzz_assert(strv_length(names) <= MODULES_LOAD_ENTRIES_MAX);
        for (char **n = names; n && *n; n++) {
                _cleanup_free_ char *text = NULL;
                LoadRefusal refusal = {};
                size_t len;
                int r;

                fuzz_assert(**n && !strchr(*n, ',') && (quoted || !strpbrk(*n, " \t\n")));
                r = plain_request_message(&(PlainRequest) { .name = *n }, USEC_INFINITY, &text, &len,
                                          &refusal);
                fuzz_assert(r == 0 || r == 1 || r == -ENOMEM);
                fuzz_assert(r != 1 || streq_ptr(refusal.error, "io.modgate.Manager.InvalidName"));
        }
}

/* In the initrd both forms count: outside it, the list is the initrd's without rd.modules_load=. */
static void check_modules_load(const char *text) {
        _cleanup_strv_free_ char **host = NULL, **initrd = NULL;
        char **i;
        int r, k;

        r = modules_load_parse_cmdline(text, false, &host);
        k = modules_load_parse_cmdline(text, true, &initrd);
        fuzz_assert(r == 0 || r == -E2BIG || r == -ENOMEM);
        fuzz_assert(k == 0 || k == -E2BIG || k == -ENOMEM);
        if (r < 0 || k < 0)
                return;
        check_names(host, strpbrk(text, "\"'"));
        check_names(initrd, strpbrk(text, "\"'"));
        i = initrd;
        for (char **h = host; h && *h; h++) {
                while (i && *i && strcmp(*i, *h) != 0)
                        i++;
                fuzz_assert(i && *i);
                i++;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size);

        if (!text)
                return 0;
        check_policy(text);
        check_root_hashes(text);
        check_modules_load(text);
        return 0;
}
