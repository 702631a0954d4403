/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fdstore.h"
#include "fileio.h"
#include "hashmap.h"
#include "kernel.h"
#include "module-name.h"
#include "record-history.h"
#include "strv.h"
#include "time-util.h"

struct History {
        int fd;                 /* a memfd kept in PID 1's fd store; -EBADF: memory only */
        Hashmap *modules;       /* name -> sd_json_variant */
        size_t file_size;
};

static void unref_void(void *v) {
        sd_json_variant_unref(v);
}

History *history_free(History *h) {
        if (!h)
                return NULL;
        hashmap_free(h->modules);
        safe_close(h->fd);
        free(h);
        return NULL;
}

static const char *entry_module(sd_json_variant *e) {
        sd_json_variant *m = sd_json_variant_by_key(e, "module");

        return m && sd_json_variant_is_string(m) ? sd_json_variant_string(m) : NULL;
}

/* An entry names a module as the kernel does: only such entries are kept, and compared with the
 * kernel's list. */
static int remember(History *h, sd_json_variant *e) {
        const char *name = entry_module(e);
        sd_json_variant *old;
        int r;

        if (!name || !module_name_is_valid(name) || strchr(name, '-'))
                return -EBADMSG;
        old = hashmap_remove(h->modules, name);
        if (!old && hashmap_size(h->modules) >= HISTORY_MODULES_MAX)
                return -E2BIG;
        sd_json_variant_unref(old);
        r = hashmap_put(h->modules, name, sd_json_variant_ref(e));
        if (r < 0)
                sd_json_variant_unref(e);
        return r;
}

/* One line per entry; a line that does not parse (a torn write at a crash, which may hold NUL bytes)
 * is skipped, and the lines after it are read all the same. */
static int read_lines(History *h, char *text, size_t size, unsigned *skipped) {
        for (char *line = text, *end = text + size; line < end;) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;
                char *nl = memchr(line, '\n', (size_t) (end - line));
                size_t n = nl ? (size_t) (nl - line) : (size_t) (end - line);
                int r;

                line[n] = '\0';
                if (memchr(line, '\0', n) || sd_json_parse(line, 0, &e, NULL, NULL) < 0 ||
                    !sd_json_variant_is_object(e))
                        (*skipped)++;
                else {
                        r = remember(h, e);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                (*skipped)++;
                }
                line += n + 1;
        }
        return 0;
}

/* What a store kept: a memfd of ours (only shmem takes seals), which nothing may shrink. */
static int read_memfd(int fd, char **ret, size_t *ret_size) {
        int seals;

        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0 || !(seals & F_SEAL_SHRINK))
                return -EBADFD;
        return read_full_fd(fd, (size_t) HISTORY_FILE_MAX * 2, ret, ret_size);
}

int history_open_fd(int fd, History **ret, unsigned *ret_skipped) {
        _cleanup_close_ int owned = fd;
        _cleanup_(history_freep) History *h = calloc(1, sizeof(History));
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r;

        assert(ret_skipped);

        *ret_skipped = 0;
        if (!h)
                return -ENOMEM;
        h->fd = -EBADF;
        h->modules = hashmap_new(unref_void);
        if (!h->modules)
                return -ENOMEM;
        if (fd >= 0) {
                bool cut;

                r = read_memfd(fd, &text, &size);
                if (r < 0)
                        return r;
                h->file_size = size;
                /* Looked at before read_lines(), which ends each line it reads with a NUL. */
                cut = size > 0 && text[size - 1] != '\n';
                r = read_lines(h, text, size, ret_skipped);
                if (r < 0)
                        return r;
                /* A line a crash cut short is closed, so that the next one is whole. */
                if (cut) {
                        if (pwrite(fd, "\n", 1, (off_t) size) != 1)
                                return negative_errno();
                        h->file_size++;
                }
        }
        h->fd = TAKE_FD(owned);
        *ret = TAKE_PTR(h);
        return 0;
}

int history_memfd_new(void) {
        _cleanup_close_ int fd = memfd_create("modgate-history", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        if (fd < 0)
                return negative_errno();
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

int history_open(bool keep, History **ret, unsigned *ret_skipped) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        assert(ret_skipped);

        *ret_skipped = 0;
        if (keep) {
                fd = fdstore_take(FDSTORE_HISTORY);
                if (fd == -ENOMEM)
                        return fd;
        }
        if (keep && fd < 0) {
                fd = history_memfd_new();
                if (fd < 0)
                        return fd;
                r = fdstore_put(fd, FDSTORE_HISTORY);
                if (r < 0)
                        return r;
        }
        return history_open_fd(TAKE_FD(fd), ret, ret_skipped);
}

static int append_line(int fd, off_t offset, sd_json_variant *e, size_t *ret_size) {
        _cleanup_free_ char *text = NULL;
        size_t n;
        ssize_t k;
        int r;

        r = sd_json_variant_format(e, 0, &text);
        if (r < 0)
                return r;
        n = strlen(text);
        if (n + 1 > HISTORY_LINE_MAX)
                return -E2BIG;
        text[n] = '\n';         /* sd_json_variant_format()'s NUL becomes the line's end */
        k = pwrite(fd, text, n + 1, offset);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != n + 1)
                return -EIO;
        *ret_size = n + 1;
        return 0;
}

/* The latest entry of each module alone, written to a new memfd that replaces the old one in the
 * store (the old one cannot shrink). */
static int compact(History *h) {
        _cleanup_close_ int fd = -EBADF;
        size_t state = 0, total = 0, n;
        const char *key;
        void *v;
        int r;

        fd = history_memfd_new();
        if (fd < 0)
                return fd;
        while (hashmap_iterate(h->modules, &state, &key, &v)) {
                r = append_line(fd, (off_t) total, v, &n);
                if (r < 0)
                        return r;
                total += n;
        }
        r = fdstore_put(fd, FDSTORE_HISTORY);
        if (r < 0)
                return r;
        safe_close(h->fd);
        h->fd = TAKE_FD(fd);
        h->file_size = total;
        return 0;
}

int history_add(History *h, sd_json_variant *entry) {
        size_t n;
        int r;

        r = remember(h, entry);
        if (r < 0 || h->fd < 0)
                return r;
        if (h->file_size >= HISTORY_FILE_MAX)
                return compact(h);
        r = append_line(h->fd, (off_t) h->file_size, entry, &n);
        if (r < 0)
                return r;
        h->file_size += n;
        return 0;
}

sd_json_variant *history_get(History *h, const char *module) {
        assert(h);

        return hashmap_get(h->modules, module);
}

static int cmp_entries(const void *a, const void *b) {
        return strcmp(entry_module(*(sd_json_variant *const *) a),
                      entry_module(*(sd_json_variant *const *) b));
}

int history_list(History *h, sd_json_variant **ret) {
        size_t n = hashmap_size(h->modules), i = 0, state = 0;
        _cleanup_free_ sd_json_variant **a = calloc(n ?: 1, sizeof(sd_json_variant *));
        const char *key;
        void *v;

        assert(h);

        if (!a)
                return -ENOMEM;
        while (hashmap_iterate(h->modules, &state, &key, &v))
                a[i++] = v;
        qsort(a, n, sizeof(sd_json_variant *), cmp_entries);
        return sd_json_variant_new_array(ret, a, n);
}

static int requester_json(const Requester *who, sd_json_variant **ret) {
        return sd_json_buildo(
                ret, SD_JSON_BUILD_PAIR_STRING("source", request_source_to_string(who->source)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->name, "requestName", SD_JSON_BUILD_STRING(who->name)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->modalias, "modalias",
                                             SD_JSON_BUILD_STRING(who->modalias)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->path, "requestPath", SD_JSON_BUILD_STRING(who->path)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->devpath, "devpath", SD_JSON_BUILD_STRING(who->devpath)),
                SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerPid", SD_JSON_BUILD_INTEGER(who->pid)),
                SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerUid", SD_JSON_BUILD_UNSIGNED(who->uid)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->unit, "peerUnit", SD_JSON_BUILD_STRING(who->unit)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->comm, "peerCommand", SD_JSON_BUILD_STRING(who->comm)));
}

/* The requests that joined a load, as an array; NULL when none did. */
static int joined_json(const Requesters *all, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *a = NULL;
        int r;

        *ret = NULL;
        for (size_t i = 0; i < all->n_joined; i++) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *e = NULL;

                r = requester_json(all->joined + i, &e);
                if (r < 0)
                        return r;
                r = sd_json_variant_append_array(&a, e);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int history_entry_module(const Requesters *all, const ModuleResult *r, sd_json_variant **ret) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *joined = NULL;
        char hex[SHA256_HEX_SIZE] = "", device[32] = "";
        const Requester *who = all->first;
        int k;

        assert(all);

        k = joined_json(all, &joined);
        if (k < 0)
                return k;

        if (r->have_sha256)
                sha256_to_hex(r->sha256, hex);
        if (r->have_origin)
                snprintf(device, sizeof(device), "%u:%u", major(r->origin.dev), minor(r->origin.dev));
        return sd_json_buildo(
                ret, SD_JSON_BUILD_PAIR_STRING("module", r->name),
                SD_JSON_BUILD_PAIR_STRING("outcome", outcome_to_string(r->outcome)),
                SD_JSON_BUILD_PAIR_UNSIGNED("time", realtime_usec()),
                SD_JSON_BUILD_PAIR_STRING("role", role_to_string(r->role)),
                SD_JSON_BUILD_PAIR_STRING("source", request_source_to_string(who->source)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->name, "requestName", SD_JSON_BUILD_STRING(who->name)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->modalias, "modalias",
                                             SD_JSON_BUILD_STRING(who->modalias)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->devpath, "devpath", SD_JSON_BUILD_STRING(who->devpath)),
                SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerPid", SD_JSON_BUILD_INTEGER(who->pid)),
                SD_JSON_BUILD_PAIR_CONDITION(who->have_peer, "peerUid", SD_JSON_BUILD_UNSIGNED(who->uid)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->unit, "peerUnit", SD_JSON_BUILD_STRING(who->unit)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->comm, "peerCommand", SD_JSON_BUILD_STRING(who->comm)),
                SD_JSON_BUILD_PAIR_CONDITION(all->n > 1, "requesters", SD_JSON_BUILD_UNSIGNED(all->n)),
                SD_JSON_BUILD_PAIR_CONDITION(!!joined, "joined", SD_JSON_BUILD_VARIANT(joined)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->vendor, "deviceVendor",
                                             SD_JSON_BUILD_STRING(who->vendor)),
                SD_JSON_BUILD_PAIR_CONDITION(!!who->model, "deviceModel", SD_JSON_BUILD_STRING(who->model)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_modinfo && !!r->modinfo.alias, "alias",
                                             SD_JSON_BUILD_STRING(r->modinfo.alias)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->required_by, "requiredBy",
                                             SD_JSON_BUILD_STRING(r->required_by)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->options_source, "optionsSource",
                                             SD_JSON_BUILD_STRING(r->options_source)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->path, "path", SD_JSON_BUILD_STRING(r->path)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "device", SD_JSON_BUILD_STRING(device)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_origin, "inode",
                                             SD_JSON_BUILD_UNSIGNED((uint64_t) r->origin.ino)),
                SD_JSON_BUILD_PAIR_CONDITION(r->trusted, "evidence",
                                             SD_JSON_BUILD_STRING(evidence_to_string(r->evidence))),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_sha256, "sha256", SD_JSON_BUILD_STRING(hex)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_modinfo && !r->modinfo.is_signed, "signer",
                                             SD_JSON_BUILD_STRING("none")),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_modinfo && !!r->modinfo.signer, "signer",
                                             SD_JSON_BUILD_STRING(r->modinfo.signer)),
                SD_JSON_BUILD_PAIR_CONDITION(r->have_modinfo && !!r->modinfo.signature_key, "signatureKey",
                                             SD_JSON_BUILD_STRING(r->modinfo.signature_key)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->parameters, "parameters",
                                             SD_JSON_BUILD_STRING(r->parameters)),
                SD_JSON_BUILD_PAIR_CONDITION(r->modinfo_pending, "modinfoPending",
                                             SD_JSON_BUILD_BOOLEAN(true)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->after_load, "afterLoad",
                                             SD_JSON_BUILD_STRING(r->after_load)),
                SD_JSON_BUILD_PAIR_CONDITION(!!r->reason, "reason", SD_JSON_BUILD_STRING(r->reason)),
                SD_JSON_BUILD_PAIR_CONDITION(r->error != 0, "errnoName",
                                             SD_JSON_BUILD_STRING(strerrorname_np(r->error))),
                SD_JSON_BUILD_PAIR_CONDITION(r->error != 0 && r->outcome == OUTCOME_FAILED, "errnoClass",
                                             SD_JSON_BUILD_STRING(kernel_error_class(r->error))));
}

int history_entry_simple(const char *module, const char *outcome, const char *reason, const char *rule,
                         const char *taint, sd_json_variant **ret) {
        return sd_json_buildo(ret,
                              SD_JSON_BUILD_PAIR_STRING("module", module),
                              SD_JSON_BUILD_PAIR_STRING("outcome", outcome),
                              SD_JSON_BUILD_PAIR_UNSIGNED("time", realtime_usec()),
                              SD_JSON_BUILD_PAIR_CONDITION(!!reason, "reason", SD_JSON_BUILD_STRING(reason)),
                              SD_JSON_BUILD_PAIR_CONDITION(!!rule, "rule", SD_JSON_BUILD_STRING(rule)),
                              SD_JSON_BUILD_PAIR_CONDITION(!!taint, "taint", SD_JSON_BUILD_STRING(taint)));
}
