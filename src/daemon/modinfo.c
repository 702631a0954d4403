/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libkmod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "modinfo.h"
#include "module-name.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_ctx *, kmod_unref);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_module *, kmod_module_unref);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kmod_list *, kmod_module_info_free_list);

int modinfo_name_from_fd(int fd, char **ret) {
        static const char *const no_config[] = { NULL };
        _cleanup_(kmod_unrefp) struct kmod_ctx *ctx = NULL;
        _cleanup_(kmod_module_unrefp) struct kmod_module *mod = NULL;
        _cleanup_(kmod_module_info_free_listp) struct kmod_list *info = NULL;
        struct kmod_list *i;
        char path[64];
        int r;

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

        kmod_list_foreach(i, info)
                if (strcmp(kmod_module_info_get_key(i), "name") == 0) {
                        char *name = strdup(kmod_module_info_get_value(i));

                        if (!name)
                                return -ENOMEM;
                        module_name_normalize(name);
                        *ret = name;
                        return 0;
                }
        *ret = NULL;
        return 0;
}
