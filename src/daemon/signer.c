/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "signer.h"
#include "strv.h"

#define SIGNER_KEY_BYTES_MIN 4
#define SIGNER_KEY_BYTES_MAX 64

void signer_rule_done(SignerRule *r) {
        strv_free(r->allow);
        free(r->require_where);
        free(r->allow_where);
        *r = (SignerRule) {};
}

int signer_rule_copy_parts(SignerRule *to, const SignerRule *from, bool require, bool allow) {
        const SignerRule *r = require ? from : to, *a = allow ? from : to;
        SignerRule t = { .require = r->require };

        assert(to);
        assert(from);

        t.allow = strv_copy_n(a->allow, strv_length(a->allow));
        if ((!t.allow && a->allow) || strdup_or_null(r->require_where, &t.require_where) < 0 ||
            strdup_or_null(a->allow_where, &t.allow_where) < 0) {
                signer_rule_done(&t);
                return -ENOMEM;
        }
        signer_rule_done(to);
        *to = t;
        return 0;
}

bool signer_rule_equal(const SignerRule *a, const SignerRule *b) {
        return a->require == b->require && strv_equal(a->allow, b->allow);
}

bool signer_rule_active(const SignerRule *r) {
        return r && (r->require || strv_length(r->allow) > 0);
}

/* Hex bytes, each two digits, all joined by colons or none: the key id's lowercase hex in buf. */
static int key_id(const char *s, char *buf, size_t size) {
        bool colons = strchr(s, ':');
        size_t n = 0;

        for (const char *p = s; *p;) {
                if (!isxdigit((unsigned char) p[0]) || !isxdigit((unsigned char) p[1]))
                        return -EINVAL;
                if (n + 2 >= size)
                        return -EINVAL;
                buf[n++] = (char) tolower((unsigned char) p[0]);
                buf[n++] = (char) tolower((unsigned char) p[1]);
                p += 2;
                if (colons && *p == ':' && p[1])
                        p++;
                else if (colons && *p)
                        return -EINVAL;
        }
        buf[n] = '\0';
        return n >= 2 * SIGNER_KEY_BYTES_MIN ? 0 : -EINVAL;
}

int signer_allow_entry(const char *value, char **ret) {
        char hex[2 * SIGNER_KEY_BYTES_MAX + 1];

        assert(value);
        assert(ret);

        if (!*value)
                return -EINVAL;
        for (const char *p = value; *p; p++)
                if (iscntrl((unsigned char) *p))
                        return -EINVAL;
        if (key_id(value, hex, sizeof(hex)) >= 0)
                return asprintf(ret, SIGNER_KEY_PREFIX "%s", hex) < 0 ? -ENOMEM : 0;
        return asprintf(ret, SIGNER_NAME_PREFIX "%s", value) < 0 ? -ENOMEM : 0;
}

static bool allowed(char *const *allow, const SignerSeen *seen) {
        char hex[2 * SIGNER_KEY_BYTES_MAX + 1];
        bool have_key = seen->key && key_id(seen->key, hex, sizeof(hex)) >= 0;

        for (char *const *e = allow; e && *e; e++) {
                if (have_key && strncmp(*e, SIGNER_KEY_PREFIX, strlen(SIGNER_KEY_PREFIX)) == 0 &&
                    strcmp(*e + strlen(SIGNER_KEY_PREFIX), hex) == 0)
                        return true;
                if (seen->signer && strncmp(*e, SIGNER_NAME_PREFIX, strlen(SIGNER_NAME_PREFIX)) == 0 &&
                    strcmp(*e + strlen(SIGNER_NAME_PREFIX), seen->signer) == 0)
                        return true;
        }
        return false;
}

int signer_rule_check(const SignerRule *rule, const char *what, const SignerSeen *seen, char **ret_reason) {
        assert(what);
        assert(seen);
        assert(ret_reason);

        *ret_reason = NULL;
        if (!signer_rule_active(rule))
                return 1;
        if (!seen->is_signed) {
                if (rule->require)
                        return asprintf(ret_reason, "RequireSignature=yes of %s (%s): the module file carries "
                                        "no signature", what, rule->require_where ?: "?") < 0 ? -ENOMEM : 0;
                return asprintf(ret_reason, "AllowSigner= of %s (%s): the module file carries no signature",
                                what, rule->allow_where ?: "?") < 0 ? -ENOMEM : 0;
        }
        if (strv_length(rule->allow) == 0 || allowed(rule->allow, seen))
                return 1;
        return asprintf(ret_reason, "AllowSigner= of %s (%s): the module is signed by \"%s\" with key %s, "
                        "which no AllowSigner= there names", what, rule->allow_where ?: "?",
                        seen->signer ?: "(unknown)", seen->key ?: "(unknown)") < 0 ? -ENOMEM : 0;
}
