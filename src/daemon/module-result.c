/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module-result.h"

static const char *const outcome_table[_OUTCOME_MAX] = {
        [OUTCOME_LOADED] = "loaded",
        [OUTCOME_ALREADY_LOADED] = "already_loaded",
        [OUTCOME_BUILTIN] = "builtin",
        [OUTCOME_FAILED] = "failed",
        [OUTCOME_DENIED] = "denied",
};

const char *outcome_to_string(Outcome o) {
        return o >= 0 && o < _OUTCOME_MAX ? outcome_table[o] : NULL;
}

void module_result_free_found(ModuleResult *r) {
        assert(r);

        r->reason = mfree(r->reason);
        r->after_load = mfree(r->after_load);
        r->backing = mfree(r->backing);
        modinfo_done(&r->modinfo);
        r->dm_device = mfree(r->dm_device);
        r->dm_target = mfree(r->dm_target);
        r->verity_root_hash = mfree(r->verity_root_hash);
        r->fsverity_digest = mfree(r->fsverity_digest);
}

void module_result_done(ModuleResult *r) {
        free(r->name);
        free(r->path);
        free(r->parameters);
        free(r->command);
        free(r->alias_key);
        free(r->required_by);
        free(r->options_source);
        module_result_free_found(r);
        *r = (ModuleResult) {};
}

int module_result_setv(ModuleResult *r, Outcome o, int error, const char *fmt, va_list ap) {
        assert(r);

        r->outcome = o;
        r->error = abs(error);
        free(r->reason);
        r->reason = NULL;
        if (!fmt)
                return 0;
        if (vasprintf(&r->reason, fmt, ap) < 0) {
                r->reason = NULL;
                return -ENOMEM;
        }
        return 0;
}

int module_result_set(ModuleResult *r, Outcome o, int error, const char *fmt, ...) {
        va_list ap;
        int q;

        va_start(ap, fmt);
        q = module_result_setv(r, o, error, fmt, ap);
        va_end(ap);
        return q;
}

int module_result_build_json(const ModuleResult *r, sd_json_variant **array) {
        assert(r);

        return sd_json_variant_append_arraybo(
                array, SD_JSON_BUILD_PAIR_STRING("name", r->name),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->path, "path", SD_JSON_BUILD_STRING(r->path)),
                SD_JSON_BUILD_PAIR_STRING("outcome", outcome_to_string(r->outcome)),
                SD_JSON_BUILD_PAIR_STRING("role", role_to_string(r->role)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->parameters, "parameters",
                                             SD_JSON_BUILD_STRING(r->parameters)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->reason, "reason", SD_JSON_BUILD_STRING(r->reason)),
                SD_JSON_BUILD_PAIR_CONDITION(r->error != 0, "errno", SD_JSON_BUILD_INTEGER(r->error)),
                SD_JSON_BUILD_PAIR_CONDITION(r->error != 0, "errnoName",
                                             SD_JSON_BUILD_STRING(strerrorname_np(r->error))));
}
