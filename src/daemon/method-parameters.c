/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "method-parameters.h"
#include "method-seal.h"
#include "module-name.h"
#include "strv.h"
#include "varlink-errors.h"

/* What sd_varlink_dispatch() does, without the link: unknown fields and wrong types are an
 * InvalidParameter naming the field. */
static int dispatch(sd_json_variant *v, const sd_json_dispatch_field table[], void *userdata,
                    MethodRefusal *ret_refusal) {
        const char *bad = NULL;
        int r;

        r = sd_json_dispatch_full(v, table, NULL, 0, userdata, &bad);
        if (r >= 0)
                return 0;
        if (!bad)
                return r;
        *ret_refusal = (MethodRefusal) { .field = bad };
        return 1;
}

static int refuse_name(const char *name, MethodRefusal *ret_refusal) {
        *ret_refusal = (MethodRefusal) { .error = "InvalidName", .name = name };
        return 1;
}

int method_parameters_none(sd_json_variant *v, MethodRefusal *ret_refusal) {
        static const sd_json_dispatch_field table[] = { {} };

        return dispatch(v, table, NULL, ret_refusal);
}

int method_parameters_module_name(sd_json_variant *v, char **ret_name, MethodRefusal *ret_refusal) {
        static const sd_json_dispatch_field table[] = {
                { "name", SD_JSON_VARIANT_STRING, sd_json_dispatch_const_string, 0, SD_JSON_MANDATORY },
                {}
        };
        const char *n = NULL;
        int r;

        *ret_name = NULL;
        r = dispatch(v, table, &n, ret_refusal);
        if (r != 0)
                return r;
        /* Quoted as given: the string is the variant's. */
        if (!module_name_is_valid(n))
                return refuse_name(n, ret_refusal);
        *ret_name = strdup(n);
        if (!*ret_name)
                return -ENOMEM;
        module_name_normalize(*ret_name);
        return 0;
}

int method_parameters_monitor(sd_json_variant *v, char ***ret_modules, MethodRefusal *ret_refusal) {
        static const sd_json_dispatch_field table[] = {
                { "modules", SD_JSON_VARIANT_ARRAY, sd_json_dispatch_strv, 0, SD_JSON_NULLABLE },
                {}
        };
        int r;

        *ret_modules = NULL;
        r = dispatch(v, table, ret_modules, ret_refusal);
        if (r != 0)
                return r;
        for (char **n = *ret_modules; n && *n; n++) {
                if (!module_name_is_valid(*n))
                        return refuse_name(*n, ret_refusal);
                module_name_normalize(*n);
        }
        return 0;
}

int method_parameters_seal(sd_json_variant *v, char ***ret_names, MethodRefusal *ret_refusal) {
        assert(ret_refusal);

        static const sd_json_dispatch_field table[] = {
                { "load", SD_JSON_VARIANT_ARRAY, sd_json_dispatch_strv, 0, SD_JSON_NULLABLE },
                {}
        };
        size_t n;
        int r;

        *ret_names = NULL;
        r = dispatch(v, table, ret_names, ret_refusal);
        if (r != 0)
                return r;
        n = strv_length(*ret_names);
        if (n > SEAL_LOAD_MAX) {
                *ret_refusal = (MethodRefusal) { .error = "InvalidRequest" };
                snprintf(ret_refusal->reason, sizeof(ret_refusal->reason),
                         "the final list names more than %u modules", SEAL_LOAD_MAX);
                return 1;
        }
        for (size_t i = 0; i < n; i++)
                if (!module_name_is_valid((*ret_names)[i]))
                        return refuse_name((*ret_names)[i], ret_refusal);
        return 0;
}

int method_reply_refusal(sd_varlink *link, const MethodRefusal *f) {
        if (f->field)
                return sd_varlink_error_invalid_parameter_name(link, f->field);
        if (strcmp(f->error, "InvalidName") == 0)
                return sd_varlink_errorbo(link, MANAGER_ERROR_INVALID_NAME,
                                          SD_JSON_BUILD_PAIR_STRING("name", f->name));
        return sd_varlink_errorbo(link, MANAGER_ERROR_INVALID_REQUEST,
                                  SD_JSON_BUILD_PAIR_STRING("reason", f->reason));
}
