/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* varlink-floor: the IPC floor. An sd-varlink server set up as modgated sets up its own (the same
 * server flags and connection limits, the same io.modgate.Manager interface, so the same input
 * validation, socket activation with FileDescriptorName=varlink) whose Load only parses its
 * parameters as modgated's do and answers one module, already loaded, with the reply modgated gives
 * for it. Whatever modgated spends beyond this per request is modgate's own work.
 *
 *   varlink-floor MODULE PATH      answer every Load with MODULE at PATH */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "varlink-io.modgate.Manager.h"

static const char *arg_module, *arg_path;

typedef struct LoadParameters {
        const char *name, *modalias, *path, *parameters;
        sd_json_variant *context;
        uint64_t timeout_usec;
} LoadParameters;

static int vl_method_load(sd_varlink *link, sd_json_variant *parameters, sd_varlink_method_flags_t flags,
                          void *userdata) {
        static const sd_json_dispatch_field table[] = {
                { "name", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(LoadParameters, name), 0 },
                { "modalias", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, modalias), 0 },
                { "path", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, offsetof(LoadParameters, path), 0 },
                { "parameters", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string,
                  offsetof(LoadParameters, parameters), 0 },
                { "context", SD_JSON_VARIANT_OBJECT, sd_json_dispatch_variant_noref,
                  offsetof(LoadParameters, context), 0 },
                { "timeoutUSec", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint64,
                  offsetof(LoadParameters, timeout_usec), 0 },
                {}
        };
        LoadParameters p = {};
        int r;

        r = sd_varlink_dispatch(link, parameters, table, &p);
        if (r != 0)
                return r;
        if (!!p.name + !!p.modalias + !!p.path != 1)
                return sd_varlink_error_invalid_parameter_name(link, "name");

        return sd_varlink_replybo(
                        link,
                        SD_JSON_BUILD_PAIR("modules",
                                           SD_JSON_BUILD_ARRAY(SD_JSON_BUILD_OBJECT(
                                                   SD_JSON_BUILD_PAIR_STRING("name", arg_module),
                                                   SD_JSON_BUILD_PAIR_STRING("path", arg_path),
                                                   SD_JSON_BUILD_PAIR_STRING("outcome", "already_loaded"),
                                                   SD_JSON_BUILD_PAIR_STRING("role", "requested")))));
}

int main(int argc, char *argv[]) {
        sd_varlink_server *s = NULL;
        sd_event *e = NULL;
        struct rlimit rl;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: varlink-floor MODULE PATH\n");
                return 2;
        }
        arg_module = argv[1];
        arg_path = argv[2];

        /* As modgated: the soft fd limit raised to the hard one, and the connection limits below it. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        /* As modgated makes its loop: a default one costs a gettid() at every iteration. */
        r = sd_event_new(&e);
        if (r >= 0)
                r = sd_event_set_signal_exit(e, true);
        if (r >= 0)
                r = sd_varlink_server_new(&s, SD_VARLINK_SERVER_ACCOUNT_UID | SD_VARLINK_SERVER_INHERIT_USERDATA);
        if (r < 0)
                goto fail;
        (void) sd_varlink_server_set_description(s, "varlink-floor");
        (void) sd_varlink_server_set_connections_max(s, 4096);
        (void) sd_varlink_server_set_connections_per_uid_max(s, 4096);
        r = sd_varlink_server_add_interface(s, &vl_interface_io_modgate_Manager);
        if (r >= 0)
                r = sd_varlink_server_bind_method(s, "io.modgate.Manager.Load", vl_method_load);
        if (r >= 0)
                r = sd_varlink_server_listen_auto(s);
        if (r == 0)
                r = -EBADF;
        if (r >= 0)
                r = sd_varlink_server_attach_event(s, e, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                goto fail;
        (void) sd_notify(0, "READY=1");
        r = sd_event_loop(e);
        if (r < 0)
                goto fail;
        sd_varlink_server_unref(s);
        sd_event_unref(e);
        return 0;
fail:
        fprintf(stderr, "varlink-floor: %s\n", strerror(-r));
        return 1;
}
