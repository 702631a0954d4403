/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "ctl-error.h"
#include "ctl-link.h"
#include "ctl-output.h"
#include "ctl-table.h"
#include "ctl.h"
#include "log.h"
#include "module-name.h"
#include "varlink-errors.h"

/* reload and seal: what changes the daemon or the kernel as a whole. */

int verb_reload(char **args, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        sd_json_variant *reply = NULL;
        int r;

        r = ctl_call_simple("reload", "io.modgate.Manager.Reload", &vl, &reply);
        if (r < 0)
                return r;
        if (json_output())
                json_dump(reply);
        else
                printf("policy %s (%s) in force\n", json_str(reply, "policyDigest") ?: "?",
                       json_str(reply, "mode") ?: "?");
        return 0;
}

static int seal_parameters(sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *names = NULL;

        for (char **name = arg_seal_load; name && *name; name++) {
                if (!module_name_is_valid(*name))
                        return ctl_log_refusal(*name, MANAGER_ERROR_INVALID_NAME, NULL);
                if (sd_json_variant_append_arrayb(&names, SD_JSON_BUILD_STRING(*name)) < 0)
                        return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        }
        if (sd_json_buildo(ret,
                           SD_JSON_BUILD_PAIR_CONDITION(!!names, "load", SD_JSON_BUILD_VARIANT(names))) < 0)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        return 0;
}

/* The final list's modules that did not load: the kernel is sealed all the same, but the run failed. */
static int seal_check_modules(sd_json_variant *modules) {
        int ret = 0;

        for (size_t i = 0;
             modules && sd_json_variant_is_array(modules) && i < sd_json_variant_elements(modules); i++) {
                sd_json_variant *m = sd_json_variant_by_index(modules, i);
                const char *outcome = json_str(m, "outcome");

                if (streq_ptr(outcome, "failed"))
                        ret = ret ?: ctl_fail(CTL_EXIT_LOAD_FAILED, EIO);
                else if (streq_ptr(outcome, "denied"))
                        ret = ret ?: ctl_fail(CTL_EXIT_DENIED, EPERM);
                else
                        continue;
                log_error("%s: %s before sealing: %s", json_str(m, "name") ?: "?", outcome,
                          json_str(m, "reason") ?: "?");
        }
        if (ret < 0)
                log_error("It cannot be loaded until the next boot. 'modgatectl describe NAME' shows its "
                          "record.");
        return ret;
}

static int seal_show(sd_json_variant *reply) {
        _cleanup_(table_freep) Table *t = table_new(MODULE_COLUMNS, module_headers);
        _cleanup_free_ char *pending = json_join(reply, "pending", " ");
        sd_json_variant *modules = sd_json_variant_by_key(reply, "modules");

        if (!t)
                return ctl_fail(CTL_EXIT_FAILURE, log_oom());
        if (json_output())
                json_dump(reply);
        else {
                if (table_add_modules(t, modules) < 0)
                        return -ENOMEM;
                if (table_rows(t) > 0)
                        table_print(t, stdout, arg_legend);
                if (pending)
                        printf("Loads in flight when sealed (each finished first or failed): %s\n", pending);
                printf("%sSealed%s: kernel.modules_disabled=1, no module can be loaded or unloaded until "
                       "reboot.\n",
                       ansi(ANSI_BLUE), ansi(ANSI_NORMAL));
        }
        return seal_check_modules(modules);
}

int verb_seal(char **args, size_t n) {
        _cleanup_(sd_varlink_flush_close_unrefp) sd_varlink *vl = NULL;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *p = NULL;
        sd_json_variant *reply = NULL;
        const char *error = NULL;
        int r;

        r = seal_parameters(&p);
        if (r >= 0)
                r = ctl_connect(&vl);
        if (r < 0)
                return r;
        /* The final list loads, and every load in flight is waited for: as long as the kernel takes. */
        (void) sd_varlink_set_relative_timeout(vl, UINT64_MAX);
        r = ctl_call(vl, "io.modgate.Manager.Seal", p, &reply, &error);
        if (r < 0)
                return r;
        if (error) {
                /* A name of the final list that cannot load refuses the whole Seal: say which. */
                r = ctl_log_error("seal",
                                  json_str(reply, "name")           ?:
                                          json_str(reply, "module") ?:
                                                                      "seal",
                                  error, reply);
                if (!streq_ptr(error, MANAGER_ERROR_SEALED) &&
                    !streq_ptr(error, MANAGER_ERROR_PERMISSION_DENIED))
                        log_error("Nothing was sealed.");
                return r;
        }
        return seal_show(reply);
}
