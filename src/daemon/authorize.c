/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
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

/* The system service of that name, when it connected and now: a cgroup that is only called so,
 * elsewhere, is not it. */
static bool is_unit(const PeerIdentity *p, const char *unit) {
        return p->system_unit && streq_ptr(p->unit, unit) && p->connect.known && p->connect.system_unit &&
                streq_ptr(p->connect.unit, unit);
}

static bool in_initial_userns(const PeerIdentity *p) {
        return !p->other_userns && p->connect.known && !p->connect.other_userns;
}

bool peer_has_cap_sys_module(const PeerIdentity *p) {
        assert(p);

        return p->known && !p->exited && p->cap_sys_module && in_initial_userns(p) &&
                p->connect.cap_sys_module && !p->connect.cap_dropped;
}

static const char *source_claim(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        bool helper = peer->kernel_helper && peer->connect.known && peer->connect.kernel_helper;

        if (!req->source_given || req->source == SOURCE_ADMIN)
                return NULL;
        if (req->source == SOURCE_KERNEL && !helper)
                snprintf(buf, size,
                         "source \"kernel\" is claimed by pid %d (%s), which is not a kernel usermode "
                         "helper",
                         (int) peer->pid, unit_of(peer));
        else if (req->source == SOURCE_BOOT && !is_unit(peer, BOOT_UNIT))
                snprintf(buf, size, "source \"boot\" is claimed by pid %d (%s), not by " BOOT_UNIT,
                         (int) peer->pid, unit_of(peer));
        else if (req->source == SOURCE_UDEV && !is_unit(peer, UDEV_UNIT))
                snprintf(buf, size, "source \"udev\" is claimed by pid %d (%s), not by " UDEV_UNIT,
                         (int) peer->pid, unit_of(peer));
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
                snprintf(buf, size, "udev's rules pass module %s for other devices than %s (subsystem %s)",
                         req->name, req->devpath, req->device_subsystem ?: "none");
        else
                snprintf(buf, size, "module %s is not one that udev's installed rules name", req->name);
        return buf;
}

/* udevd without CAP_SYS_MODULE: only what the device itself announces. */
static const char *udev_device_request(const PeerIdentity *peer, const AuthRequest *req, char *buf,
                                       size_t size) {
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

static bool in_groups(const gid_t *groups, size_t n, gid_t g) {
        for (size_t i = 0; i < n; i++)
                if (groups[i] == g)
                        return true;
        return false;
}

/* The primary gid is the one the kernel kept at connect(); supplementary groups count when the
 * process had them then and has them now. */
static bool in_group(const PeerIdentity *peer, gid_t g) {
        return peer->gid == g || (in_groups(peer->groups, peer->n_groups, g) && peer->connect.known &&
                                  in_groups(peer->connect.groups, peer->connect.n_groups, g));
}

/* Reporting needs no capability: root, or the group the administrator opened the socket to. */
static const char *read_request(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        if (peer->uid == 0 || (req->have_read_group && in_group(peer, req->read_group)))
                return NULL;
        if (req->have_read_group)
                snprintf(buf, size, "uid %u is neither root nor in group %u (ReadGroup=)",
                         (unsigned) peer->uid, (unsigned) req->read_group);
        else
                snprintf(buf, size, "uid %u is not root, and no ReadGroup= is configured",
                         (unsigned) peer->uid);
        return buf;
}

/* Why a peer without the capability, now or at connect, is refused. */
static const char *lacks_capability(const PeerIdentity *peer, char *buf, size_t size) {
        const PeerAtConnect *c = &peer->connect;

        if (!c->known)
                snprintf(buf, size, "pid %d (%s) %s: what it holds now grants nothing on this connection",
                         (int) peer->pid, unit_of(peer),
                         c->ids_changed ? "ran a set-user-ID or set-group-ID program between connecting and "
                                          "the daemon's accept" :
                                          "could not be read when its connection was accepted");
        else if (!peer->cap_sys_module || !in_initial_userns(peer))
                snprintf(buf, size, "pid %d (%s) lacks CAP_SYS_MODULE%s", (int) peer->pid, unit_of(peer),
                         in_initial_userns(peer) ? "" : " in the initial user namespace");
        else if (!c->cap_sys_module)
                snprintf(buf, size,
                         "pid %d (%s) lacked CAP_SYS_MODULE when it connected: a capability gained "
                         "after connecting grants nothing on that connection",
                         (int) peer->pid, unit_of(peer));
        else
                snprintf(buf, size, "pid %d (%s) was without CAP_SYS_MODULE at an earlier call on this "
                         "connection: a capability taken back grants nothing on it", (int) peer->pid,
                         unit_of(peer));
        return buf;
}

const char *authorize(const PeerIdentity *peer, const AuthRequest *req, char *buf, size_t size) {
        const char *why;

        assert(peer);

        if (!peer->known) {
                snprintf(buf, size,
                         "the caller's identity cannot be read (it has exited, or is not a process)");
                return buf;
        }
        /* Its status still reads, with the credentials it exited with; the connection is someone
         * else's now (a child it forked, or whoever it passed the socket to). */
        if (peer->exited) {
                snprintf(buf, size, "pid %d (%s), which connected, has exited (a zombie): its connection is "
                         "held by another process", (int) peer->pid, unit_of(peer));
                return buf;
        }
        if (req->method == AUTH_READ)
                return read_request(peer, req, buf, size);
        why = source_claim(peer, req, buf, size);
        if (why)
                return why;
        if (peer_has_cap_sys_module(peer))
                return NULL;
        if (is_unit(peer, UDEV_UNIT) && in_initial_userns(peer))
                return udev_device_request(peer, req, buf, size);
        return lacks_capability(peer, buf, size);
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
        p = named && (!unified || strncmp(unified, "/\n", 2) == 0 || strcmp(unified, "/") == 0) ? named :
                                                                                                  unified;
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

        assert(ret_system);
        assert(ret_root_cgroup);

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
                if ((n > 8 && strncmp(c + n - 8, ".service", 8) == 0) ||
                    (n > 6 && strncmp(c + n - 6, ".scope", 6) == 0)) {
                        *ret = strndup(c, n);
                        if (!*ret)
                                return -ENOMEM;
                        *ret_system = all_system && depth == 1;
                }
                break;
        }
        return 0;
}
