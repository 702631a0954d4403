/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authorize.h"
#include "macro.h"
#include "module-name.h"
#include "strv.h"

void peer_identity_done(PeerIdentity *p) {
        free(p->unit);
        free(p->cgroup);
        *p = (PeerIdentity) {};
}

static const char *unit_of(const PeerIdentity *p) {
        return p->unit ?: "no unit";
}

/* The system service of that name: a cgroup that is only called so, elsewhere, is not it. */
static bool is_unit(const PeerIdentity *p, const char *unit) {
        return p->system_unit && streq_ptr(p->unit, unit);
}

static const char *source_claim(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        if (!req->source_given || req->source == SOURCE_ADMIN)
                return NULL;
        if (req->source == SOURCE_KERNEL && !peer->kernel_helper)
                snprintf(buf, size, "source \"kernel\" is claimed by pid %d (%s), which is not a kernel usermode "
                         "helper", (int) peer->pid, unit_of(peer));
        else if (req->source == SOURCE_BOOT && !is_unit(peer, BOOT_UNIT))
                snprintf(buf, size, "source \"boot\" is claimed by pid %d (%s), not by " BOOT_UNIT, (int) peer->pid,
                         unit_of(peer));
        else if (req->source == SOURCE_UDEV && !is_unit(peer, UDEV_UNIT))
                snprintf(buf, size, "source \"udev\" is claimed by pid %d (%s), not by " UDEV_UNIT, (int) peer->pid,
                         unit_of(peer));
        else
                return NULL;
        return buf;
}

/* A name the rules pass for this very device: a rule that names it and whose SUBSYSTEM== and
 * KERNEL== matches (the rules' only conditions on the device itself), every one of them, the device
 * meets. */
static const char *rule_name_failure(const AuthRequest *req, char *buf, size_t size) {
        const char *kernel = strrchr(req->devpath, '/');
        bool named = false;

        kernel = kernel ? kernel + 1 : req->devpath;
        for (size_t i = 0; i < req->n_rule_names; i++) {
                const UdevRuleName *r = &req->rule_names[i];

                if (!module_name_equal(r->name, req->name))
                        continue;
                named = true;
                if (udev_rule_name_applies(r, req->device_subsystem, kernel))
                        return NULL;
        }
        if (named)
                snprintf(buf, size, "udev's rules pass module %s for other devices than %s (subsystem %s)", req->name,
                         req->devpath, req->device_subsystem ?: "none");
        else
                snprintf(buf, size, "module %s is not one that udev's installed rules name", req->name);
        return buf;
}

/* udevd without CAP_SYS_MODULE: only what the device itself announces. */
static const char *udev_device_request(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        if (req->method != AUTH_LOAD)
                snprintf(buf, size, "udevd may only load modules without CAP_SYS_MODULE");
        else if (req->path || req->parameters)
                snprintf(buf, size, "udevd may not give a path or parameters without CAP_SYS_MODULE");
        else if (!req->source_given || req->source != SOURCE_UDEV || !req->devpath)
                snprintf(buf, size, "udevd's requests must name their device (context.source \"udev\" and "
                         "devpath)");
        else if (!req->device_exists && req->device_unknown)
                snprintf(buf, size, "%s", req->device_unknown);
        else if (!req->device_exists)
                snprintf(buf, size, "device %s does not exist", req->devpath);
        else if (req->modalias && !streq_ptr(req->modalias, req->device_modalias))
                snprintf(buf, size, "modalias %s is not device %s's (%s)", req->modalias, req->devpath,
                         req->device_modalias ?: "it has none");
        else if (req->name)
                return rule_name_failure(req, buf, size);
        else
                return NULL;
        return buf;
}

static bool in_group(const PeerIdentity *peer, gid_t g) {
        if (peer->gid == g)
                return true;
        for (size_t i = 0; i < peer->n_groups; i++)
                if (peer->groups[i] == g)
                        return true;
        return false;
}

/* Reporting needs no capability: root, or the group the administrator opened the socket to. */
static const char *read_request(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        if (peer->uid == 0 || (req->have_read_group && in_group(peer, req->read_group)))
                return NULL;
        if (req->have_read_group)
                snprintf(buf, size, "uid %u is neither root nor in group %u (ReadGroup=)", (unsigned) peer->uid,
                         (unsigned) req->read_group);
        else
                snprintf(buf, size, "uid %u is not root, and no ReadGroup= is configured", (unsigned) peer->uid);
        return buf;
}

const char *authorize(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        const char *why;

        if (!peer->known) {
                snprintf(buf, size, "the caller's identity cannot be read (it has exited, or is not a process)");
                return buf;
        }
        if (req->method == AUTH_READ)
                return read_request(peer, req, buf, size);
        why = source_claim(peer, req, buf, size);
        if (why)
                return why;
        if (peer->cap_sys_module)
                return NULL;
        if (is_unit(peer, UDEV_UNIT) && !peer->other_userns)
                return udev_device_request(peer, req, buf, size);
        snprintf(buf, size, "pid %d (%s) lacks CAP_SYS_MODULE%s", (int) peer->pid, unit_of(peer),
                 peer->other_userns ? " in the initial user namespace" : "");
        return buf;
}

int cgroup_path(const char *text, char **ret) {
        const char *unified = NULL, *named = NULL, *p;

        /* Each line is "ID:CONTROLLERS:PATH". The path is the cgroup's own words, which whoever may
         * make cgroups there chooses, ':' and ":name=systemd:" included: only the second field says
         * which hierarchy a line is. */
        for (p = text; *p; ) {
                const char *nl = strchrnul(p, '\n'), *controllers = memchr(p, ':', (size_t) (nl - p)), *path;

                path = controllers ? memchr(controllers + 1, ':', (size_t) (nl - controllers - 1)) : NULL;
                if (path && strncmp(p, "0::", 3) == 0)
                        unified = p + 3;
                else if (path && path - controllers == 13 && strncmp(controllers, ":name=systemd:", 14) == 0)
                        named = path + 1;
                p = *nl ? nl + 1 : nl;
        }
        /* Hybrid: the unified hierarchy holds nothing ("/"); systemd's own one does. */
        p = named && (!unified || strncmp(unified, "/\n", 2) == 0 || strcmp(unified, "/") == 0) ? named : unified;
        if (!p || *p != '/')
                return -EBADMSG;
        *ret = strndup(p, strcspn(p, "\n"));
        return *ret ? 0 : -ENOMEM;
}

int cgroup_unit(const char *text, char **ret, bool *ret_system, bool *ret_root_cgroup) {
        _cleanup_free_ char *path = NULL;
        bool all_system = true;
        unsigned depth = 0;
        const char *c;
        int r;

        r = cgroup_path(text, &path);
        if (r < 0)
                return r;

        *ret = NULL;
        *ret_system = false;
        *ret_root_cgroup = strcmp(path, "/") == 0;
        for (c = path; *c; ) {
                size_t n;

                c += strspn(c, "/");
                n = strcspn(c, "/");
                if (n == 0)
                        break;
                if (n > 6 && strncmp(c + n - 6, ".slice", 6) == 0) {
                        /* Only -.slice and system.slice lead to system units. */
                        if (!((n == 12 && strncmp(c, "system.slice", 12) == 0 && depth == 0)))
                                all_system = false;
                        depth++;
                        c += n;
                        continue;
                }
                if ((n > 8 && strncmp(c + n - 8, ".service", 8) == 0) || (n > 6 && strncmp(c + n - 6, ".scope", 6) == 0)) {
                        *ret = strndup(c, n);
                        if (!*ret)
                                return -ENOMEM;
                        *ret_system = all_system && depth == 1;
                }
                break;
        }
        return 0;
}
