/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "fileio.h"
#include "hashmap.h"
#include "index-check.h"
#include "log.h"
#include "modprobe-options.h"
#include "module-name.h"
#include "resolver.h"
#include "strv.h"

/* modules.dep already lists every transitive dependency, so real chains are shallow; these only stop
 * a corrupt index or a softdep loop from growing without end. */
#define RESOLVE_DEPTH_MAX 32
#define PLAN_MODULES_MAX 1024
/* Plans are cached per key; a client sending ever new modaliases only makes the cache start over. */
#define PLAN_CACHE_MAX 4096
/* Module objects kept: the index and modprobe.d name them all, so this is only a bound. */
#define MODULES_KEPT_MAX 16384

struct Resolver {
        struct kmod_ctx *ctx;
        char *dirname;          /* the trusted root, as paths in plans name it */
        char *index_dir;        /* where libkmod reads the index: the pinned root's fd, /proc/self/fd/N */
        Hashmap *plans;
        Hashmap *modules;       /* name → struct kmod_module of ctx, a reference kept as long as ctx */
        unsigned generation;
        int watch_fd;           /* inotify on the index and modprobe.d directories; -1: stat them instead */
        int index_wd;
        bool stale;             /* the watch saw a change that no reload has taken in yet */
        char *cmdline;          /* the kernel command line, as the Manager read it; NULL: none */
};

typedef struct Builder {
        Resolver *resolver;
        Plan *plan;
        const char *stack[RESOLVE_DEPTH_MAX];
        unsigned depth;
} Builder;

static const char *const role_table[_ROLE_MAX] = {
        [ROLE_REQUESTED] = "requested",
        [ROLE_DEPENDENCY] = "dependency",
        [ROLE_SOFTDEP_PRE] = "softdep_pre",
        [ROLE_SOFTDEP_POST] = "softdep_post",
};

const char *role_to_string(Role r) {
        return r >= 0 && r < _ROLE_MAX ? role_table[r] : NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_list *, kmod_module_unref_list);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_module *, kmod_module_unref);

/* Drops the specs from n on. Specs refer only to specs before them, so nothing left refers to these. */
static void plan_truncate(Plan *p, size_t n) {
        while (p->n_specs > n) {
                ModuleSpec *s = p->specs + --p->n_specs;
                free(s->name);
                free(s->path);
                free(s->options);
                free(s->options_source);
                free(s->install_command);
                free(s->requires);
                free(s->after);
        }
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        plan_truncate(p, 0);
        free(p->specs);
        for (size_t i = 0; i < p->n_blacklisted; i++)
                free(p->blacklisted[i]);
        free(p->blacklisted);
        free(p);
        return NULL;
}

static void plan_free_void(void *p) {
        plan_free(p);
}

static void module_unref_void(void *p) {
        kmod_module_unref(p);
}

static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
                     const char *format, va_list args) {
        char buf[512];

        vsnprintf(buf, sizeof(buf), format, args);
        buf[strcspn(buf, "\n")] = '\0';
        log_full_errno(LOG_DEBUG, 0, "libkmod: %s", buf);
}

static int context_new(const char *dirname, struct kmod_ctx **ret) {
        struct kmod_ctx *ctx;
        int r;

        /* libkmod checks only an index's header, and reads a corrupt or truncated trie as "no match". */
        r = index_check_dir(dirname);
        if (r < 0)
                return r;

        /* An explicit list: with NULL, libkmod reads /run/modprobe.d too. */
        ctx = kmod_new(dirname, modprobe_d_dirs);
        if (!ctx)
                return -ENOMEM;
        kmod_set_log_fn(ctx, kmod_log, NULL);

        r = kmod_load_resources(ctx);
        if (r < 0) {
                kmod_unref(ctx);
                return r;
        }
        *ret = ctx;
        return 0;
}

/* What libkmod's own freshness check (kmod_validate_resources()) looks at, and no more: the mtime
 * of each index file, which depmod renames into place, and of each modprobe.d directory (a file added,
 * removed or renamed there; not one edited in place, which takes a SIGHUP). */
static const char *const index_files[] = {
        "modules.dep.bin", "modules.alias.bin", "modules.symbols.bin", "modules.builtin.alias.bin",
        "modules.builtin.bin",
};
#define WATCH_GONE (IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define WATCH_ENTRIES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define WATCH_INDEX (WATCH_ENTRIES | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | WATCH_GONE)
#define WATCH_CONFIG (WATCH_ENTRIES | IN_ATTRIB | WATCH_GONE)

static bool event_changes(const Resolver *r, const struct inotify_event *e) {
        if (e->wd != r->index_wd)
                /* A modprobe.d directory: its entries, or its own mtime set. */
                return (e->mask & WATCH_ENTRIES) || e->len == 0;
        if (e->len == 0)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(index_files); i++)
                if (strcmp(e->name, index_files[i]) == 0)
                        return true;
        return false;
}

/* Instead of 8 stats at every request: an inotify watch, read (not waited on) at every request. An
 * event is queued by the very rename(2), write(2) or utime(2) that changes a file, before that call
 * returns: a request sent after depmod finished finds depmod's events already queued. A directory
 * that cannot be watched leaves the stats, as libkmod does them. */
static void resolver_watch(Resolver *r) {
        _cleanup_close_ int fd = -EBADF;

        r->watch_fd = -EBADF;
        fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return (void) log_debug_errno(errno,
                                              "Failed to make an inotify instance, the index is checked "
                                              "by stat at every request: %m");
        r->index_wd = inotify_add_watch(fd, r->index_dir, WATCH_INDEX);
        if (r->index_wd < 0)
                return (void) log_debug_errno(errno,
                                              "Failed to watch %s, the index is checked by stat at every "
                                              "request: %m",
                                              r->dirname);
        for (const char *const *d = modprobe_d_dirs; *d; d++)
                /* One that does not exist libkmod does not look at either. */
                if (inotify_add_watch(fd, *d, WATCH_CONFIG) < 0 && errno != ENOENT && errno != ENOTDIR)
                        return (void) log_debug_errno(errno,
                                                      "Failed to watch %s, the index is checked by stat "
                                                      "at every request: %m",
                                                      *d);
        r->watch_fd = TAKE_FD(fd);
}

/* Whether anything the context was made from changed since the last look: 1 changed, 0 not, -errno
 * when the watch no longer stands (then the caller goes back to stats). */
static int resolver_watch_read(Resolver *r) {
        union {
                struct inotify_event ev;
                char buf[4096];
        } u;
        bool changed = false, lost = false;

        for (;;) {
                ssize_t n = read(r->watch_fd, u.buf, sizeof(u.buf));

                if (n < 0) {
                        if (errno == EAGAIN)
                                break;
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                for (char *p = u.buf; p < u.buf + n;) {
                        struct inotify_event *e = (struct inotify_event *) p;

                        p += sizeof(*e) + e->len;
                        /* A watch gone (its directory removed, moved, unmounted) or events lost: the
                         * watch says nothing any more. */
                        if (e->mask &
                            (IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF))
                                lost = true;
                        /* In the module directory only the index files: depmod writes them under
                         * other names first, then renames them. */
                        else if (event_changes(r, e))
                                changed = true;
                }
        }
        return lost ? -ESTALE : changed;
}

int resolver_new(const char *dirname, const char *index_dir, const char *cmdline, Resolver **ret) {
        _cleanup_(resolver_freep) Resolver *r = NULL;
        int q;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->dirname = strdup(dirname);
        r->index_dir = strdup(index_dir ?: dirname);
        r->plans = hashmap_new(plan_free_void);
        r->modules = hashmap_new(module_unref_void);
        if (!r->dirname || !r->index_dir || !r->plans || !r->modules)
                return -ENOMEM;

        r->watch_fd = -EBADF;
        /* Watching first, then reading: a change between the two is seen, and read again. */
        resolver_watch(r);
        q = context_new(r->index_dir, &r->ctx);
        if (q < 0)
                return q;
        if (cmdline) {
                r->cmdline = strdup(cmdline);
                if (!r->cmdline)
                        return -ENOMEM;
        }

        *ret = TAKE_PTR(r);
        return 0;
}

Resolver *resolver_free(Resolver *r) {
        if (!r)
                return NULL;
        hashmap_free(r->modules);
        kmod_unref(r->ctx);
        safe_close(r->watch_fd);
        hashmap_free(r->plans);
        free(r->dirname);
        free(r->index_dir);
        free(r->cmdline);
        free(r);
        return NULL;
}

const char *resolver_dirname(Resolver *r) {
        assert(r);

        return r->dirname;
}

unsigned resolver_generation(Resolver *r) {
        assert(r);

        return r->generation;
}

int resolver_reload(Resolver *r) {
        struct kmod_ctx *ctx;
        int q;

        assert(r);

        q = context_new(r->index_dir, &ctx);
        if (q < 0)
                return q;
        hashmap_clear(r->modules);
        kmod_unref(r->ctx);
        r->ctx = ctx;
        hashmap_clear(r->plans);
        r->generation++;
        r->stale = false;
        return 1;
}

int resolver_refresh(Resolver *r) {
        int q;

        assert(r);

        if (r->watch_fd >= 0) {
                q = resolver_watch_read(r);
                if (q < 0) {
                        log_debug_errno(
                                q,
                                "The watch on the module index stopped, it is checked by stat from now "
                                "on: %m");
                        r->watch_fd = safe_close(r->watch_fd);
                }
                if (q != 0)
                        r->stale = true;
        }
        /* A change the watch saw, or may have missed, is made again from what is there now; a reload
         * that fails (depmod halfway) is tried again at the next request. */
        if (!r->stale && (r->watch_fd >= 0 || kmod_validate_resources(r->ctx) == KMOD_RESOURCES_OK))
                return 0;
        return resolver_reload(r);
}

static int index_append(size_t **a, size_t *n, size_t v) {
        size_t *b;

        for (size_t i = 0; i < *n; i++)
                if ((*a)[i] == v)
                        return 0;
        b = reallocarray(*a, *n + 1, sizeof(size_t));
        if (!b)
                return -ENOMEM;
        b[(*n)++] = v;
        *a = b;
        return 0;
}

static ssize_t plan_find(const Plan *p, const char *name) {
        for (size_t i = 0; i < p->n_specs; i++)
                if (module_name_equal(p->specs[i].name, name))
                        return (ssize_t) i;
        return -1;
}

/* libkmod joins its directory and the index's relative path with a '/': a root of "/", or one given
 * with a trailing '/', gives "//". Collapsed, the path is the one a request by path names. */
static void path_collapse_slashes(char *p) {
        char *w = p;

        for (const char *r = p; *r; r++)
                if (*r != '/' || w == p || w[-1] != '/')
                        *w++ = *r;
        *w = '\0';
}

/* A module's path as the index gives it, beneath the pinned root's fd, as the trusted root's path:
 * what requests by path name, replies show, and the loader finds the root by. */
static int module_path(const Resolver *r, struct kmod_module *mod, char **ret) {
        const char *p = kmod_module_get_path(mod);
        size_t n = strlen(r->index_dir);
        char *s;

        if (!p) {
                *ret = NULL;
                return 0;
        }
        if (strncmp(p, r->index_dir, n) == 0 && p[n] == '/') {
                if (asprintf(&s, "%s%s", r->dirname, p + n) < 0)
                        return -ENOMEM;
        } else if (!(s = strdup(p)))
                return -ENOMEM;
        path_collapse_slashes(s);
        *ret = s;
        return 0;
}

/* Only for a module with options, so rarely: libkmod read the same files when it made the index's
 * context. */
static int options_source(const Resolver *r, const char *name, char **ret) {
        return modprobe_options_sources(NULL, r->cmdline, name, ret);
}

int plan_needed_by(const Plan *p, size_t i, char **ret) {
        _cleanup_free_ char *s = NULL;

        assert(p);

        for (size_t j = i + 1; j < p->n_specs; j++) {
                const ModuleSpec *u = p->specs + j;
                bool needs = false;
                char *n;

                for (size_t k = 0; k < u->n_requires && !needs; k++)
                        needs = u->requires[k] == i;
                for (size_t k = 0; k < u->n_after && !needs; k++)
                        needs = u->after[k] == i;
                if (!needs)
                        continue;
                if (asprintf(&n, "%s%s%s", s ?: "", s ? ", " : "", u->name) < 0)
                        return -ENOMEM;
                free(s);
                s = n;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* kept: mod's object by name, which has its line of modules.dep parsed (see resolver_module()). */
static int plan_append(const Resolver *r, Plan *p, struct kmod_module *mod, struct kmod_module *kept,
                       Role role, ModuleSpec **ret) {
        ModuleSpec *a, *s;

        if (p->n_specs >= PLAN_MODULES_MAX)
                return -E2BIG;
        a = reallocarray(p->specs, p->n_specs + 1, sizeof(ModuleSpec));
        if (!a)
                return -ENOMEM;
        p->specs = a;
        s = p->specs + p->n_specs;
        *s = (ModuleSpec) { .role = role };

        if (strdup_or_null(kmod_module_get_name(mod), &s->name) < 0 || !s->name ||
            module_path(r, kept, &s->path) < 0 ||
            strdup_or_null(kmod_module_get_options(mod), &s->options) < 0 ||
            strdup_or_null(kmod_module_get_install_commands(mod), &s->install_command) < 0) {
                free(s->name);
                free(s->path);
                free(s->options);
                return -ENOMEM;
        }
        module_name_normalize(s->name);
        if (s->options && options_source(r, s->name, &s->options_source) < 0) {
                free(s->name);
                free(s->path);
                free(s->options);
                free(s->install_command);
                return -ENOMEM;
        }
        p->n_specs++;
        *ret = s;
        return 0;
}

static int add_module(Builder *b, struct kmod_module *mod, Role role, ssize_t *ret_index);

/* Post softdeps wait for the module that names them. The edge goes only to modules new to the plan, so
 * that no order loop can form. */
static int add_post_softdeps(Builder *b, struct kmod_list *post, size_t idx) {
        struct kmod_list *i;
        ssize_t pidx;
        int r;

        kmod_list_foreach(i, post) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *m = kmod_module_get_module(i);
                size_t before = b->plan->n_specs;
                ModuleSpec *p;

                r = add_module(b, m, ROLE_SOFTDEP_POST, &pidx);
                if (r == -ELOOP) {
                        plan_truncate(b->plan, before);
                        continue;
                }
                if (r < 0)
                        return r;
                if ((size_t) pidx < before)
                        continue;
                p = b->plan->specs + pidx;
                if (index_append(&p->after, &p->n_after, idx) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int add_list(Builder *b, struct kmod_list *list, Role role, size_t **a, size_t *n,
                    bool tolerate_loop) {
        struct kmod_list *i;
        ssize_t idx;
        int r;

        kmod_list_foreach(i, list) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *m = kmod_module_get_module(i);
                size_t before = b->plan->n_specs;

                r = add_module(b, m, role, &idx);
                if (r == -ELOOP && tolerate_loop) {
                        /* Softdeps that name each other: modprobe ignores them too. What this one
                         * pulled in before the loop showed goes with it. */
                        plan_truncate(b->plan, before);
                        continue;
                }
                if (r < 0)
                        return r;
                if (idx >= 0 && a && index_append(a, n, (size_t) idx) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* libkmod parses a module's line of modules.dep once per module object, and makes the object of each
 * dependency there with kmod_module_new_from_path(), which stat()s its file; an object lives as long
 * as a reference to it does, and one found by alias is another object than the one by name. So each
 * plan stat()ed every dependency of every module in it again: ten stats for a first lookup. The
 * objects by name are kept for as long as the context is (resolver_reload() drops both together):
 * what the plans of different keys share (usbcore, snd) is parsed, and its dependencies stat()ed,
 * once. The stat is no check of modgate's: the loader opens each file beneath the pinned root and
 * checks that fd. The line, and so the path and the dependencies, is the index's for the name, the
 * same for both objects; the options are not (libkmod adds those of "options ALIAS"), so they are
 * still taken from the object the lookup gave. Returns a reference to that object, or to mod when it
 * cannot be kept. */
static struct kmod_module *resolver_module(Resolver *r, struct kmod_module *mod) {
        const char *name = kmod_module_get_name(mod);
        struct kmod_module *kept;

        kept = hashmap_get(r->modules, name);
        if (kept)
                return kmod_module_ref(kept);
        if (kmod_module_new_from_name(r->ctx, name, &kept) < 0)
                return kmod_module_ref(mod);
        if (hashmap_size(r->modules) >= MODULES_KEPT_MAX)
                hashmap_clear(r->modules);
        if (hashmap_put(r->modules, name, kept) < 0)
                return kept;
        return kmod_module_ref(kept);
}

/* Softdep pre: and hard dependencies come first, then the module, then softdep post:. */
static int add_module(Builder *b, struct kmod_module *mod, Role role, ssize_t *ret_index) {
        _cleanup_(kmod_module_unref_listp) struct kmod_list *deps = NULL, *pre = NULL, *post = NULL;
        _cleanup_(kmod_module_unrefp) struct kmod_module *kept = NULL;
        size_t *requires = NULL, *after = NULL, n_requires = 0, n_after = 0;
        const char *name = kmod_module_get_name(mod);
        ModuleSpec *s;
        ssize_t idx;
        int r;

        idx = plan_find(b->plan, name);
        if (idx >= 0) {
                *ret_index = idx;
                return 0;
        }
        for (unsigned i = 0; i < b->depth; i++)
                if (module_name_equal(b->stack[i], name))
                        return -ELOOP;
        if (b->depth >= RESOLVE_DEPTH_MAX)
                return -ELOOP;
        b->stack[b->depth++] = name;

        kept = resolver_module(b->resolver, mod);
        (void) kmod_module_get_softdeps(mod, &pre, &post);
        deps = kmod_module_get_dependencies(kept);

        r = add_list(b, pre, ROLE_SOFTDEP_PRE, &after, &n_after, true);
        if (r >= 0)
                r = add_list(b, deps, ROLE_DEPENDENCY, &requires, &n_requires, false);
        if (r >= 0)
                r = plan_append(b->resolver, b->plan, mod, kept, role, &s);
        if (r < 0) {
                free(requires);
                free(after);
                b->depth--;
                return r;
        }
        /* A softdep that is also a hard dependency is a hard dependency: required, and named so. */
        for (size_t i = 0; i < n_requires; i++) {
                ModuleSpec *d = b->plan->specs + requires[i];

                if (d->role == ROLE_SOFTDEP_PRE || d->role == ROLE_SOFTDEP_POST)
                        d->role = ROLE_DEPENDENCY;
                for (size_t k = 0; k < n_after; k++)
                        if (after[k] == requires[i])
                                after[k--] = after[--n_after];
        }
        s->requires = requires;
        s->n_requires = n_requires;
        s->after = after;
        s->n_after = n_after;
        idx = (ssize_t) (s - b->plan->specs);

        r = add_post_softdeps(b, post, (size_t) idx);
        b->depth--;
        if (r < 0)
                return r;

        *ret_index = idx;
        return 0;
}

static int plan_add_blacklisted(Plan *p, const char *name) {
        char **a, *s;

        s = strdup(name);
        if (!s)
                return -ENOMEM;
        module_name_normalize(s);
        a = reallocarray(p->blacklisted, p->n_blacklisted + 2, sizeof(char *));
        if (!a) {
                free(s);
                return -ENOMEM;
        }
        a[p->n_blacklisted++] = s;
        a[p->n_blacklisted] = NULL;
        p->blacklisted = a;
        return 0;
}

static bool list_contains(struct kmod_list *list, const char *name) {
        struct kmod_list *i;

        kmod_list_foreach(i, list) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *m = kmod_module_get_module(i);
                if (module_name_equal(kmod_module_get_name(m), name))
                        return true;
        }
        return false;
}

static int plan_build(Resolver *r, const char *key, Plan **ret) {
        _cleanup_(kmod_module_unref_listp) struct kmod_list *list = NULL, *allowed = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        Builder b = {};
        struct kmod_list *i;
        bool any = false;
        ssize_t idx;
        int q;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        b.resolver = r;
        b.plan = p;

        q = kmod_module_new_from_lookup(r->ctx, key, &list);
        if (q < 0)
                return q;
        q = kmod_module_apply_filter(r->ctx, KMOD_FILTER_BLACKLIST, list, &allowed);
        if (q < 0)
                return q;

        kmod_list_foreach(i, list) {
                _cleanup_(kmod_module_unrefp) struct kmod_module *m = kmod_module_get_module(i);
                const char *name = kmod_module_get_name(m);

                /* Blacklisting hides alias matches, never a module asked for by name (whose caller may
                 * still honour it: key_blacklisted). */
                if (module_name_equal(name, key) && !list_contains(allowed, name))
                        p->key_blacklisted = true;
                if (!module_name_equal(name, key) && !list_contains(allowed, name)) {
                        q = plan_add_blacklisted(p, name);
                        if (q < 0)
                                return q;
                        continue;
                }
                q = add_module(&b, m, ROLE_REQUESTED, &idx);
                if (q < 0)
                        return q;
                /* Matched, even when an earlier match already needed it (uas needs usb_storage, and a
                 * mass storage modalias matches both): it is requested, not only a dependency. */
                p->specs[idx].role = ROLE_REQUESTED;
                any = true;
        }

        *ret = TAKE_PTR(p);
        return any ? 0 : -ENOENT;
}

int resolver_plan_key(Resolver *r, const char *key, const Plan **ret_plan) {
        Plan *p;
        int q;

        assert(r);

        /* libkmod takes keys shorter than PATH_MAX. Longer ones (the kernel's uevents stay far below)
         * match nothing, and are not worth a place in the cache either. */
        if (strlen(key) >= PATH_MAX) {
                *ret_plan = NULL;
                return -ENOENT;
        }

        p = hashmap_get(r->plans, key);
        if (!p) {
                q = plan_build(r, key, &p);
                if (q < 0 && q != -ENOENT)
                        return q;
                if (hashmap_size(r->plans) >= PLAN_CACHE_MAX)
                        hashmap_clear(r->plans);
                if (hashmap_put(r->plans, key, p) < 0) {
                        plan_free(p);
                        return -ENOMEM;
                }
        }

        *ret_plan = p;
        return p->n_specs > 0 ? 0 : -ENOENT;
}

static int name_blacklisted(Resolver *r, const char *name, bool *ret) {
        struct kmod_config_iter *i = kmod_config_get_blacklists(r->ctx);
        bool found = false;

        if (!i)
                return -ENOMEM;
        while (!found && kmod_config_iter_next(i))
                found = module_name_equal(kmod_config_iter_get_key(i), name);
        kmod_config_iter_free_iter(i);
        *ret = found;
        return 0;
}

int resolver_plan_path(Resolver *r, const char *path, Plan **ret_plan) {
        _cleanup_(kmod_module_unrefp) struct kmod_module *mod = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_free_ char *name = NULL, *indexed = NULL;
        Builder b = {};
        ModuleSpec *s;
        ssize_t idx;
        int q;

        assert(r);

        name = module_name_from_path(path);
        p = calloc(1, sizeof(*p));
        if (!name || !p)
                return -ENOMEM;
        if (!module_name_is_valid(name))
                return -EINVAL;
        b.resolver = r;
        b.plan = p;

        q = kmod_module_new_from_name(r->ctx, name, &mod);
        if (q < 0)
                return q;
        if (module_path(r, mod, &indexed) < 0)
                return -ENOMEM;
        /* The module the file is gets what a request by its name gets: a blacklist for those callers
         * that honour one for a name, its install command refused, its options. */
        q = name_blacklisted(r, name, &p->key_blacklisted);
        if (q < 0)
                return q;
        if (indexed && strcmp(indexed, path) == 0) {
                q = add_module(&b, mod, ROLE_REQUESTED, &idx);
                if (q < 0)
                        return q;
        } else {
                /* A file the index does not know: loaded alone, like insmod, for it has no line in
                 * modules.dep to name its dependencies or softdeps by. */
                q = plan_append(r, p, mod, mod, ROLE_REQUESTED, &s);
                if (q < 0)
                        return q;
                free(s->path);
                s->path = strdup(path);
                if (!s->path)
                        return -ENOMEM;
        }

        *ret_plan = TAKE_PTR(p);
        return 0;
}

int resolver_remove_command(Resolver *r, const char *name, char **ret) {
        _cleanup_(kmod_module_unrefp) struct kmod_module *mod = NULL;
        int q;

        assert(r);

        q = kmod_module_new_from_name(r->ctx, name, &mod);
        if (q < 0)
                return q;
        return strdup_or_null(kmod_module_get_remove_commands(mod), ret);
}

static int spec_copy(const ModuleSpec *from, const size_t *map, ModuleSpec *to) {
        *to = (ModuleSpec) { .role = from->role };
        if (strdup_or_null(from->name, &to->name) < 0 || strdup_or_null(from->path, &to->path) < 0 ||
            strdup_or_null(from->options, &to->options) < 0 ||
            strdup_or_null(from->options_source, &to->options_source) < 0 ||
            strdup_or_null(from->install_command, &to->install_command) < 0)
                return -ENOMEM;
        to->requires = calloc(from->n_requires ?: 1, sizeof(size_t));
        to->after = calloc(from->n_after ?: 1, sizeof(size_t));
        if (!to->requires || !to->after)
                return -ENOMEM;
        /* What a kept module needs is kept; a softdep may have been dropped. */
        for (size_t k = 0; k < from->n_requires; k++) {
                if (map[from->requires[k]] == SIZE_MAX)
                        return -EINVAL;
                to->requires[to->n_requires++] = map[from->requires[k]];
        }
        for (size_t k = 0; k < from->n_after; k++)
                if (map[from->after[k]] != SIZE_MAX)
                        to->after[to->n_after++] = map[from->after[k]];
        return 0;
}

/* Specs refer only to earlier ones: a pass from the end finds what the kept ones pull in. A softdep
 * post: comes after its module and names it in its own after[]: kept when that module is, which a
 * pass forward sees; what it pulls in then takes another round. */
static void plan_mark_kept(const Plan *p, const bool *drop, bool *keep) {
        bool changed = true;

        while (changed) {
                changed = false;
                for (size_t i = p->n_specs; i > 0; i--) {
                        const ModuleSpec *s = p->specs + i - 1;

                        if (drop[i - 1] || (s->role != ROLE_REQUESTED && !keep[i - 1]))
                                continue;
                        keep[i - 1] = true;
                        for (size_t k = 0; k < s->n_requires; k++)
                                keep[s->requires[k]] = !drop[s->requires[k]];
                        for (size_t k = 0; k < s->n_after; k++)
                                keep[s->after[k]] = !drop[s->after[k]];
                }
                for (size_t i = 0; i < p->n_specs; i++) {
                        const ModuleSpec *s = p->specs + i;

                        if (keep[i] || drop[i] || s->role != ROLE_SOFTDEP_POST)
                                continue;
                        for (size_t k = 0; k < s->n_after; k++)
                                if (keep[s->after[k]]) {
                                        keep[i] = changed = true;
                                        break;
                                }
                }
        }
}

int plan_filter(const Plan *p, const bool *drop, Plan **ret) {
        _cleanup_(plan_freep) Plan *q = NULL;
        _cleanup_free_ bool *keep = calloc(p->n_specs ?: 1, sizeof(bool));
        _cleanup_free_ size_t *map = calloc(p->n_specs ?: 1, sizeof(size_t));

        assert(p);

        q = calloc(1, sizeof(Plan));
        if (!q || !keep || !map)
                return -ENOMEM;
        q->specs = calloc(p->n_specs ?: 1, sizeof(ModuleSpec));
        q->blacklisted = strv_copy_n(p->blacklisted, p->n_blacklisted);
        if (!q->specs || !q->blacklisted)
                return -ENOMEM;
        q->n_blacklisted = p->n_blacklisted;
        q->key_blacklisted = p->key_blacklisted;

        plan_mark_kept(p, drop, keep);
        for (size_t i = 0; i < p->n_specs; i++) {
                int r;

                map[i] = keep[i] ? q->n_specs : SIZE_MAX;
                if (!keep[i])
                        continue;
                q->n_specs++;
                r = spec_copy(p->specs + i, map, q->specs + q->n_specs - 1);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(q);
        return 0;
}
