/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A varlink call to io.modgate.Manager as a client sends it, {"method": ..., "parameters": ...}: the
 * parameters go through the dispatch that the named method runs in the daemon (load_parameters_parse()
 * for Load and Explain, method-parameters.c for the others). Every method of the interface must have
 * its entry here, or the first input fails. */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink-idl.h>

#include "fuzz.h"
#include "load-parameters.h"
#include "method-parameters.h"
#include "method-seal.h"
#include "module-name.h"
#include "strv.h"
#include "varlink-io.modgate.Manager.h"

#define INTERFACE "io.modgate.Manager."

static const sd_varlink_symbol *current;      /* the method of the call being run */

/* Whether the IDL declares key an input of the current method and value of its type. Only what the
 * dispatch cannot refuse for other reasons is claimed: null where nullable, strings, arrays of strings,
 * each key once. */
static bool idl_allows(sd_json_variant *parameters, const char *key) {
        sd_json_variant *v = sd_json_variant_by_key(parameters, key);
        unsigned n = 0;

        if (!v)
                return false;
        /* A key given twice is ambiguous, a fair reason to name it. */
        for (size_t i = 0; i < sd_json_variant_elements(parameters); i += 2)
                n += strcmp(sd_json_variant_string(sd_json_variant_by_index(parameters, i)), key) == 0;
        if (n > 1)
                return false;
        for (const sd_varlink_field *f = current->fields; f->field_type != _SD_VARLINK_FIELD_TYPE_END_MARKER; f++) {
                if (f->field_direction != SD_VARLINK_INPUT || !f->name || strcmp(f->name, key) != 0)
                        continue;
                if (sd_json_variant_is_null(v))
                        return f->field_flags & SD_VARLINK_NULLABLE;
                if (f->field_type != SD_VARLINK_STRING || (f->field_flags & SD_VARLINK_MAP))
                        return false;
                if (!(f->field_flags & SD_VARLINK_ARRAY))
                        return sd_json_variant_is_string(v);
                if (!sd_json_variant_is_array(v))
                        return false;
                for (size_t i = 0; i < sd_json_variant_elements(v); i++)
                        if (!sd_json_variant_is_string(sd_json_variant_by_index(v, i)))
                                return false;
                return true;
        }
        return false;
}

/* A refusal names a field only when the call breaks the IDL there: what sd-varlink lets through as
 * well-typed, the method must not answer with InvalidParameter. */
static void check_field(sd_json_variant *parameters, const char *field) {
        if (field && idl_allows(parameters, field))
                fprintf(stderr, "%s: field %s refused though the IDL allows it\n", current->name, field);
        fuzz_assert(!field || !idl_allows(parameters, field));
}

static void check_refusal(int r, const MethodRefusal *f) {
        fuzz_assert(r == 1 || r == -ENOMEM || r == -EINVAL);
        if (r != 1)
                return;
        fuzz_assert(!!f->field != !!f->error);
        fuzz_assert(!f->error || strcmp(f->error, "InvalidRequest") == 0 ||
                    (strcmp(f->error, "InvalidName") == 0 && f->name && !module_name_is_valid(f->name)));
}

static void check_names(char **names, bool canonical) {
        for (char **n = names; n && *n; n++) {
                fuzz_assert(module_name_is_valid(*n));
                fuzz_assert(!canonical || !strchr(*n, '-'));
        }
}

static void run_load(sd_json_variant *v) {
        LoadParameters p;
        LoadRefusal refusal = {};
        int r;

        r = load_parameters_parse(v, &p, &refusal);
        if (r == 0) {
                fuzz_assert(!!p.name + !!p.modalias + !!p.path == 1);
                fuzz_assert(!p.name || module_name_is_valid(p.name));
        } else
                fuzz_assert((r == 1 && refusal.error) || r == -ENOMEM);
        if (r == 1)
                check_field(v, refusal.field);
}

static void run_none(sd_json_variant *v) {
        MethodRefusal refusal = {};
        int r;

        r = method_parameters_none(v, &refusal);
        if (r != 0) {
                check_refusal(r, &refusal);
                check_field(v, refusal.field);
        } else
                fuzz_assert(sd_json_variant_is_null(v) || sd_json_variant_elements(v) == 0);
}

static void run_module_name(sd_json_variant *v) {
        _cleanup_free_ char *name = NULL;
        MethodRefusal refusal = {};
        int r;

        r = method_parameters_module_name(v, &name, &refusal);
        if (r != 0) {
                check_refusal(r, &refusal);
                check_field(v, refusal.field);
                fuzz_assert(!name);
        } else {
                fuzz_assert(name && module_name_is_valid(name) && !strchr(name, '-'));
        }
}

static void run_monitor(sd_json_variant *v) {
        _cleanup_strv_free_ char **modules = NULL;
        MethodRefusal refusal = {};
        int r;

        r = method_parameters_monitor(v, &modules, &refusal);
        if (r != 0) {
                check_refusal(r, &refusal);
                check_field(v, refusal.field);
        } else
                check_names(modules, true);
}

static void run_seal(sd_json_variant *v) {
        _cleanup_strv_free_ char **names = NULL;
        MethodRefusal refusal = {};
        int r;

        r = method_parameters_seal(v, &names, &refusal);
        if (r != 0) {
                check_refusal(r, &refusal);
                check_field(v, refusal.field);
        } else {
                fuzz_assert(strv_length(names) <= SEAL_LOAD_MAX);
                check_names(names, false);
        }
}

static const struct {
        const char *method;
        void (*run)(sd_json_variant *v);
} methods[] = {
        { "Load", run_load },
        { "Explain", run_load },
        { "Unload", run_module_name },
        { "Describe", run_module_name },
        { "List", run_none },
        { "Status", run_none },
        { "Reload", run_none },
        { "Monitor", run_monitor },
        { "Seal", run_seal },
};

static const sd_varlink_symbol *method_symbol(const char *name) {
        for (size_t i = 0; vl_interface_io_modgate_Manager.symbols[i]; i++) {
                const sd_varlink_symbol *s = vl_interface_io_modgate_Manager.symbols[i];

                if (s->symbol_type == SD_VARLINK_METHOD && strcmp(s->name, name) == 0)
                        return s;
        }
        return NULL;
}

/* A method added to the interface without an entry here would go unfuzzed: that is a failure. */
static void check_every_method(void) {
        static bool checked = false;

        if (checked)
                return;
        for (size_t i = 0; vl_interface_io_modgate_Manager.symbols[i]; i++) {
                const sd_varlink_symbol *s = vl_interface_io_modgate_Manager.symbols[i];
                bool found = false;

                if (s->symbol_type != SD_VARLINK_METHOD)
                        continue;
                for (size_t j = 0; j < ELEMENTSOF(methods); j++)
                        found = found || strcmp(methods[j].method, s->name) == 0;
                if (!found)
                        fprintf(stderr, "method %s has no dispatch in this fuzzer\n", s->name);
                fuzz_assert(found);
        }
        checked = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *empty = NULL;
        sd_json_variant *call = NULL, *method, *parameters;
        const char *name;

        check_every_method();
        text = strndup((const char *) data, size);
        if (!text || sd_json_parse(text, 0, &call, NULL, NULL) < 0)
                return 0;
        method = sd_json_variant_by_key(call, "method");
        parameters = sd_json_variant_by_key(call, "parameters");
        /* sd-varlink hands a call without parameters to its method as an empty object. */
        if (!parameters) {
                if (sd_json_variant_new_object(&empty, NULL, 0) < 0)
                        goto done;
                parameters = empty;
        }
        if (!method || !sd_json_variant_is_string(method) ||
            strncmp(sd_json_variant_string(method), INTERFACE, strlen(INTERFACE)) != 0)
                goto done;
        name = sd_json_variant_string(method) + strlen(INTERFACE);
        current = method_symbol(name);
        for (size_t i = 0; current && i < ELEMENTSOF(methods); i++)
                if (strcmp(methods[i].method, name) == 0)
                        methods[i].run(parameters);
done:
        sd_json_variant_unref(call);
        return 0;
}
