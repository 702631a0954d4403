/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* libkmod, used only to resolve: names and aliases to modules, modules to their dependencies. Never
 * to insert: libkmod opens by path, may fall back to init_module() and runs install commands. A
 * kmod_ctx is not thread-safe, so a Resolver belongs to the event loop thread. */

typedef struct Resolver Resolver;

typedef struct ModuleSpec {
        char *name;             /* canonical: '_' rather than '-' */
        char *path;             /* absolute path from the index; NULL for builtin modules */
} ModuleSpec;

int resolver_new(const char *dirname, Resolver **ret);
Resolver *resolver_free(Resolver *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Resolver *, resolver_free);

const char *resolver_dirname(Resolver *r);

/* Resolves name to the modules to load, dependencies first and the module itself last. Returns 0,
 * -ENOENT when the index knows no such module, -ELOOP for a dependency cycle, or another -errno. */
int resolver_resolve(Resolver *r, const char *name, ModuleSpec **ret, size_t *ret_n);

void module_specs_free(ModuleSpec *specs, size_t n);
