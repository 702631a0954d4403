/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The parameters of io.modgate.Manager.Load as a client sends them: any JSON text. */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "fuzz.h"
#include "load-parameters.h"
#include "module-name.h"

static void check_accepted(const LoadParameters *p) {
        fuzz_assert(!!p->name + !!p->modalias + !!p->path == 1);
        fuzz_assert(!p->name || module_name_is_valid(p->name));
        fuzz_assert(!p->modalias || !modalias_check(p->modalias));
        fuzz_assert(!p->path || !module_path_check(p->path));
        fuzz_assert(!p->parameters || !module_parameters_check(p->parameters));
        fuzz_assert(!request_context_check(&p->context));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        sd_json_variant *v = NULL;
        LoadParameters p;
        LoadRefusal refusal = {};
        int r;

        text = strndup((const char *) data, size);
        if (!text || sd_json_parse(text, 0, &v, NULL, NULL) < 0)
                return 0;

        r = load_parameters_parse(v, &p, &refusal);
        if (r == 0)
                check_accepted(&p);
        else if (r > 0)
                fuzz_assert(refusal.error && (refusal.field || refusal.reason ||
                                              strcmp(refusal.error, "io.modgate.Manager.InvalidName") == 0));
        else
                fuzz_assert(r == -ENOMEM);

        sd_json_variant_unref(v);
        return 0;
}
