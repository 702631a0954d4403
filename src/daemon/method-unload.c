/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Unload: delete_module(2) with O_NONBLOCK, never forced, once nothing holds the module; and what
 * the kernel's answer means. */

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "kernel.h"
#include "log.h"
#include "method-load.h"
#include "method-unload.h"
#include "module-name.h"
#include "record.h"
#include "strv.h"
#include "varlink-errors.h"

static int unload_refuse(sd_varlink *link, const Requester *who, const char *name, int error,
                         const char *reason) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, error, reason);
        return sd_varlink_errorbo(link, MANAGER_ERROR_UNLOAD_FAILED,
                                  SD_JSON_BUILD_PAIR_STRING("module", name),
                                  SD_JSON_BUILD_PAIR_STRING("reason", reason),
                                  SD_JSON_BUILD_PAIR_STRING("errnoName", strerrorname_np(error)));
}

static int unload_in_use(sd_varlink *link, const Requester *who, const char *name, int error, char **holders,
                         unsigned refs) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, error,
                              holders && holders[0] ? "used by other modules" : "in use");
        return sd_varlink_errorbo(link, MANAGER_ERROR_MODULE_IN_USE,
                                  SD_JSON_BUILD_PAIR_STRING("module", name),
                                  SD_JSON_BUILD_PAIR_STRV("holders", holders),
                                  SD_JSON_BUILD_PAIR_INTEGER("refcount", refs));
}

static int unload_not_loaded(sd_varlink *link, const Requester *who, const char *name) {
        Manager *m = sd_varlink_get_userdata(link);

        manager_record_unload(m, who, name, ENOENT, "module is not loaded");
        return sd_varlink_errorbo(link, MANAGER_ERROR_NOT_LOADED,
                                  SD_JSON_BUILD_PAIR_STRING("module", name));
}

/* A builtin module has a directory in /sys/module only when it has parameters: the index knows the
 * others. */
static bool module_is_builtin(Manager *m, const char *name) {
        const Plan *plan;

        if (resolver_plan_key(m->resolver, name, &plan) < 0)
                return false;
        for (size_t i = 0; i < plan->n_specs; i++)
                if (module_name_equal(plan->specs[i].name, name))
                        return !plan->specs[i].path;
        return false;
}

/* delete_module(2), and what its answer means. The kernel says EWOULDBLOCK for holders and references,
 * which may have come since the caller looked, and EBUSY for a module that is not live or has no exit
 * function. */
static int unload_delete(Manager *m, sd_varlink *link, const Requester *who, const char *name) {
        _cleanup_strv_free_ char **holders = NULL;
        unsigned refs = 0;
        int r;

        r = kernel_delete_module(name);
        if (r == -EWOULDBLOCK) {
                /* Say who uses it as the kernel shows it now, not as before the call. */
                (void) kernel_module_holders(name, &holders);
                (void) kernel_module_refcount(name, &refs);
                return unload_in_use(link, who, name, -r, holders, refs);
        }
        if (r == -EBUSY)
                return unload_refuse(link, who, name, -r, "the kernel cannot unload the module now: it is "
                                     "initializing or going away, or it has no exit function");
        if (r == -ENOENT)
                return unload_not_loaded(link, who, name);
        if (r < 0)
                return unload_refuse(link, who, name, -r, strerror(-r));

        manager_record_unload(m, who, name, 0, NULL);
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_STRING("name", name));
}

int manager_unload(Manager *m, sd_varlink *link, const Requester *who, const char *name) {
        _cleanup_free_ char *command = NULL;
        _cleanup_strv_free_ char **holders = NULL;
        ModuleState state;
        unsigned refs = 0;
        int r;

        assert(m);

        if (scheduler_has_job(m->scheduler, name))
                return unload_refuse(link, who, name, EBUSY, "a load of this module is in progress");

        r = kernel_module_state(name, &state);
        if (r < 0)
                return unload_refuse(link, who, name, -r, "cannot read module state");
        if (state == MODULE_STATE_ABSENT && module_is_builtin(m, name))
                state = MODULE_STATE_BUILTIN;
        if (state == MODULE_STATE_ABSENT)
                return unload_not_loaded(link, who, name);
        if (state == MODULE_STATE_BUILTIN)
                return unload_refuse(link, who, name, EPERM, "module is built into the kernel");
        /* The kernel refuses both with EBUSY: nothing uses the module, it is not live. */
        if (state == MODULE_STATE_COMING)
                return unload_refuse(link, who, name, EBUSY, "module is still initializing");
        if (state == MODULE_STATE_GOING)
                return unload_refuse(link, who, name, EBUSY, "module is already being unloaded");

        r = kernel_module_holders(name, &holders);
        if (r < 0)
                return unload_refuse(link, who, name, -r, "cannot read the module's holders");
        (void) kernel_module_refcount(name, &refs);
        if (holders[0] || refs > 0)
                return unload_in_use(link, who, name, EBUSY, holders, refs);

        r = resolver_remove_command(m->resolver, name, &command);
        if (r >= 0 && command) {
                manager_record_unload(m, who, name, EPERM,
                                      "modprobe.d has a remove command; modgate never runs commands");
                return sd_varlink_errorbo(link, MANAGER_ERROR_INSTALL_COMMAND_REFUSED,
                                          SD_JSON_BUILD_PAIR_STRING("module", name),
                                          SD_JSON_BUILD_PAIR_STRING("command", command),
                                          SD_JSON_BUILD_PAIR_EMPTY_ARRAY("modules"));
        }

        return unload_delete(m, link, who, name);
}
