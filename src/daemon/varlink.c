/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "journal.h"
#include "loader.h"
#include "log.h"
#include "module-name.h"
#include "varlink-io.modgate.Manager.h"
#include "varlink.h"


typedef struct LoadParameters {
        const char *name;
} LoadParameters;

static int build_results(const ModuleResult *results, size_t n, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *array = NULL;
        int r;

        r = sd_json_variant_new_array(&array, NULL, 0);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const ModuleResult *m = results + i;

                r = sd_json_variant_append_arraybo(
                                &array,
                                SD_JSON_BUILD_PAIR_STRING("name", m->name),
                                SD_JSON_BUILD_PAIR_CONDITION(!!m->path, "path", SD_JSON_BUILD_STRING(m->path)),
                                SD_JSON_BUILD_PAIR_STRING("outcome", outcome_to_string(m->outcome)),
                                SD_JSON_BUILD_PAIR_CONDITION(!!m->reason, "reason",
                                                             SD_JSON_BUILD_STRING(m->reason)),
                                SD_JSON_BUILD_PAIR_CONDITION(m->error != 0, "errno",
                                                             SD_JSON_BUILD_INTEGER(m->error)),
                                SD_JSON_BUILD_PAIR_CONDITION(m->error != 0, "errnoName",
                                                             SD_JSON_BUILD_STRING(strerrorname_np(m->error))));
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(array);
        return 0;
}

static int reply_results(sd_varlink *link, const ModuleResult *results, size_t n) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *array = NULL;
        const ModuleResult *last = n > 0 ? results + n - 1 : NULL;
        int r;

        r = build_results(results, n, &array);
        if (r < 0)
                return r;

        if (!last || module_results_ok(results, n))
                return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_VARIANT("modules", array));

        if (last->outcome == OUTCOME_DENIED)
                return sd_varlink_errorbo(
                                link, "io.modgate.Manager.UntrustedOrigin",
                                SD_JSON_BUILD_PAIR_STRING("module", last->name),
                                SD_JSON_BUILD_PAIR_CONDITION(!!last->path, "path", SD_JSON_BUILD_STRING(last->path)),
                                SD_JSON_BUILD_PAIR_STRING("reason", last->reason ?: "untrusted origin"),
                                SD_JSON_BUILD_PAIR_VARIANT("modules", array));

        return sd_varlink_errorbo(
                        link, "io.modgate.Manager.LoadFailed",
                        SD_JSON_BUILD_PAIR_STRING("module", last->name),
                        SD_JSON_BUILD_PAIR_STRING("reason", last->reason ?: "load failed"),
                        SD_JSON_BUILD_PAIR_CONDITION(last->error != 0, "errno", SD_JSON_BUILD_INTEGER(last->error)),
                        SD_JSON_BUILD_PAIR_CONDITION(last->error != 0, "errnoName",
                                                     SD_JSON_BUILD_STRING(strerrorname_np(last->error))),
                        SD_JSON_BUILD_PAIR_VARIANT("modules", array));
}

static int vl_method_load(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        static const sd_json_dispatch_field dispatch_table[] = {
                { "name", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, name), SD_JSON_MANDATORY },
                {}
        };
        Manager *m = userdata;
        LoadParameters p = {};
        ModuleSpec *specs = NULL;
        ModuleResult *results = NULL;
        size_t n_specs = 0, n_results = 0;
        Requester who = {};
        LoadContext ctx = {
                .root = m->root,
                .kernel_compression = m->kernel_compression,
        };
        int r;

        (void) flags;

        r = sd_varlink_dispatch(link, parameters, dispatch_table, &p);
        if (r != 0)
                return r;

        /* Checked before anything else: no lookup, no file access for a name no module can have. */
        if (!module_name_is_valid(p.name))
                return sd_varlink_errorbo(link, "io.modgate.Manager.InvalidName",
                                          SD_JSON_BUILD_PAIR_STRING("name", p.name));

        who.request = p.name;
        who.have_peer = sd_varlink_get_peer_pid(link, &who.pid) >= 0 &&
                        sd_varlink_get_peer_uid(link, &who.uid) >= 0;

        r = resolver_resolve(m->resolver, p.name, &specs, &n_specs);
        if (r == -ENOENT) {
                log_info("Load %s: no such module in %s.", p.name, m->root->path);
                return sd_varlink_errorbo(link, "io.modgate.Manager.ModuleNotFound",
                                          SD_JSON_BUILD_PAIR_STRING("name", p.name));
        }
        if (r < 0)
                return log_error_errno(r, "Failed to resolve %s: %m", p.name);

        r = loader_run(&ctx, specs, n_specs, &results, &n_results);
        module_specs_free(specs, n_specs);
        if (r < 0)
                return log_error_errno(r, "Failed to load %s: %m", p.name);

        for (size_t i = 0; i < n_results; i++)
                journal_record_module(&who, results + i);

        r = reply_results(link, results, n_results);
        module_results_free(results, n_results);
        return r;
}

int manager_varlink_init(Manager *m) {
        _cleanup_(sd_varlink_server_unrefp) sd_varlink_server *s = NULL;
        int r;

        r = sd_varlink_server_new(&s, SD_VARLINK_SERVER_ROOT_ONLY | SD_VARLINK_SERVER_ACCOUNT_UID |
                                              SD_VARLINK_SERVER_INHERIT_USERDATA);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate varlink server: %m");

        sd_varlink_server_set_userdata(s, m);
        (void) sd_varlink_server_set_description(s, "modgated");
        (void) sd_varlink_server_set_info(s, "modgate", "modgate", PROJECT_VERSION, NULL);
        (void) sd_varlink_server_set_connections_max(s, VARLINK_CONNECTIONS_MAX);
        (void) sd_varlink_server_set_connections_per_uid_max(s, VARLINK_CONNECTIONS_PER_UID_MAX);

        r = sd_varlink_server_add_interface(s, &vl_interface_io_modgate_Manager);
        if (r < 0)
                return log_error_errno(r, "Failed to add varlink interface: %m");

        r = sd_varlink_server_bind_method(s, "io.modgate.Manager.Load", vl_method_load);
        if (r < 0)
                return log_error_errno(r, "Failed to bind varlink method: %m");

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
