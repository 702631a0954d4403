/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <libkmod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "modinfo-kmod.h"
#include "module-name.h"
#include "strv.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_ctx *, kmod_unref);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_module *, kmod_module_unref);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_list *, kmod_module_info_free_list);

/* libkmod lists the .modinfo strings, then the signature's fields: a .modinfo string may have any
 * key, so the last of each signature key is the signature's. The kernel takes the first "name". */
static int modinfo_add(ModInfo *m, const char *key, const char *value, const char *alias_key) {
        char **field = NULL;

        if (strcmp(key, "alias") == 0 && alias_key && !m->alias && value &&
            fnmatch(value, alias_key, 0) == 0)
                field = &m->alias;
        else if (strcmp(key, "name") == 0 && !m->name)
                field = &m->name;
        else if (strcmp(key, "sig_id") == 0) {
                field = &m->signature_type;
                m->is_signed = true;
        } else if (strcmp(key, "signer") == 0)
                field = &m->signer;
        else if (strcmp(key, "sig_key") == 0)
                field = &m->signature_key;
        else if (strcmp(key, "sig_hashalgo") == 0)
                field = &m->signature_hash;
        if (!field)
                return 0;

        free(*field);
        *field = NULL;
        /* An empty signer or key is what libkmod says when it cannot read them. */
        if (!value || !*value)
                return 0;
        *field = strdup(value);
        return *field ? 0 : -ENOMEM;
}

int modinfo_from_fd(int fd, const char *alias_key, char ***ret_aliases, ModInfo *ret) {
        static const char *const no_config[] = { NULL };
        _cleanup_(kmod_unrefp) struct kmod_ctx *ctx = NULL;
        _cleanup_(kmod_module_unrefp) struct kmod_module *mod = NULL;
        _cleanup_(kmod_module_info_free_listp) struct kmod_list *info = NULL;
        _cleanup_(modinfo_done) ModInfo m = {};
        _cleanup_strv_free_ char **aliases = NULL;
        struct kmod_list *i;
        char path[64];
        int r;

        assert(ret);

        ctx = kmod_new(NULL, no_config);
        if (!ctx)
                return -ENOMEM;
        kmod_set_log_priority(ctx, 0);

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = kmod_module_new_from_path(ctx, path, &mod);
        if (r < 0)
                return r;
        r = kmod_module_get_info(mod, &info);
        if (r < 0)
                return r;

        kmod_list_foreach(i, info) {
                const char *key = kmod_module_info_get_key(i), *value = kmod_module_info_get_value(i);

                r = modinfo_add(&m, key, value, alias_key);
                if (r < 0)
                        return r;
                if (ret_aliases && strcmp(key, "alias") == 0 && value && *value &&
                    strv_extend(&aliases, value) < 0)
                        return -ENOMEM;
        }
        if (m.name)
                module_name_normalize(m.name);
        if (ret_aliases)
                *ret_aliases = TAKE_PTR(aliases);
        *ret = m;
        m = (ModInfo) {};
        return 0;
}
