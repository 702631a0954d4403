/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* libkmod, used only to resolve: names, aliases and modaliases to modules, modules to their
 * dependencies, softdeps, options and install commands. Never to insert: libkmod opens by path, may
 * fall back to init_module() and runs install commands. A kmod_ctx is not thread-safe, so a Resolver
 * belongs to the event loop thread. */

typedef struct Resolver Resolver;

typedef enum Role {
        ROLE_REQUESTED,
        ROLE_DEPENDENCY,
        ROLE_SOFTDEP_PRE,
        ROLE_SOFTDEP_POST,
        _ROLE_MAX,
} Role;

const char *role_to_string(Role r);

typedef struct ModuleSpec {
        char *name;             /* canonical: '_' rather than '-' */
        char *path;             /* absolute path from the index; NULL for builtin modules */
        char *options;          /* from modprobe.d and the kernel command line; NULL if none */
        char *options_source;   /* where they are written: "FILE:LINE, the kernel command line" */
        char *install_command;  /* a modprobe.d install command, which modgate refuses to run */
        Role role;
        size_t *requires;       /* plan indexes of hard dependencies: live before this starts */
        size_t n_requires;
        size_t *after;          /* plan indexes to finish first, failure tolerated (softdeps) */
        size_t n_after;
} ModuleSpec;

/* Everything a request resolves to, in an order where each module comes after what it needs. */
typedef struct Plan {
        ModuleSpec *specs;
        size_t n_specs;
        char **blacklisted;     /* alias matches that modprobe.d blacklists, NULL-terminated */
        size_t n_blacklisted;
        bool key_blacklisted;   /* the key is a module's own name, and modprobe.d blacklists it */
} Plan;

Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);

/* A copy of p without the specs drop[] marks, nor what only they pulled in: for softdeps that the
 * policy denies. A hard dependency of a kept spec must not be dropped (-EINVAL). The copy is the
 * caller's. */
int plan_filter(const Plan *p, const bool *drop, Plan **ret);

/* dirname is the trusted root as paths in plans name it; the index is read beneath index_dir (the
 * pinned root's fd as /proc/self/fd/N, so that a mount over the path later changes nothing), or
 * beneath dirname when it is NULL. cmdline is the kernel command line (NULL: none), copied: the
 * module options libkmod takes from it are what records name as their source. */
int resolver_new(const char *dirname, const char *index_dir, const char *cmdline, Resolver **ret);
Resolver *resolver_free(Resolver *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Resolver *, resolver_free);

const char *resolver_dirname(Resolver *r);

/* Reloads the index when depmod has rewritten it (or modprobe.d changed), as an inotify watch on their
 * directories says, or, where that cannot be set up, kmod_validate_resources()'s stats. Returns 1 when it
 * reloaded (cached plans are dropped), 0 when the index is unchanged, or -errno. */
int resolver_refresh(Resolver *r);

/* Reloads index and modprobe.d configuration unconditionally (on SIGHUP). */
int resolver_reload(Resolver *r);

/* A counter that changes whenever cached answers became stale. */
unsigned resolver_generation(Resolver *r);

/* The names of the plan's modules that need spec i (a hard dependency or a softdep of theirs), joined
 * by ", "; NULL when none does. Returns 0 or -ENOMEM. */
int plan_needed_by(const Plan *p, size_t i, char **ret);

/* Resolves a module name, alias or modalias (one literal key). modprobe.d blacklists hide alias
 * matches, never a module asked for by its own name. The plan is cached by key until the index
 * changes and belongs to the resolver: valid until the next call. Returns -ENOENT when nothing but
 * blacklisted modules matched (ret_plan still set so the caller can report them), -ELOOP for a
 * dependency cycle, other -errno. */
int resolver_plan_key(Resolver *r, const char *key, const Plan **ret_plan);

/* Resolves a module file given by path, as insmod takes one: when the index lists that very file,
 * with its dependencies; otherwise the file alone. Either way the module is the one its file name
 * names, with that module's modprobe.d options and install command, and key_blacklisted as for a
 * request by that name. The plan is the caller's. */
int resolver_plan_path(Resolver *r, const char *path, Plan **ret_plan);

/* A modprobe.d remove command for a module, or NULL. */
int resolver_remove_command(Resolver *r, const char *name, char **ret);
