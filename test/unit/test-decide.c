/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Every verdict of the Load decision, from plain data: no daemon, no index, no kernel. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "macro.h"
#include "policy.h"
#include "strv.h"
#include "tests.h"

#define CONF "/etc/modgate/modgate.conf.d/50-test.conf"

static void add(Policy *p, RuleKind kind, const char *pattern, unsigned line) {
        char option[128];

        snprintf(option, sizeof(option), "%s=%s",
                 kind == RULE_DENY ? "Deny" : kind == RULE_DENY_REQUEST ? "DenyRequest" : "Allow", pattern);
        check(policy_layer_add(&p->global, kind, pattern, CONF, line, option) == 0);
}

/* vxlan needs ip6_udp_tunnel and udp_tunnel, softdep pre tun, as the resolver plans it. */
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
                plan->specs[i].path = strdup("/usr/lib/modules/k/x.ko");
                plan->specs[i].requires = calloc(2, sizeof(size_t));
                plan->specs[i].after = calloc(1, sizeof(size_t));
        }
        plan->specs[1].requires[plan->specs[1].n_requires++] = 0;
        plan->specs[3].requires[plan->specs[3].n_requires++] = 0;
        plan->specs[3].requires[plan->specs[3].n_requires++] = 1;
        plan->specs[3].after[plan->specs[3].n_after++] = 2;
        return plan;
}

static const char *param(const DecisionStep *s, const char *key) {
        sd_json_variant *v = sd_json_variant_by_key(s->error_parameters, key);

        return v && sd_json_variant_is_string(v) ? sd_json_variant_string(v) : NULL;
}

/* The decision on a request by name for vxlan, resolved to plan. */
static LoadDecision decide_vxlan(const Policy *p, const Plan *plan, const char *parameters) {
        LoadInput in = {
                .name = "vxlan",
                .source = SOURCE_ADMIN,
                .parameters = parameters,
                .policy = p,
                .resolved = true,
                .plan = plan,
        };
        LoadDecision d;

        check(load_decide(&in, &d) == 0);
        return d;
}

TEST(allowed) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadDecision d;
        Policy p;

        policy_init(&p);
        d = decide_vxlan(&p, plan, NULL);
        check(d.verdict == LOAD_ALLOW && d.n_steps == 0 && d.decided == 0 && !d.needs_plan);
        check_streq(d.key_policy, "allow");
        check(d.modules && !d.modules[3].denied && !d.plan && !d.denied);
        check(!load_decision_first(&d));
        load_decision_done(&d);
        policy_done(&p);
}

/* The index is asked only when nothing refused before it. */
TEST(needs_plan) {
        LoadInput in = { .modalias = "net-pf-38", .source = SOURCE_KERNEL };
        LoadDecision d;
        Policy p;

        policy_init(&p);
        in.policy = &p;
        check(load_decide(&in, &d) == 0);
        check(d.needs_plan && d.verdict == LOAD_ALLOW && d.n_steps == 0);
        load_decision_done(&d);

        add(&p, RULE_DENY_REQUEST, "net-pf-*", 5);
        check(load_decide(&in, &d) == 0);
        check(!d.needs_plan && d.verdict == LOAD_DENIED);
        load_decision_done(&d);

        /* A would-deny refuses nothing: the index is asked. */
        p.mode = POLICY_PERMISSIVE;
        check(load_decide(&in, &d) == 0);
        check(d.needs_plan && d.verdict == LOAD_ALLOW && d.n_steps == 1 && d.steps[0].would);
        load_decision_done(&d);
        policy_done(&p);
}

TEST(sealed) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadInput in = { .name = "vxlan", .source = SOURCE_ADMIN, .seal = KERNEL_SEALED, .resolved = true,
                         .plan = plan };
        LoadDecision d;
        Policy p;

        policy_init(&p);
        add(&p, RULE_DENY_REQUEST, "vxlan", 7);
        in.policy = &p;
        check(load_decide(&in, &d) == 0);
        /* Before anything else; the rest is still there for Explain, and nothing of it is recorded. */
        check(d.verdict == LOAD_SEALED && d.decided == 0 && d.n_steps == 2);
        check_streq(d.steps[0].error, "io.modgate.Manager.Sealed");
        check_streq(d.steps[0].reason, "the kernel is sealed (kernel.modules_disabled=1)");
        check(d.steps[0].record == DECISION_RECORD_NONE);
        check(load_decision_first(&d) == d.steps);
        check_streq(d.key_policy, "deny");
        load_decision_done(&d);

        in.seal = KERNEL_SEALING;
        in.resolved = false;
        in.plan = NULL;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_SEALED && !d.needs_plan);
        check_streq(d.steps[0].reason, "the kernel is being sealed");
        load_decision_done(&d);
        policy_done(&p);
}

TEST(denied_by_key) {
        LoadInput in = { .modalias = "net-pf-38", .source = SOURCE_KERNEL };
        LoadDecision d;
        Policy p;

        policy_init(&p);
        add(&p, RULE_DENY_REQUEST, "net-pf-*", 5);
        in.policy = &p;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_DENIED && d.decided == 0 && d.n_steps == 1);
        check_streq(d.key_policy, "deny");
        check_streq(d.steps[0].error, "io.modgate.Manager.PolicyDenied");
        check_streq(param(d.steps, "request"), "net-pf-38");
        check_streq(param(d.steps, "rule"), CONF ":5 (DenyRequest=net-pf-*)");
        check_streq(param(d.steps, "reason"),
                    "request net-pf-38 denied by " CONF ":5 (DenyRequest=net-pf-*)");
        check(d.steps[0].record == DECISION_RECORD_POLICY && !d.steps[0].keep && !d.steps[0].would);
        check(d.steps[0].module == SIZE_MAX);
        load_decision_done(&d);

        /* [Policy]'s DenyRequest= is for every source. */
        in.source = SOURCE_ADMIN;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_DENIED);
        load_decision_done(&d);
        policy_done(&p);
}

TEST(not_found) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadInput in = { .name = "nothing", .source = SOURCE_ADMIN, .resolved = true,
                         .resolve_error = -ENOENT };
        sd_json_variant *b;
        LoadDecision d;
        Policy p;

        policy_init(&p);
        in.policy = &p;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_NOT_FOUND && d.n_steps == 1);
        check_streq(d.steps[0].error, "io.modgate.Manager.ModuleNotFound");
        check_streq(param(d.steps, "name"), "nothing");
        check(!sd_json_variant_by_key(d.steps[0].error_parameters, "blacklisted"));
        check_streq(d.steps[0].reason, "no module matches");
        check(d.steps[0].record == DECISION_RECORD_NOT_FOUND && !d.steps[0].blacklisted);
        check(!d.modules);
        load_decision_done(&d);

        /* Only blacklisted modules match an alias: named in the reply and the record. */
        check(strv_extend(&plan->blacklisted, "pcspkr") >= 0);
        plan->n_blacklisted = 1;
        in = (LoadInput) { .modalias = "platform:pcspkr", .source = SOURCE_UDEV, .policy = &p,
                           .resolved = true, .resolve_error = -ENOENT, .plan = plan };
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_NOT_FOUND);
        check_streq(param(d.steps, "modalias"), "platform:pcspkr");
        b = sd_json_variant_by_key(d.steps[0].error_parameters, "blacklisted");
        check(b && sd_json_variant_elements(b) == 1);
        check_streq(sd_json_variant_string(sd_json_variant_by_index(b, 0)), "pcspkr");
        check(strv_equal(d.steps[0].blacklisted, (char *[]) { (char *) "pcspkr", NULL }));
        check_streq(d.steps[0].reason, "only modules that modprobe.d blacklists match");
        load_decision_done(&d);
        policy_done(&p);
}

/* A module blacklisted by name is hidden from the boot list and udev, as their own loaders hide it;
 * never from the administrator's (modprobe's), nor the kernel's. */
TEST(blacklisted_by_source) {
        static const struct {
                RequestSource source;
                LoadVerdict verdict;
        } cases[] = {
                { SOURCE_BOOT, LOAD_NOT_FOUND },
                { SOURCE_UDEV, LOAD_NOT_FOUND },
                { SOURCE_ADMIN, LOAD_ALLOW },
                { SOURCE_KERNEL, LOAD_ALLOW },
        };
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadDecision d;
        Policy p;

        policy_init(&p);
        plan->key_blacklisted = true;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                LoadInput in = { .name = "vxlan", .source = cases[i].source, .policy = &p, .resolved = true,
                                 .plan = plan };

                check(load_decide(&in, &d) == 0);
                check(d.verdict == cases[i].verdict);
                if (d.verdict == LOAD_NOT_FOUND) {
                        check_streq(param(d.steps, "name"), "vxlan");
                        check(strv_equal(d.steps[0].blacklisted, (char *[]) { (char *) "vxlan", NULL }));
                        check_streq(d.steps[0].reason, "only modules that modprobe.d blacklists match");
                }
                load_decision_done(&d);
        }

        /* A file is the module its name names: the same blacklist, the module's name in the reply. */
        LoadInput in = { .path = "/tmp/vxlan.ko", .source = SOURCE_BOOT, .policy = &p, .resolved = true,
                         .plan = plan };
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_NOT_FOUND && !d.key_policy);
        check_streq(param(d.steps, "name"), "vxlan");
        load_decision_done(&d);
        policy_done(&p);
}

TEST(index_failures) {
        LoadInput in = { .name = "vxlan", .source = SOURCE_ADMIN, .resolved = true, .index_error = -EIO };
        sd_json_variant *e;
        LoadDecision d;
        Policy p;

        policy_init(&p);
        in.policy = &p;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_FAILED);
        check_streq(d.steps[0].error, "io.modgate.Manager.LoadFailed");
        check_streq(param(d.steps, "module"), "vxlan");
        e = sd_json_variant_by_key(d.steps[0].error_parameters, "errno");
        check(e && sd_json_variant_integer(e) == EIO);
        check_streq(param(d.steps, "errnoName"), "EIO");
        check(sd_json_variant_elements(sd_json_variant_by_key(d.steps[0].error_parameters, "modules")) == 0);
        load_decision_done(&d);

        in.index_error = 0;
        in.resolve_error = -ELOOP;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_FAILED);
        check_streq(param(d.steps, "reason"), "the module index has a dependency loop");
        check(!sd_json_variant_by_key(d.steps[0].error_parameters, "errno"));
        load_decision_done(&d);

        in.resolve_error = -ENOMEM;
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_ERROR && d.error == -ENOMEM && !d.steps[0].error);
        load_decision_done(&d);

        in = (LoadInput) { .path = "/tmp/not a module", .source = SOURCE_ADMIN, .policy = &p,
                           .resolved = true, .resolve_error = -EINVAL };
        check(load_decide(&in, &d) == 0);
        check(d.verdict == LOAD_INVALID_PATH);
        check_streq(d.steps[0].error, "io.modgate.Manager.InvalidPath");
        check_streq(param(d.steps, "path"), "/tmp/not a module");
        check_streq(param(d.steps, "reason"), "file name is not a module name");
        load_decision_done(&d);
        policy_done(&p);
}

/* A denied hard dependency denies what needs it: the chain is the reason. */
TEST(denied_by_plan_entry) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadDecision d;
        Policy p;

        policy_init(&p);
        add(&p, RULE_DENY, "udp_tunnel", 3);
        d = decide_vxlan(&p, plan, NULL);
        check(d.verdict == LOAD_DENIED && d.n_steps == 1 && d.decided == 0);
        check(d.steps[0].module == 3 && d.steps[0].keep && d.steps[0].record == DECISION_RECORD_POLICY);
        check_streq(d.steps[0].error, "io.modgate.Manager.PolicyDenied");
        check_streq(param(d.steps, "module"), "vxlan");
        check_streq(param(d.steps, "rule"), CONF ":3 (Deny=udp_tunnel)");
        check_streq(param(d.steps, "reason"),
                    "vxlan needs udp_tunnel, denied by " CONF ":3 (Deny=udp_tunnel)");
        check(d.modules[0].denied && d.modules[1].denied && !d.modules[2].denied && d.modules[3].denied);
        load_decision_done(&d);
        policy_done(&p);
}

/* Permissive: every denial recorded as would-deny, the load goes on; Explain names the request's. */
TEST(would_deny) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        const DecisionStep *first;
        LoadDecision d;
        Policy p;

        policy_init(&p);
        p.mode = POLICY_PERMISSIVE;
        add(&p, RULE_DENY, "udp_tunnel", 3);
        add(&p, RULE_DENY_REQUEST, "vxlan", 4);
        d = decide_vxlan(&p, plan, NULL);
        check(d.verdict == LOAD_ALLOW && d.decided == d.n_steps && !d.plan && !d.denied);
        /* The key, then udp_tunnel, ip6_udp_tunnel (through it) and vxlan, in plan order. */
        check(d.n_steps == 4);
        for (size_t i = 0; i < d.n_steps; i++)
                check(d.steps[i].would && d.steps[i].record == DECISION_RECORD_POLICY);
        check(d.steps[1].module == 0 && d.steps[1].verdict == LOAD_ALLOW);
        check(d.steps[2].module == 1 && d.steps[2].verdict == LOAD_ALLOW);
        check(d.steps[3].module == 3 && d.steps[3].verdict == LOAD_DENIED);
        first = load_decision_first(&d);
        check(first == d.steps && first->would);
        check_streq(first->reason, "request vxlan denied by " CONF ":4 (DenyRequest=vxlan)");
        load_decision_done(&d);
        policy_done(&p);
}

/* A denied softdep is left out, the request goes on without it. */
TEST(softdep_left_out) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        sd_json_variant *e;
        LoadDecision d;
        Policy p;

        policy_init(&p);
        add(&p, RULE_DENY, "tun", 9);
        d = decide_vxlan(&p, plan, NULL);
        check(d.verdict == LOAD_ALLOW && d.n_steps == 1 && d.decided == 1);
        check(d.steps[0].module == 2 && d.steps[0].verdict == LOAD_ALLOW);
        check(!d.steps[0].would && d.steps[0].keep);
        check(!load_decision_first(&d));
        check(d.plan && d.plan->n_specs == 3);
        for (size_t i = 0; i < d.plan->n_specs; i++)
                check(strcmp(d.plan->specs[i].name, "tun") != 0);
        check(sd_json_variant_elements(d.denied) == 1);
        e = sd_json_variant_by_index(d.denied, 0);
        check_streq(sd_json_variant_string(sd_json_variant_by_key(e, "name")), "tun");
        check_streq(sd_json_variant_string(sd_json_variant_by_key(e, "rule")), CONF ":9 (Deny=tun)");
        load_decision_done(&d);
        policy_done(&p);
}

TEST(parameters_refused) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadDecision d;
        Policy p;

        policy_init(&p);
        plan->specs[3].options = strdup("udp_port=4789");
        d = decide_vxlan(&p, plan, "udp-port=8472");
        check(d.verdict == LOAD_PARAMETER_DENIED && d.n_steps == 1);
        check_streq(d.steps[0].error, "io.modgate.Manager.ParameterDenied");
        check_streq(param(d.steps, "module"), "vxlan");
        check_streq(param(d.steps, "parameter"), "udp_port=8472");
        check(!param(d.steps, "rule") && !d.steps[0].rule);
        check_streq(param(d.steps, "reason"),
                    "udp_port=8472 would override the administrator's option for vxlan (\"udp_port=4789\", "
                    "from modprobe.d or the kernel command line)");
        check(d.steps[0].record == DECISION_RECORD_POLICY && !d.steps[0].keep && d.steps[0].module == 3);
        load_decision_done(&d);

        /* Without an option of the administrator's, RequestParameters=none refuses them by its rule. */
        free(plan->specs[3].options);
        plan->specs[3].options = NULL;
        p.request_parameters_any = false;
        check(policy_rule_set(&p.request_parameters_rule, RULE_PARAMETERS, NULL, CONF, 12,
                              "RequestParameters=none") == 0);
        d = decide_vxlan(&p, plan, "udp_port=8472");
        check(d.verdict == LOAD_PARAMETER_DENIED);
        check_streq(param(d.steps, "rule"), CONF ":12 (RequestParameters=none)");
        check_streq(param(d.steps, "reason"), "udp_port=8472 is not allowed for vxlan by " CONF
                    ":12 (RequestParameters=none)");
        load_decision_done(&d);

        /* Permissive: would-deny, and the load goes on with them. */
        p.mode = POLICY_PERMISSIVE;
        d = decide_vxlan(&p, plan, "udp_port=8472");
        check(d.verdict == LOAD_ALLOW && d.n_steps == 1 && d.steps[0].would);
        check(load_decision_first(&d)->verdict == LOAD_PARAMETER_DENIED);
        load_decision_done(&d);

        /* No parameters: nothing to refuse. */
        d = decide_vxlan(&p, plan, "");
        check(d.verdict == LOAD_ALLOW && d.n_steps == 0);
        load_decision_done(&d);
        policy_done(&p);
}

/* Parameters are for one module: a key that matches several is refused, whatever the mode. */
TEST(parameters_several) {
        _cleanup_(plan_freep) Plan *plan = make_plan();
        LoadDecision d;
        Policy p;

        policy_init(&p);
        p.mode = POLICY_PERMISSIVE;
        plan->specs[2].role = ROLE_REQUESTED;
        d = decide_vxlan(&p, plan, "debug=1");
        check(d.verdict == LOAD_PARAMETER_DENIED && !d.steps[0].would);
        check(d.steps[0].record == DECISION_RECORD_NONE);
        check_streq(param(d.steps, "module"), "tun");
        check_streq(param(d.steps, "parameter"), "debug=1");
        check_streq(param(d.steps, "reason"),
                    "parameters are for one module, and this request matches several: ask for the module "
                    "by name");
        load_decision_done(&d);
        policy_done(&p);
}

static ModuleEarly early(const ModuleSpec *spec, int state_error, ModuleState state, const char *denial) {
        ModuleEarly e;

        check(module_decide_early(spec, state_error, state, denial, denial ? EPERM : 0, &e) == 0);
        return e;
}

/* What a job knows before it opens a file: the kernel's state first, then an install command, then a
 * denial remembered for the file. */
TEST(module_early) {
        ModuleSpec spec = { .name = (char *) "vxlan", .path = (char *) "/usr/lib/modules/k/vxlan.ko" };
        ModuleEarly e;

        e = early(&spec, 0, MODULE_STATE_ABSENT, NULL);
        check(e.verdict == EARLY_LOAD);
        e = early(&spec, 0, MODULE_STATE_COMING, NULL);
        check(e.verdict == EARLY_COMING);
        e = early(&spec, 0, MODULE_STATE_LIVE, NULL);
        check(e.verdict == EARLY_DONE && e.outcome == OUTCOME_ALREADY_LOADED && !e.reason);
        e = early(&spec, 0, MODULE_STATE_GOING, NULL);
        check(e.verdict == EARLY_DONE && e.outcome == OUTCOME_FAILED && e.error == EBUSY);
        check_streq(e.reason, "module is being removed");
        module_early_done(&e);
        e = early(&spec, -EACCES, MODULE_STATE_ABSENT, NULL);
        check(e.outcome == OUTCOME_FAILED && e.error == EACCES);
        check_streq(e.reason, "cannot read module state: Permission denied");
        module_early_done(&e);

        e = early(&spec, 0, MODULE_STATE_ABSENT, "not on a trusted root");
        check(e.verdict == EARLY_DONE && e.outcome == OUTCOME_DENIED && e.cached && e.error == EPERM);
        check_streq(e.reason, "not on a trusted root");
        module_early_done(&e);

        /* Install command refused: also while another loader loads it, which may give up. */
        spec.install_command = (char *) "/sbin/modprobe --ignore-install vxlan";
        for (ModuleState s = MODULE_STATE_ABSENT; s <= MODULE_STATE_COMING; s++) {
                if (s == MODULE_STATE_LIVE)
                        continue;
                e = early(&spec, 0, s, "not on a trusted root");
                check(e.verdict == EARLY_DONE && e.outcome == OUTCOME_DENIED && e.command && !e.cached);
                check(e.error == EPERM);
                check_streq(e.reason, "modprobe.d has an install command for this module (/sbin/modprobe "
                            "--ignore-install vxlan); modgate never runs commands");
                module_early_done(&e);
        }
        /* Live already: nothing to run. */
        e = early(&spec, 0, MODULE_STATE_LIVE, NULL);
        check(e.outcome == OUTCOME_ALREADY_LOADED && !e.command);

        spec.path = NULL;
        e = early(&spec, 0, MODULE_STATE_ABSENT, NULL);
        check(e.verdict == EARLY_DONE && e.outcome == OUTCOME_BUILTIN);
}

TEST(modinfo_before_load) {
        /* Manifest and dm-verity evidence bind each path to its bytes: the file's name is checked, and
         * the .modinfo waits until after the load. */
        check(!modinfo_needed_before_load(EVIDENCE_MANIFEST, false, false));
        check(!modinfo_needed_before_load(EVIDENCE_VERITY, false, false));
        /* An fs-verity digest vouches for bytes under any name; read-only and ownership evidence say
         * nothing of which bytes a name holds. */
        check(modinfo_needed_before_load(EVIDENCE_VERITY, true, false));
        check(modinfo_needed_before_load(EVIDENCE_READ_ONLY, false, false));
        check(modinfo_needed_before_load(EVIDENCE_OWNERSHIP, false, false));
        check(modinfo_needed_before_load(_EVIDENCE_INVALID, false, false));
        /* A signer rule reads the signature, inside the compressed file, before the load, whatever
         * the evidence. */
        check(modinfo_needed_before_load(EVIDENCE_MANIFEST, false, true));
        check(modinfo_needed_before_load(EVIDENCE_VERITY, false, true));
}

int main(void) {
        RUN(allowed);
        RUN(needs_plan);
        RUN(sealed);
        RUN(denied_by_key);
        RUN(not_found);
        RUN(blacklisted_by_source);
        RUN(index_failures);
        RUN(denied_by_plan_entry);
        RUN(would_deny);
        RUN(softdep_left_out);
        RUN(parameters_refused);
        RUN(parameters_several);
        RUN(module_early);
        RUN(modinfo_before_load);
        return tests_done();
}
