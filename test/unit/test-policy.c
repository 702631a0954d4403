/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy.h"
#include "strv.h"
#include "tests.h"

static void add(PolicyLayer *l, RuleKind kind, const char *pattern, unsigned line) {
        char option[128];

        snprintf(option, sizeof(option), "%s=%s", kind == RULE_ALLOW ? "Allow" : kind == RULE_DENY ? "Deny" : "DenyRequest",
                 pattern);
        check(policy_layer_add(l, kind, pattern, "/etc/modgate/modgate.conf.d/50-test.conf", line, option) == 0);
}

static void set_default_deny(PolicyLayer *l, unsigned line) {
        l->default_deny = true;
        l->default_rule = (PolicyRule) {
                .kind = RULE_DEFAULT,
                .file = strdup("/etc/modgate/modgate.conf"),
                .line = line,
                .option = strdup("Default=deny"),
        };
        check(l->default_rule.file && l->default_rule.option);
}

static void check_module(const Policy *p, RequestSource s, const char *module, VerdictKind want, unsigned line) {
        PolicyVerdict v = policy_check_module(p, s, module);

        check(v.verdict == want);
        if (line == 0)
                check(!v.rule);
        else
                check(v.rule && v.rule->line == line);
}

TEST(empty_allows) {
        Policy p;

        policy_init(&p);
        check(p.mode == POLICY_ENFORCE);
        check_module(&p, SOURCE_KERNEL, "vxlan", VERDICT_ALLOW, 0);
        check(policy_check_request(&p, SOURCE_KERNEL, "net-pf-38").verdict == VERDICT_ALLOW);
        policy_done(&p);
}

TEST(deny_wins) {
        Policy p;

        policy_init(&p);
        add(&p.global, RULE_ALLOW, "algif_*", 2);
        add(&p.global, RULE_DENY, "algif_aead", 3);
        add(&p.sources[SOURCE_ADMIN], RULE_ALLOW, "algif_aead", 9);
        check_module(&p, SOURCE_ADMIN, "algif_aead", VERDICT_DENY, 3);
        check_module(&p, SOURCE_KERNEL, "algif_aead", VERDICT_DENY, 3);
        check_module(&p, SOURCE_KERNEL, "algif_hash", VERDICT_ALLOW, 2);
        check_module(&p, SOURCE_KERNEL, "vxlan", VERDICT_ALLOW, 0);
        policy_done(&p);
}

/* An empty Deny= in a later drop-in takes back the Deny= rules before it, and only those. */
TEST(clear_kind) {
        Policy p;

        policy_init(&p);
        add(&p.global, RULE_DENY, "tipc", 1);
        add(&p.global, RULE_ALLOW, "vxlan", 2);
        add(&p.global, RULE_DENY, "dccp", 3);
        add(&p.global, RULE_DENY_REQUEST, "net-pf-33", 4);
        policy_layer_clear_kind(&p.global, RULE_DENY);
        check(p.global.n_rules == 2);
        check_module(&p, SOURCE_ADMIN, "tipc", VERDICT_ALLOW, 0);
        check_module(&p, SOURCE_ADMIN, "vxlan", VERDICT_ALLOW, 2);
        check(policy_check_request(&p, SOURCE_ADMIN, "net-pf-33").verdict == VERDICT_DENY);
        add(&p.global, RULE_DENY, "tipc", 5);
        check_module(&p, SOURCE_ADMIN, "tipc", VERDICT_DENY, 5);
        policy_done(&p);
}

TEST(source_deny) {
        Policy p;

        policy_init(&p);
        add(&p.sources[SOURCE_KERNEL], RULE_DENY, "tipc", 5);
        check_module(&p, SOURCE_KERNEL, "tipc", VERDICT_DENY, 5);
        check_module(&p, SOURCE_ADMIN, "tipc", VERDICT_ALLOW, 0);
        check_module(&p, SOURCE_UDEV, "tipc", VERDICT_ALLOW, 0);
        policy_done(&p);
}

TEST(allowlist) {
        Policy p;

        policy_init(&p);
        set_default_deny(&p.global, 4);
        add(&p.global, RULE_ALLOW, "e1000*", 5);
        add(&p.global, RULE_ALLOW, "virtio_[bn]*", 6);
        check_module(&p, SOURCE_UDEV, "e1000e", VERDICT_ALLOW, 5);
        check_module(&p, SOURCE_UDEV, "virtio_net", VERDICT_ALLOW, 6);
        check_module(&p, SOURCE_UDEV, "virtio_blk", VERDICT_ALLOW, 6);
        check_module(&p, SOURCE_UDEV, "virtio_rng", VERDICT_DENY, 4);
        check(policy_check_module(&p, SOURCE_UDEV, "vxlan").rule->kind == RULE_DEFAULT);
        policy_done(&p);
}

/* Both layers must admit: [Policy] allows everything, the kernel's own layer only a list. */
TEST(source_allowlist) {
        Policy p;

        policy_init(&p);
        set_default_deny(&p.sources[SOURCE_KERNEL], 11);
        add(&p.sources[SOURCE_KERNEL], RULE_ALLOW, "crypto_*", 12);
        add(&p.sources[SOURCE_KERNEL], RULE_ALLOW, "af_alg", 12);
        check_module(&p, SOURCE_KERNEL, "af_alg", VERDICT_ALLOW, 12);
        check_module(&p, SOURCE_KERNEL, "crypto_user", VERDICT_ALLOW, 12);
        check_module(&p, SOURCE_KERNEL, "algif_aead", VERDICT_DENY, 11);
        check_module(&p, SOURCE_ADMIN, "algif_aead", VERDICT_ALLOW, 0);
        /* Allowed by the kernel's layer but not by [Policy]'s allowlist: denied by [Policy]. */
        set_default_deny(&p.global, 3);
        check_module(&p, SOURCE_KERNEL, "af_alg", VERDICT_DENY, 3);
        add(&p.global, RULE_ALLOW, "*", 7);
        check_module(&p, SOURCE_KERNEL, "af_alg", VERDICT_ALLOW, 7);
        check_module(&p, SOURCE_KERNEL, "algif_aead", VERDICT_DENY, 11);
        policy_done(&p);
}

TEST(glob) {
        Policy p;

        policy_init(&p);
        add(&p.global, RULE_DENY, "snd_*", 1);
        add(&p.global, RULE_DENY, "dccp?", 2);
        add(&p.global, RULE_DENY, "cifs[!_]", 3);
        check_module(&p, SOURCE_ADMIN, "snd_hda_intel", VERDICT_DENY, 1);
        check_module(&p, SOURCE_ADMIN, "snd", VERDICT_ALLOW, 0);
        check_module(&p, SOURCE_ADMIN, "dccp4", VERDICT_DENY, 2);
        check_module(&p, SOURCE_ADMIN, "dccp", VERDICT_ALLOW, 0);
        check_module(&p, SOURCE_ADMIN, "dccp_ipv4", VERDICT_ALLOW, 0);
        check_module(&p, SOURCE_ADMIN, "cifsx", VERDICT_DENY, 3);
        check_module(&p, SOURCE_ADMIN, "cifs_", VERDICT_ALLOW, 0);
        policy_done(&p);
}

TEST(request_keys) {
        Policy p;
        PolicyVerdict v;

        policy_init(&p);
        add(&p.global, RULE_DENY_REQUEST, "net-pf-33", 1);
        add(&p.sources[SOURCE_KERNEL], RULE_DENY_REQUEST, "fs-*", 2);
        v = policy_check_request(&p, SOURCE_KERNEL, "net-pf-33");
        check(v.verdict == VERDICT_DENY && v.rule->line == 1);
        check(policy_check_request(&p, SOURCE_KERNEL, "net-pf-3").verdict == VERDICT_ALLOW);
        check(policy_check_request(&p, SOURCE_KERNEL, "fs-cramfs").verdict == VERDICT_DENY);
        check(policy_check_request(&p, SOURCE_ADMIN, "fs-cramfs").verdict == VERDICT_ALLOW);
        check(policy_check_request(&p, SOURCE_KERNEL, NULL).verdict == VERDICT_ALLOW);
        /* A request key rule is not a module rule. */
        check_module(&p, SOURCE_KERNEL, "net-pf-33", VERDICT_ALLOW, 0);
        policy_done(&p);
}

static void add_parameters(Policy *p, const char *module, char **allow, unsigned line) {
        ParameterRule *a = reallocarray(p->parameters, p->n_parameters + 1, sizeof(ParameterRule));

        check(a);
        p->parameters = a;
        a[p->n_parameters++] = (ParameterRule) {
                .module = strdup(module),
                .allow = strv_copy_n(allow, strv_length(allow)),
                .rule = { .kind = RULE_PARAMETERS, .file = strdup("/etc/modgate/modgate.conf"), .line = line },
        };
}

static PolicyVerdict params(const Policy *p, const char *module, const char *admin, const char *request,
                            const char **ret_word) {
        static char buf[256];

        return policy_check_parameters(p, module, admin, request, buf, sizeof(buf), ret_word);
}

TEST(parameters) {
        char *dummy[] = { (char *) "numdummies=[0-9]", (char *) "debug", (char *) "max_mtu=*", NULL };
        char *any[] = { (char *) "*", NULL };
        const char *word;
        PolicyVerdict v;
        Policy p;

        policy_init(&p);
        check(params(&p, "vxlan", NULL, "udp_port=4789", &word).verdict == VERDICT_ALLOW);
        check(params(&p, "vxlan", NULL, NULL, &word).verdict == VERDICT_ALLOW && !word);

        add_parameters(&p, "dummy", dummy, 20);
        add_parameters(&p, "snd_*", NULL, 30);
        add_parameters(&p, "snd_hda_*", any, 40);
        check(params(&p, "dummy", NULL, "numdummies=3", &word).verdict == VERDICT_ALLOW);
        check(params(&p, "dummy", NULL, "numdummies=3 debug max-mtu=1500", &word).verdict == VERDICT_ALLOW);
        v = params(&p, "dummy", NULL, "numdummies=30", &word);
        check(v.verdict == VERDICT_DENY && v.rule->line == 20 && !v.admin_option);
        check_streq(word, "numdummies=30");
        v = params(&p, "dummy", NULL, "numdummies=3 other=1", &word);
        check(v.verdict == VERDICT_DENY);
        check_streq(word, "other=1");
        check(params(&p, "dummy", NULL, "debug=1", &word).verdict == VERDICT_DENY);
        /* No Allow=: no parameters; the last section that matches decides. */
        check(params(&p, "snd_usb_audio", NULL, "index=1", &word).verdict == VERDICT_DENY);
        check(params(&p, "snd_usb_audio", NULL, "", &word).verdict == VERDICT_ALLOW);
        check(params(&p, "snd_hda_intel", NULL, "model=\"a b\" power_save=1", &word).verdict == VERDICT_ALLOW);

        p.request_parameters_any = false;
        v = params(&p, "vxlan", NULL, "udp_port=4789", &word);
        check(v.verdict == VERDICT_DENY && v.rule == &p.request_parameters_rule);
        check(params(&p, "vxlan", NULL, NULL, &word).verdict == VERDICT_ALLOW);
        policy_done(&p);
}

/* A request never silently replaces what the administrator set in modprobe.d or on the command line. */
TEST(parameters_admin) {
        const char *word;
        PolicyVerdict v;
        Policy p;

        policy_init(&p);
        v = params(&p, "dummy", "numdummies=1 quiet", "numdummies=4", &word);
        check(v.verdict == VERDICT_DENY && v.admin_option && !v.rule);
        check_streq(word, "numdummies=4");
        check(params(&p, "dummy", "num-dummies=1", "num_dummies=4", &word).admin_option);
        check(params(&p, "dummy", "quiet", "quiet=0", &word).admin_option);
        check(params(&p, "dummy", "model=\"x y\" a=1", "b=2", &word).verdict == VERDICT_ALLOW);
        check(params(&p, "dummy", "numdummies=1", "numdummiesx=4", &word).verdict == VERDICT_ALLOW);
        policy_done(&p);
}

TEST(cmdline) {
        _cleanup_strv_free_ char **ignored = NULL;
        PolicyVerdict v;
        Policy p;

        policy_init(&p);
        check(policy_add_cmdline(&p, "root=/dev/vda ro module_blacklist=algif_aead,tipc modprobe.blacklist=\"cramfs\" "
                                 "module-blacklist=bad/name modgate.mode=permissive quiet", &ignored) == 0);
        check(p.mode == POLICY_PERMISSIVE);
        check_streq(p.mode_rule.file, POLICY_CMDLINE);
        check_streq(p.mode_rule.option, "modgate.mode=permissive");
        v = policy_check_module(&p, SOURCE_UDEV, "tipc");
        check(v.verdict == VERDICT_DENY);
        check_streq(v.rule->option, "module_blacklist=tipc");
        check(v.rule->line == 0);
        check(policy_check_module(&p, SOURCE_UDEV, "algif_aead").verdict == VERDICT_DENY);
        check_streq(policy_check_module(&p, SOURCE_UDEV, "cramfs").rule->option, "modprobe.blacklist=cramfs");
        check(strv_length(ignored) == 1);
        check_streq(ignored[0], "module_blacklist=bad/name");
        policy_done(&p);

        ignored = strv_free(ignored);
        policy_init(&p);
        check(policy_add_cmdline(&p, "modgate.mode=lax module_blacklist=snd-pcsp", &ignored) == 0);
        check(p.mode == POLICY_ENFORCE);
        check_streq(ignored[0], "modgate.mode=lax");
        check(policy_check_module(&p, SOURCE_UDEV, "snd_pcsp").verdict == VERDICT_DENY);
        policy_done(&p);

        /* Words as the kernel's next_arg() reads them: any blank between them, a word in quotes, and a
         * word that is only the start of an option's name (which was read past its end). */
        ignored = strv_free(ignored);
        policy_init(&p);
        check(policy_add_cmdline(&p, "module\vmodule_blacklist=floppy\r\"module-blacklist=pcspkr\"", &ignored) == 0);
        check(policy_check_module(&p, SOURCE_UDEV, "floppy").verdict == VERDICT_DENY);
        check_streq(policy_check_module(&p, SOURCE_UDEV, "pcspkr").rule->option, "module_blacklist=pcspkr");
        check(!ignored);
        policy_done(&p);
}

static char *serialize(const Policy *p) {
        char *s = NULL;

        check(policy_serialize(p, &s) == 0);
        return s;
}

TEST(serialize) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        Policy p, q;

        policy_init(&p);
        policy_init(&q);
        add(&p.global, RULE_DENY, "tipc", 1);
        add(&p.global, RULE_DENY, "algif_aead", 2);
        add(&q.global, RULE_DENY, "algif_aead", 7);
        add(&q.global, RULE_DENY, "tipc", 8);
        add(&q.global, RULE_DENY, "tipc", 9);
        a = serialize(&p);
        b = serialize(&q);
        check_streq(a, b);

        add(&q.sources[SOURCE_KERNEL], RULE_DENY, "tipc", 10);
        c = serialize(&q);
        check(strcmp(a, c) != 0);
        q.mode = POLICY_PERMISSIVE;
        d = serialize(&q);
        check(strcmp(c, d) != 0);
        check(strstr(d, "mode=permissive\n"));
        policy_done(&p);
        policy_done(&q);
}

/* A plan as the resolver makes one: vxlan needs ip6_udp_tunnel and udp_tunnel, softdep pre tun. */
static Plan *make_plan(void) {
        static const char *const names[] = { "udp_tunnel", "ip6_udp_tunnel", "tun", "vxlan" };
        static const Role roles[] = { ROLE_DEPENDENCY, ROLE_DEPENDENCY, ROLE_SOFTDEP_PRE, ROLE_REQUESTED };
        Plan *plan = calloc(1, sizeof(Plan));

        check(plan);
        plan->specs = calloc(4, sizeof(ModuleSpec));
        plan->blacklisted = calloc(1, sizeof(char *));
        check(plan->specs && plan->blacklisted);
        plan->n_specs = 4;
        for (size_t i = 0; i < 4; i++) {
                plan->specs[i] = (ModuleSpec) { .name = strdup(names[i]), .role = roles[i] };
                plan->specs[i].requires = calloc(2, sizeof(size_t));
                plan->specs[i].after = calloc(1, sizeof(size_t));
        }
        plan->specs[1].requires[plan->specs[1].n_requires++] = 0;
        plan->specs[3].requires[plan->specs[3].n_requires++] = 0;
        plan->specs[3].requires[plan->specs[3].n_requires++] = 1;
        plan->specs[3].after[plan->specs[3].n_after++] = 2;
        return plan;
}

TEST(plan_chain) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        _cleanup_free_ ModuleVerdict *v = NULL;
        _cleanup_free_ char *chain = NULL;
        size_t first;
        Policy p;

        policy_init(&p);
        add(&p.global, RULE_DENY, "udp_tunnel", 3);
        check(policy_judge_plan(&p, SOURCE_ADMIN, plan, &v, &first) == 0);
        check(first == 3);
        check(v[0].denied && v[0].via == SIZE_MAX && v[0].self.rule->line == 3);
        check(v[1].denied && v[1].via == 0);
        check(!v[2].denied);
        check(v[3].denied && v[3].self.verdict == VERDICT_ALLOW);
        check(policy_chain(plan, v, 3, &chain) == 0);
        check_streq(chain, "vxlan needs udp_tunnel, denied by /etc/modgate/modgate.conf.d/50-test.conf:3 "
                    "(Deny=udp_tunnel)");
        policy_done(&p);
}

TEST(plan_softdep) {
        _cleanup_(plan_freep) Plan *plan = make_plan(), *kept = NULL;
        _cleanup_free_ ModuleVerdict *v = NULL;
        _cleanup_free_ char *chain = NULL;
        bool drop[4] = {};
        size_t first;
        Policy p;

        policy_init(&p);
        set_default_deny(&p.sources[SOURCE_UDEV], 8);
        add(&p.sources[SOURCE_UDEV], RULE_ALLOW, "*udp_tunnel", 9);
        add(&p.sources[SOURCE_UDEV], RULE_ALLOW, "vxlan", 9);
        check(policy_judge_plan(&p, SOURCE_UDEV, plan, &v, &first) == 0);
        check(first == SIZE_MAX);
        check(v[2].denied && !v[0].denied && !v[1].denied && !v[3].denied);
        check(policy_chain(plan, v, 2, &chain) == 0);
        check_streq(chain, "tun, which no Allow= admits under /etc/modgate/modgate.conf:8 (Default=deny)");

        for (size_t i = 0; i < 4; i++)
                drop[i] = v[i].denied;
        check(plan_filter(plan, drop, &kept) == 0);
        check(kept->n_specs == 3);
        check_streq(kept->specs[2].name, "vxlan");
        check(kept->specs[2].n_requires == 2 && kept->specs[2].requires[1] == 1);
        check(kept->specs[2].n_after == 0);
        check(kept->specs[1].n_requires == 1 && kept->specs[1].requires[0] == 0);

        /* A hard dependency of what is kept cannot be dropped. */
        kept = plan_free(kept);
        drop[0] = true;
        check(plan_filter(plan, drop, &kept) == -EINVAL);
        policy_done(&p);
}

/* A softdep post: comes after its module and names it in its after[]: kept when its module is. */
TEST(plan_softdep_post) {
        static const char *const names[] = { "pre", "m", "post" };
        static const Role roles[] = { ROLE_SOFTDEP_PRE, ROLE_REQUESTED, ROLE_SOFTDEP_POST };
        _cleanup_(plan_freep) Plan *plan = calloc(1, sizeof(Plan)), *kept = NULL;
        bool drop[3] = { true, false, false };

        check(plan);
        plan->specs = calloc(3, sizeof(ModuleSpec));
        plan->blacklisted = calloc(1, sizeof(char *));
        check(plan->specs && plan->blacklisted);
        plan->n_specs = 3;
        for (size_t i = 0; i < 3; i++) {
                plan->specs[i] = (ModuleSpec) { .name = strdup(names[i]), .role = roles[i] };
                plan->specs[i].requires = calloc(1, sizeof(size_t));
                plan->specs[i].after = calloc(1, sizeof(size_t));
        }
        plan->specs[1].after[plan->specs[1].n_after++] = 0;
        plan->specs[2].after[plan->specs[2].n_after++] = 1;

        check(plan_filter(plan, drop, &kept) == 0);
        check(kept->n_specs == 2);
        check_streq(kept->specs[0].name, "m");
        check_streq(kept->specs[1].name, "post");
        check(kept->specs[0].n_after == 0);
        check(kept->specs[1].n_after == 1 && kept->specs[1].after[0] == 0);
}

/* A key is looked up with '-' read as '_' (libkmod's alias_normalize()): so is a DenyRequest= rule. */
TEST(request_key_spelling) {
        Policy p;

        policy_init(&p);
        add(&p.global, RULE_DENY_REQUEST, "crypto-ecdh-nist-p*", 1);
        add(&p.global, RULE_DENY_REQUEST, "net_pf_38", 2);
        check(policy_check_request(&p, SOURCE_KERNEL, "crypto-ecdh_nist_p256").verdict == VERDICT_DENY);
        check(policy_check_request(&p, SOURCE_KERNEL, "crypto_ecdh-nist-p384").verdict == VERDICT_DENY);
        check(policy_check_request(&p, SOURCE_KERNEL, "net-pf-38").verdict == VERDICT_DENY);
        check(policy_check_request(&p, SOURCE_KERNEL, "net-pf-3").verdict == VERDICT_ALLOW);
        policy_done(&p);
}

/* The kernel strips a word's leading quote (next_arg()): the key behind it is still the admin's. */
TEST(parameters_quoted) {
        const char *word;
        Policy p;

        policy_init(&p);
        check(params(&p, "dummy", "numdummies=1", "\"numdummies=4\"", &word).admin_option);
        check_streq(word, "numdummies=4");
        check(params(&p, "dummy", "\"numdummies=1\"", "numdummies=4", &word).admin_option);
        check(params(&p, "dummy", "num_dummies=1", "num-dummies=\"4\"", &word).admin_option);
        check_streq(word, "num_dummies=4");
        check(params(&p, "snd", "model=x", "index=\"a b\"", &word).verdict == VERDICT_ALLOW);
        policy_done(&p);
}

int main(void) {
        RUN(empty_allows);
        RUN(deny_wins);
        RUN(clear_kind);
        RUN(source_deny);
        RUN(allowlist);
        RUN(source_allowlist);
        RUN(glob);
        RUN(request_keys);
        RUN(parameters);
        RUN(parameters_admin);
        RUN(cmdline);
        RUN(serialize);
        RUN(plan_chain);
        RUN(plan_softdep);
        RUN(plan_softdep_post);
        RUN(request_key_spelling);
        RUN(parameters_quoted);
        return tests_done();
}
