/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libkmod.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "module-name.h"
#include "resolver.h"

/* modules.dep already lists every transitive dependency, so real chains are shallow; this only stops
 * a corrupt index from recursing without end. */
#define RESOLVE_DEPTH_MAX 64
#define RESOLVE_MODULES_MAX 1024

struct Resolver {
        struct kmod_ctx *ctx;
        char *dirname;
};

typedef struct SpecList {
        ModuleSpec *specs;
        size_t n;
} SpecList;

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_list *, kmod_module_unref_list);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_module *, kmod_module_unref);

static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
                     const char *format, va_list args) {
        char buf[512];

        (void) data;
        (void) file;
        (void) line;
        (void) fn;
        vsnprintf(buf, sizeof(buf), format, args);
        buf[strcspn(buf, "\n")] = '\0';
        log_full_errno(priority > LOG_DEBUG ? LOG_DEBUG : priority, 0, "libkmod: %s", buf);
}

int resolver_new(const char *dirname, Resolver **ret) {
        _cleanup_(resolver_freep) Resolver *r = NULL;
        int q;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;

        r->dirname = strdup(dirname);
        if (!r->dirname)
                return -ENOMEM;

        r->ctx = kmod_new(dirname, NULL);
        if (!r->ctx)
                return -ENOMEM;
        kmod_set_log_fn(r->ctx, kmod_log, NULL);

        q = kmod_load_resources(r->ctx);
        if (q < 0)
                return q;

        *ret = TAKE_PTR(r);
        return 0;
}

Resolver *resolver_free(Resolver *r) {
        if (!r)
                return NULL;
        kmod_unref(r->ctx);
        free(r->dirname);
        free(r);
        return NULL;
}

const char *resolver_dirname(Resolver *r) {
        return r->dirname;
}

void module_specs_free(ModuleSpec *specs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(specs[i].name);
                free(specs[i].path);
        }
        free(specs);
}

static bool spec_list_contains(const SpecList *l, const char *name) {
        for (size_t i = 0; i < l->n; i++)
                if (module_name_equal(l->specs[i].name, name))
                        return true;
        return false;
}

static int spec_list_append(SpecList *l, struct kmod_module *mod) {
        const char *name = kmod_module_get_name(mod), *path = kmod_module_get_path(mod);
        ModuleSpec *a, s = {};

        if (l->n >= RESOLVE_MODULES_MAX)
                return -E2BIG;

        s.name = strdup(name);
        if (!s.name)
                return -ENOMEM;
        module_name_normalize(s.name);
        if (path) {
                s.path = strdup(path);
                if (!s.path) {
                        free(s.name);
                        return -ENOMEM;
                }
        }

        a = reallocarray(l->specs, l->n + 1, sizeof(ModuleSpec));
        if (!a) {
                free(s.name);
                free(s.path);
                return -ENOMEM;
        }
        l->specs = a;
        l->specs[l->n++] = s;
        return 0;
}

/* Depth first: every dependency is placed before the module that needs it. */
static int add_with_dependencies(SpecList *l, struct kmod_module *mod, unsigned depth) {
        _cleanup_(kmod_module_unref_listp) struct kmod_list *deps = NULL;
        struct kmod_list *i;
        int r;

        if (depth > RESOLVE_DEPTH_MAX)
                return -ELOOP;
        if (spec_list_contains(l, kmod_module_get_name(mod)))
                return 0;

        deps = kmod_module_get_dependencies(mod);
        kmod_list_foreach(i, deps) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *dep = kmod_module_get_module(i);

                r = add_with_dependencies(l, dep, depth + 1);
                if (r < 0)
                        return r;
        }

        return spec_list_append(l, mod);
}

int resolver_resolve(Resolver *r, const char *name, ModuleSpec **ret, size_t *ret_n) {
        _cleanup_(kmod_module_unref_listp) struct kmod_list *list = NULL;
        SpecList l = {};
        struct kmod_list *i;
        int q;

        q = kmod_module_new_from_lookup(r->ctx, name, &list);
        if (q < 0)
                return q;
        if (!list)
                return -ENOENT;

        kmod_list_foreach(i, list) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *mod = kmod_module_get_module(i);

                q = add_with_dependencies(&l, mod, 0);
                if (q < 0) {
                        module_specs_free(l.specs, l.n);
                        return q;
                }
        }

        *ret = l.specs;
        *ret_n = l.n;
        return 0;
}
