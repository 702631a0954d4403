/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Signer rules (docs/guard.md, "Signer rules"): RequireSignature= and AllowSigner= of a trusted root
 * ([Trust], [Root]) or of a request source ([Source]). Pure: the rule and what the module file's
 * signature says come in, a verdict and its reason go out.
 *
 * modgated checks them on the file it opened, before finit_module(2); the guard then lets the kernel
 * read only the bytes modgated hashed, so a rule holds for every load the kernel makes, without
 * module.sig_enforce=1. The check reads the signature block as libkmod does: which key it names, not
 * whether the signature is good. The kernel verifies it at the load against its own keyring, and a
 * signature that does not verify is fatal there even without sig_enforce; a key the kernel does not
 * hold is not (the kernel loads the module and taints itself 'E'). So AllowSigner= names keys the
 * kernel holds. */
typedef struct SignerRule {
        bool require;           /* RequireSignature=yes: an unsigned module is refused */
        char **allow;           /* AllowSigner=: "key:" and lowercase hex without colons, or "signer:"
                                 * and a signer's name; empty: any signer */
        char *require_where;    /* "FILE:LINE" of the RequireSignature= in force */
        char *allow_where;      /* of the last AllowSigner= */
} SignerRule;

#define SIGNER_KEY_PREFIX "key:"
#define SIGNER_NAME_PREFIX "signer:"

void signer_rule_done(SignerRule *r);
/* Copies from's RequireSignature= (require) and AllowSigner= (allow), each with where it was written,
 * into *to; the part not copied stays *to's. *to is changed only on success. 0 or -ENOMEM. */
int signer_rule_copy_parts(SignerRule *to, const SignerRule *from, bool require, bool allow);
static inline int signer_rule_copy(SignerRule *to, const SignerRule *from) {
        return signer_rule_copy_parts(to, from, true, true);
}
bool signer_rule_equal(const SignerRule *a, const SignerRule *b);
/* Whether the rule asks anything (it needs the file's signature before the load). */
bool signer_rule_active(const SignerRule *r);

/* One AllowSigner= value as it is kept: a key id (hex bytes, colons between them or none, at least
 * 4 bytes, as modinfo(8) prints sig_key) becomes "key:" and lowercase hex; anything else is a
 * signer's name, as modinfo(8) prints signer: "signer:" and the name. -EINVAL for an empty value or
 * a control character, -ENOMEM. */
int signer_allow_entry(const char *value, char **ret);

/* The file's signature, as modinfo.h reads it. */
typedef struct SignerSeen {
        bool is_signed;
        const char *signer;     /* NULL when libkmod could not tell */
        const char *key;        /* the key id as modinfo(8) prints it (colons); NULL when unknown */
} SignerSeen;

/* Checks seen against rule, named by what (e.g. "[Source] udev", "[Root] /srv/modules"). Returns 1
 * when it passes (or the rule asks nothing), 0 when it refuses, with the reason in *ret_reason
 * (allocated: the setting, where it was written, and what the file carries), or -ENOMEM. */
int signer_rule_check(const SignerRule *rule, const char *what, const SignerSeen *seen, char **ret_reason);
