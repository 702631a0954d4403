/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "connections.h"
#include "kernel.h"
#include "log.h"
#include "method-describe.h"
#include "method-explain.h"
#include "method-load.h"
#include "method-parameters.h"
#include "method-seal.h"
#include "method-status.h"
#include "method-unload.h"
#include "module-name.h"
#include "peer.h"
#include "policy.h"
#include "record-history.h"
#include "record-journal.h"
#include "record.h"
#include "request.h"
#include "scheduler.h"
#include "strv.h"
#include "time-util.h"
#include "varlink-errors.h"
#include "varlink-io.modgate.Manager.h"
#include "varlink.h"

/* The record's "who asked", from the peer's verified identity. who borrows peer's strings. */
static void requester_set_peer(Requester *who, const PeerIdentity *peer) {
        who->have_peer = peer->known;
        who->pid = peer->pid;
        who->uid = peer->uid;
        who->unit = peer->unit;
        who->cgroup = peer->cgroup;
        who->comm = peer->comm[0] ? (char *) peer->comm : NULL;
}

/* Who asks decides what may be asked: refused, the peer gets PermissionDenied and the journal a
 * record of who it was and what it claimed. Returns 1 when allowed, else the reply's result. */
static int check_caller(Manager *m, sd_varlink *link, const PeerIdentity *peer, const AuthRequest *req,
                        const Requester *who, const char *method) {
        char buf[512];
        const char *why;

        why = authorize(peer, req, buf, sizeof(buf));
        if (!why)
                return 1;
        log_debug("Refused %s from pid %d: %s", method, (int) peer->pid, why);
        manager_record_refused_caller(m, who, method, why);
        return sd_varlink_errorbo(link, MANAGER_ERROR_PERMISSION_DENIED,
                                  SD_JSON_BUILD_PAIR_STRING("reason", why));
}

/* Who the peer is, into peer and who (which borrows peer's strings: peer must outlive it), and
 * whether it may make req. Returns 1 when it may, else the reply's result. */
static int identify_caller(Manager *m, sd_varlink *link, PeerIdentity *peer, const AuthRequest *req,
                           Requester *who, const char *method) {
        int r;

        r = peer_identify(m->peers, link, 0, peer);
        if (r < 0)
                return r;
        requester_set_peer(who, peer);
        return check_caller(m, link, peer, req, who, method);
}

/* No parameters may be given. Returns 1 to go on, else the reply's result. */
static int dispatch_none(sd_varlink *link, sd_json_variant *parameters) {
        MethodRefusal refusal;
        int r;

        r = method_parameters_none(parameters, &refusal);
        if (r < 0)
                return r;
        if (r > 0)
                return method_reply_refusal(link, &refusal);
        return 1;
}

/* The device of a udev request: the kernel's uevent of its SEQNUM, for that devpath and action (the
 * device may be gone by now: parport_pc's probe devices, a framebuffer a DRM driver replaced). An
 * event the log may have missed (before this start, lost to an overflow, forgotten) is sysfs's to
 * answer: the device must be there still. Returns 0 (*ret_exists false and why set when the kernel
 * sent no such event) or -ENOMEM. */
static int udev_device(Manager *m, const RequestContext *c, bool *ret_exists, char **ret_modalias,
                       char **ret_subsystem, char *why, size_t size) {
        const Uevent *u = NULL;
        UeventMatch match;

        if (!m->uevents)
                return peer_read_device(c->devpath, ret_exists, ret_modalias, ret_subsystem);
        (void) uevent_log_read(m->uevents);
        match = uevent_log_match(m->uevents, c->seqnum, c->devpath, c->action, &u, why, size);
        if (match == UEVENT_UNKNOWN)
                return peer_read_device(c->devpath, ret_exists, ret_modalias, ret_subsystem);
        *ret_exists = match == UEVENT_MATCH;
        if (match != UEVENT_MATCH)
                return 0;
        if (u->modalias && !(*ret_modalias = strdup(u->modalias)))
                return -ENOMEM;
        if (u->subsystem && !(*ret_subsystem = strdup(u->subsystem)))
                return -ENOMEM;
        return 0;
}

/* Load's and Explain's parameters, checked. Returns 1 with *p set, else the reply's result. */
static int dispatch_load_parameters(sd_varlink *link, sd_json_variant *parameters, LoadParameters *p) {
        LoadRefusal refusal = {};
        int r;

        r = load_parameters_parse(parameters, p, &refusal);
        if (r < 0)
                return r;
        if (r > 0) {
                r = load_reply_refusal(link, p, &refusal);
                return r < 0 ? r : 0;
        }
        return 1;
}

/* Who asks for a Load, as the request says; the peer's identity is added after. Borrows p's strings. */
static Requester load_requester(const LoadParameters *p) {
        return (Requester) {
                .name = (char *) p->name,
                .modalias = (char *) p->modalias,
                .path = (char *) p->path,
                .source = p->context.source,
                .source_given = p->context_json && sd_json_variant_by_key(p->context_json, "source"),
                .devpath = (char *) p->context.devpath,
                .subsystem = (char *) p->context.subsystem,
                .action = (char *) p->context.action,
                .file = (char *) p->context.file,
                .seqnum = p->context.seqnum,
        };
}

static int vl_method_load(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        _cleanup_(load_judgement_done) LoadJudgement judgement = {};
        Manager *m = userdata;
        LoadParameters p = {};
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *device_modalias = NULL, *device_subsystem = NULL;
        char device_unknown[512] = "";
        bool device_exists = false;
        uint64_t arrival_usec = now_usec();
        Requester who;
        int r;

        manager_touch(m);
        r = dispatch_load_parameters(link, parameters, &p);
        if (r <= 0)
                return r;

        if (m->n_requests >= REQUESTS_MAX)
                return sd_varlink_errorbo(link, MANAGER_ERROR_BUSY,
                                          SD_JSON_BUILD_PAIR_STRING("reason", "too many requests pending"));

        who = load_requester(&p);
        r = peer_identify(m->peers, link,
                          who.source_given && p.context.source == SOURCE_KERNEL ? PEER_KERNEL_HELPER : 0,
                          &peer);
        if (r < 0)
                return r;
        requester_set_peer(&who, &peer);

        if (streq_ptr(peer.unit, UDEV_UNIT))
                manager_check_udevd(m, true);

        /* udevd without CAP_SYS_MODULE asks for a device: what that device is, the kernel said. */
        if (peer.known && !peer_has_cap_sys_module(&peer) && streq_ptr(peer.unit, UDEV_UNIT) &&
            p.context.devpath) {
                r = udev_device(m, &p.context, &device_exists, &device_modalias, &device_subsystem,
                                device_unknown, sizeof(device_unknown));
                if (r < 0)
                        return r;
                /* A name, not the device's modalias: one that udev's rules, as they are now, pass. */
                if (p.name)
                        (void) manager_read_udev_rules(m);
        }
        r = check_caller(m, link, &peer,
                         &(AuthRequest) {
                                 .method = AUTH_LOAD,
                                 .name = p.name,
                                 .modalias = p.modalias,
                                 .path = p.path,
                                 .parameters = p.parameters,
                                 .source_given = who.source_given,
                                 .source = p.context.source,
                                 .devpath = p.context.devpath,
                                 .device_exists = device_exists,
                                 .device_unknown = device_unknown[0] ? device_unknown : NULL,
                                 .device_modalias = device_modalias,
                                 .device_subsystem = device_subsystem,
                                 .rule_names = m->udev_rule_names,
                                 .n_rule_names = m->n_udev_rule_names,
                         },
                         &who, "Load");
        if (r <= 0)
                return r;
        manager_record_request(m, "Load", &who);

        r = load_judge(m, &p, seal_kernel(m), false, &judgement);
        if (r < 0)
                return log_error_errno(r, "Failed to decide on the request: %m");
        if (judgement.decision.verdict == LOAD_SEALED)
                return seal_refuse(m, link, &who, "Load");
        r = load_judgement_apply(m, link, &who, &judgement);
        if (r <= 0)
                return r;
        return load_start(m, link, flags, &p, &who, load_judgement_plan(&judgement),
                          judgement.decision.denied, arrival_usec);
}

/* The one parameter of Unload and Describe, a module name, checked and made canonical. Returns 1 with
 * *ret set, else the reply's result. */
static int dispatch_module_name(sd_varlink *link, sd_json_variant *parameters, char **ret) {
        MethodRefusal refusal;
        int r;

        r = method_parameters_module_name(parameters, ret, &refusal);
        if (r < 0)
                return r;
        if (r > 0)
                return method_reply_refusal(link, &refusal);
        return 1;
}

static int vl_method_unload(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *name = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        int r;

        manager_touch(userdata);
        r = dispatch_module_name(link, parameters, &name);
        if (r <= 0)
                return r;
        who.name = name;
        r = identify_caller(userdata, link, &peer, &(AuthRequest) { .method = AUTH_UNLOAD, .name = name },
                            &who, "Unload");
        if (r <= 0)
                return r;
        manager_record_request(userdata, "Unload", &who);
        if (seal_refuses(userdata))
                return seal_refuse(userdata, link, &who, "Unload");

        return manager_unload(userdata, link, &who, name);
}

/* The read-only methods: root, or ReadGroup=. who says what was asked, for a refusal's record.
 * Returns 1 when allowed, else the reply's result. */
static int check_reader(Manager *m, sd_varlink *link, const char *method, Requester *who) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};

        return identify_caller(m, link, &peer,
                               &(AuthRequest) { .method = AUTH_READ,
                                                .have_read_group = m->config.have_read_group,
                                                .read_group = m->config.read_group },
                               who, method);
}

static int vl_method_explain(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                             void *userdata) {
        Manager *m = userdata;
        LoadParameters p = {};
        Requester who;
        int r;

        manager_touch(m);
        r = dispatch_load_parameters(link, parameters, &p);
        if (r <= 0)
                return r;

        who = (Requester) { .name = (char *) p.name,
                            .modalias = (char *) p.modalias,
                            .path = (char *) p.path,
                            .source = p.context.source,
                            .seqnum = -1 };
        r = check_reader(m, link, "Explain", &who);
        if (r <= 0)
                return r;

        return explain_start(m, link, &p);
}

/* A read-only method without parameters: none may be given, and the caller must be a reader. Returns
 * 1 to go on, else the reply's result. */
static int dispatch_reader(Manager *m, sd_varlink *link, sd_json_variant *parameters, const char *method) {
        int r;

        manager_touch(m);
        r = dispatch_none(link, parameters);
        if (r <= 0)
                return r;
        return check_reader(m, link, method, &(Requester) { .source = SOURCE_ADMIN, .seqnum = -1 });
}

static int vl_method_list(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *all = NULL;
        Manager *m = userdata;
        int r;

        r = dispatch_reader(m, link, parameters, "List");
        if (r <= 0)
                return r;
        r = history_list(m->history, &all);
        if (r < 0)
                return r;
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_VARIANT("modules", all));
}

static int vl_method_describe(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                              void *userdata) {
        _cleanup_free_ char *name = NULL;
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = dispatch_module_name(link, parameters, &name);
        if (r <= 0)
                return r;
        r = check_reader(m, link, "Describe",
                         &(Requester) { .name = name, .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        return manager_describe(m, link, name);
}

static int vl_method_reload(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_free_ char *error = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = dispatch_none(link, parameters);
        if (r <= 0)
                return r;
        r = identify_caller(m, link, &peer, &(AuthRequest) { .method = AUTH_RELOAD }, &who, "Reload");
        if (r <= 0)
                return r;

        r = manager_reload(m, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_varlink_errorbo(link, MANAGER_ERROR_CONFIGURATION_INVALID,
                                          SD_JSON_BUILD_PAIR_STRING("reason", error ?: strerror(-r)));
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_STRING("policyDigest", m->policy_digest),
                                  SD_JSON_BUILD_PAIR_STRING("mode",
                                                            policy_mode_to_string(m->config.policy.mode)));
}

static int vl_method_status(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                            void *userdata) {
        Manager *m = userdata;
        int r;

        r = dispatch_reader(m, link, parameters, "Status");
        if (r <= 0)
                return r;
        return status_start(m, link);
}

/* Monitor's and Seal's parameters: a list of module names, checked by parse. Returns 1 with *ret set,
 * else the reply's result. */
static int dispatch_names(sd_varlink *link, sd_json_variant *parameters,
                          int (*parse)(sd_json_variant *v, char ***ret, MethodRefusal *ret_refusal),
                          char ***ret) {
        MethodRefusal refusal;
        int r;

        r = parse(parameters, ret, &refusal);
        if (r < 0)
                return r;
        if (r > 0) {
                r = method_reply_refusal(link, &refusal);
                return r < 0 ? r : 0;
        }
        return 1;
}

static int vl_method_monitor(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                             void *userdata) {
        _cleanup_strv_free_ char **modules = NULL;
        Manager *m = userdata;
        int r;

        manager_touch(m);
        r = dispatch_names(link, parameters, method_parameters_monitor, &modules);
        if (r <= 0)
                return r;
        if (!(flags & SD_VARLINK_METHOD_MORE))
                return sd_varlink_error(link, SD_VARLINK_ERROR_EXPECTED_MORE, NULL);
        r = check_reader(m, link, "Monitor", &(Requester) { .source = SOURCE_ADMIN, .seqnum = -1 });
        if (r <= 0)
                return r;
        r = monitors_add(m->monitors, link, TAKE_PTR(modules));
        if (r == -EBUSY)
                return sd_varlink_errorbo(link, MANAGER_ERROR_BUSY,
                                          SD_JSON_BUILD_PAIR_STRING("reason", "too many Monitor calls"));
        return r;
}

static void plans_free(Plan **plans, size_t n) {
        for (size_t i = 0; i < n; i++)
                plan_free(plans[i]);
        free(plans);
}

/* Seal's final list, each name judged as a Load of it is (DenyRequest=, the index, the policy), before
 * anything loads: the first refusal is the Seal's reply, and nothing is sealed. Returns 1 with a plan
 * of our own per name, else the reply's result. */
static int seal_judge(Manager *m, sd_varlink *link, const Requester *caller, char **names, Plan ***ret) {
        size_t n = strv_length(names), i;
        Plan **plans;
        int r = 1;

        plans = calloc(n ?: 1, sizeof(Plan *));
        if (!plans)
                return -ENOMEM;
        for (i = 0; r > 0 && i < n; i++) {
                _cleanup_(load_judgement_done) LoadJudgement j = {};
                LoadParameters p = { .name = names[i], .context = { .source = SOURCE_ADMIN, .seqnum = -1 } };
                Requester who = *caller;

                who.name = names[i];
                r = load_judge(m, &p, KERNEL_UNSEALED, false, &j);
                if (r >= 0)
                        r = load_judgement_apply(m, link, &who, &j);
                if (r <= 0)
                        break;
                /* A plan of the index's may go when the next name refreshes it: keep a copy. */
                plans[i] = TAKE_PTR(j.decision.plan);
                if (!plans[i]) {
                        _cleanup_free_ bool *none = calloc(j.input.plan->n_specs ?: 1, sizeof(bool));

                        r = none ? plan_filter(j.input.plan, none, plans + i) : -ENOMEM;
                        if (r >= 0)
                                r = 1;
                }
        }
        if (r <= 0) {
                plans_free(plans, n);
                return r;
        }
        *ret = plans;
        return 1;
}

static int vl_method_seal(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        _cleanup_(peer_identity_done) PeerIdentity peer = {};
        _cleanup_strv_free_ char **names = NULL;
        Requester who = { .source = SOURCE_ADMIN, .seqnum = -1 };
        Manager *m = userdata;
        Plan **plans = NULL;
        size_t n;
        int r;

        manager_touch(m);
        r = dispatch_names(link, parameters, method_parameters_seal, &names);
        if (r <= 0)
                return r;
        n = strv_length(names);

        r = identify_caller(m, link, &peer, &(AuthRequest) { .method = AUTH_SEAL }, &who, "Seal");
        if (r <= 0)
                return r;
        if (seal_refuses(m))
                return seal_refuse(m, link, &who, "Seal");

        r = seal_judge(m, link, &who, names, &plans);
        if (r <= 0)
                return r;
        r = seal_start(m, link, flags, &who, names, plans, n);
        plans_free(plans, n);
        return r;
}

int manager_varlink_init(Manager *m) {
        _cleanup_(sd_varlink_server_unrefp) sd_varlink_server *s = NULL;
        int r;

        assert(m);

        /* Not SD_VARLINK_SERVER_ROOT_ONLY: ReadGroup= may let others in, when the socket's mode does.
         * Each method checks its caller (authorize()). */
        r = sd_varlink_server_new(&s, SD_VARLINK_SERVER_ACCOUNT_UID | SD_VARLINK_SERVER_INHERIT_USERDATA);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate varlink server: %m");

        sd_varlink_server_set_userdata(s, m);
        (void) sd_varlink_server_set_description(s, "modgated");
        (void) sd_varlink_server_set_info(s, "modgate", "modgate", PROJECT_VERSION, NULL);
        r = manager_connections_init(m, s);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the connection limits: %m");

        r = sd_varlink_server_add_interface(s, &vl_interface_io_modgate_Manager);
        if (r < 0)
                return log_error_errno(r, "Failed to add varlink interface: %m");

        r = sd_varlink_server_bind_method_many(
                        s,
                        "io.modgate.Manager.Load", vl_method_load,
                        "io.modgate.Manager.Unload", vl_method_unload,
                        "io.modgate.Manager.Explain", vl_method_explain,
                        "io.modgate.Manager.List", vl_method_list,
                        "io.modgate.Manager.Describe", vl_method_describe,
                        "io.modgate.Manager.Reload", vl_method_reload,
                        "io.modgate.Manager.Status", vl_method_status,
                        "io.modgate.Manager.Monitor", vl_method_monitor,
                        "io.modgate.Manager.Seal", vl_method_seal);
        if (r < 0)
                return log_error_errno(r, "Failed to bind varlink methods: %m");

        if (m->listen_address) {
                r = sd_varlink_server_listen_address(s, m->listen_address, 0600);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on %s: %m", m->listen_address);
        } else {
                /* Adopts only sockets passed with FileDescriptorName=varlink. */
                r = sd_varlink_server_listen_auto(s);
                if (r < 0)
                        return log_error_errno(r, "Failed to take the varlink socket: %m");
                if (r == 0)
                        return log_error_errno(EBADF, "No socket named 'varlink' was passed "
                                               "(FileDescriptorName=varlink), and no --listen= was given.");
        }

        r = sd_varlink_server_attach_event(s, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach varlink server to the event loop: %m");

        m->varlink_server = TAKE_PTR(s);
        return 0;
}
