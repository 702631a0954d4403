/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "authorize.h"
#include "macro.h"
#include "peer.h"
#include "tests.h"

static const char *decide(const PeerIdentity *p, const AuthRequest *r) {
        static char buf[512];

        return authorize(p, r, buf, sizeof(buf));
}

static void check_allowed(const PeerIdentity *p, const AuthRequest *r) {
        const char *why = decide(p, r);

        if (why)
                fprintf(stderr, "refused: %s\n", why);
        check(!why);
}

/* A peer that was, when it connected, what it is now. */
static PeerIdentity steady(PeerIdentity p) {
        p.connect = (PeerAtConnect) {
                .known = p.known,
                .cap_sys_module = p.cap_sys_module,
                .other_userns = p.other_userns,
                .kernel_helper = p.kernel_helper,
                .unit = p.unit,
                .system_unit = p.system_unit,
                .n_groups = p.n_groups,
        };
        memcpy(p.connect.groups, p.groups, sizeof(p.groups));
        return p;
}

static void check_refused(const PeerIdentity *p, const AuthRequest *r, const char *want) {
        const char *why = decide(p, r);

        check(why);
        check_streq(why, want);
}

TEST(capability) {
        PeerIdentity admin = steady((PeerIdentity) { .known = true, .pid = 100, .cap_sys_module = true,
                                                     .unit = (char *) "session-1.scope" });
        PeerIdentity sandboxed = steady((PeerIdentity) { .known = true, .pid = 101,
                                                         .unit = (char *) "foo.service" });
        PeerIdentity nested = steady((PeerIdentity) { .known = true, .pid = 102, .other_userns = true,
                                                      .unit = (char *) "box.service" });
        PeerIdentity gone = steady((PeerIdentity) { .pid = 103 });
        AuthRequest load = { .method = AUTH_LOAD, .name = "vxlan" };
        AuthRequest unload = { .method = AUTH_UNLOAD, .name = "vxlan" };
        AuthRequest params = { .method = AUTH_LOAD, .name = "dummy", .parameters = "numdummies=2" };

        check_allowed(&admin, &load);
        check_allowed(&admin, &unload);
        check_allowed(&admin, &params);
        check_refused(&sandboxed, &load, "pid 101 (foo.service) lacks CAP_SYS_MODULE");
        check_refused(&sandboxed, &unload, "pid 101 (foo.service) lacks CAP_SYS_MODULE");
        check_refused(&nested, &load, "pid 102 (box.service) lacks CAP_SYS_MODULE in the initial user namespace");
        check_refused(&gone, &load, "the caller's identity cannot be read (it has exited, or is not a process)");
        sandboxed.unit = NULL;
        check_refused(&sandboxed, &params, "pid 101 (no unit) lacks CAP_SYS_MODULE");
}

TEST(source_claims) {
        PeerIdentity admin = steady((PeerIdentity) { .known = true, .pid = 100, .cap_sys_module = true,
                                                     .unit = (char *) "session-1.scope" });
        PeerIdentity helper = steady((PeerIdentity) { .known = true, .pid = 200, .cap_sys_module = true,
                                                      .kernel_helper = true });
        PeerIdentity boot = steady((PeerIdentity) { .known = true, .pid = 300, .cap_sys_module = true,
                                                    .unit = (char *) BOOT_UNIT, .system_unit = true });
        PeerIdentity udevd = steady((PeerIdentity) { .known = true, .pid = 400, .cap_sys_module = true,
                                                     .unit = (char *) UDEV_UNIT, .system_unit = true });
        AuthRequest r = { .method = AUTH_LOAD, .name = "vxlan", .source_given = true };

        /* Even with CAP_SYS_MODULE a peer may not claim to be someone else. */
        r.source = SOURCE_KERNEL;
        check_allowed(&helper, &r);
        check_refused(&admin, &r, "source \"kernel\" is claimed by pid 100 (session-1.scope), which is not a kernel "
                      "usermode helper");
        r.source = SOURCE_BOOT;
        check_allowed(&boot, &r);
        check_refused(&helper, &r, "source \"boot\" is claimed by pid 200 (no unit), not by modgate-modules-load.service");
        r.source = SOURCE_UDEV;
        check_allowed(&udevd, &r);
        check_refused(&boot, &r, "source \"udev\" is claimed by pid 300 (modgate-modules-load.service), not by "
                      "systemd-udevd.service");
        r.source = SOURCE_ADMIN;
        check_allowed(&helper, &r);
        check_allowed(&udevd, &r);
        r.source_given = false;
        r.source = SOURCE_KERNEL;       /* not sent: nothing claimed */
        check_allowed(&admin, &r);
}

TEST(udevd_without_capability) {
        const UdevRuleName names[] = {
                { .name = (char *) "tifm_sd", .subsystems = (char *[]) { (char *) "tifm", NULL } },
                { .name = (char *) "ms_block", .subsystems = (char *[]) { (char *) "memstick", NULL } },
                { .name = (char *) "sm_ftl", .kernels = (char *[]) { (char *) "mtd*ro", NULL } },
                { .name = (char *) "ppdev", .subsystems = (char *[]) { (char *) "module", NULL },
                  .kernels = (char *[]) { (char *) "parport_pc", NULL } },
        };
        PeerIdentity udevd = steady((PeerIdentity) { .known = true, .pid = 400, .unit = (char *) UDEV_UNIT,
                                                     .system_unit = true });
        AuthRequest r = {
                .method = AUTH_LOAD,
                .modalias = "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",
                .source_given = true,
                .source = SOURCE_UDEV,
                .devpath = "/devices/pci0000:00/0000:00:03.0",
                .device_exists = true,
                .device_modalias = "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",
                .rule_names = names,
                .n_rule_names = ELEMENTSOF(names),
        };

        check_allowed(&udevd, &r);
        r.device_modalias = "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00";
        check_refused(&udevd, &r, "modalias pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00 is not device "
                      "/devices/pci0000:00/0000:00:03.0's (pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00)");
        r.device_modalias = NULL;
        check_refused(&udevd, &r, "modalias pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00 is not device "
                      "/devices/pci0000:00/0000:00:03.0's (it has none)");
        r.device_exists = false;
        check_refused(&udevd, &r, "device /devices/pci0000:00/0000:00:03.0 does not exist");
        /* The kernel's uevent log says why, when it knows. */
        r.device_unknown = "the kernel sent no uevent 5";
        check_refused(&udevd, &r, "the kernel sent no uevent 5");
        r.device_unknown = NULL;

        /* Names: only those udev's rules pass, for a device that rule matches. */
        r = (AuthRequest) { .method = AUTH_LOAD, .name = "tifm-sd", .source_given = true, .source = SOURCE_UDEV,
                            .devpath = "/devices/x/tifm0", .device_exists = true, .device_subsystem = "tifm",
                            .rule_names = names, .n_rule_names = ELEMENTSOF(names) };
        check_allowed(&udevd, &r);
        r.device_subsystem = "virtio";
        check_refused(&udevd, &r, "udev's rules pass module tifm-sd for other devices than /devices/x/tifm0 "
                      "(subsystem virtio)");
        r.device_subsystem = NULL;
        check_refused(&udevd, &r, "udev's rules pass module tifm-sd for other devices than /devices/x/tifm0 "
                      "(subsystem none)");
        r = (AuthRequest) { .method = AUTH_LOAD, .name = "sm_ftl", .source_given = true, .source = SOURCE_UDEV,
                            .devpath = "/devices/virtual/mtd/mtd0ro", .device_exists = true, .device_subsystem = "mtd",
                            .rule_names = names, .n_rule_names = ELEMENTSOF(names) };
        check_allowed(&udevd, &r);
        r.devpath = "/devices/virtual/mtd/mtd0";
        check_refused(&udevd, &r, "udev's rules pass module sm_ftl for other devices than /devices/virtual/mtd/mtd0 "
                      "(subsystem mtd)");
        r.name = "ppdev";
        r.devpath = "/module/parport_pc";
        r.device_subsystem = "module";
        check_allowed(&udevd, &r);
        r.devpath = "/module/lp";
        check_refused(&udevd, &r, "udev's rules pass module ppdev for other devices than /module/lp (subsystem module)");
        r = (AuthRequest) { .method = AUTH_LOAD, .name = "vxlan", .source_given = true, .source = SOURCE_UDEV,
                            .devpath = "/devices/x", .device_exists = true, .rule_names = names,
                            .n_rule_names = ELEMENTSOF(names) };
        check_refused(&udevd, &r, "module vxlan is not one that udev's installed rules name");
        r.name = "ms_block";
        r.parameters = "x=1";
        check_refused(&udevd, &r, "udevd may not give a path or parameters without CAP_SYS_MODULE");
        r.parameters = NULL;
        r.source = SOURCE_ADMIN;
        check_refused(&udevd, &r, "udevd's requests must name their device (context.source \"udev\" and devpath)");
        r.source = SOURCE_UDEV;
        r.devpath = NULL;
        check_refused(&udevd, &r, "udevd's requests must name their device (context.source \"udev\" and devpath)");
        r = (AuthRequest) { .method = AUTH_UNLOAD, .name = "ms_block" };
        check_refused(&udevd, &r, "udevd may only load modules without CAP_SYS_MODULE");
        r = (AuthRequest) { .method = AUTH_RELOAD };
        check_refused(&udevd, &r, "udevd may only load modules without CAP_SYS_MODULE");

        /* In another user namespace, the unit's name is no credential. */
        udevd.other_userns = true;
        r = (AuthRequest) { .method = AUTH_LOAD, .name = "tifm_sd", .source_given = true, .source = SOURCE_UDEV,
                            .devpath = "/devices/x", .device_exists = true, .device_subsystem = "tifm",
                            .rule_names = names, .n_rule_names = ELEMENTSOF(names) };
        check_refused(&udevd, &r, "pid 400 (systemd-udevd.service) lacks CAP_SYS_MODULE in the initial user namespace");
}

/* Reload changes the policy: the capability, as for Load. */
TEST(reload) {
        PeerIdentity admin = steady((PeerIdentity) { .known = true, .pid = 100, .cap_sys_module = true });
        PeerIdentity root = steady((PeerIdentity) { .known = true, .pid = 101,
                                                    .unit = (char *) "foo.service" });
        AuthRequest r = { .method = AUTH_RELOAD };

        check_allowed(&admin, &r);
        check_refused(&root, &r, "pid 101 (foo.service) lacks CAP_SYS_MODULE");
}

/* Seal stops every load until reboot: the capability, and never udevd without it, whatever it asks. */
TEST(seal) {
        PeerIdentity admin = steady((PeerIdentity) { .known = true, .pid = 100, .cap_sys_module = true,
                                                     .unit = (char *) "session-1.scope" });
        PeerIdentity root = steady((PeerIdentity) { .known = true, .pid = 101,
                                                    .unit = (char *) "foo.service" });
        PeerIdentity nested = steady((PeerIdentity) { .known = true, .pid = 102, .other_userns = true,
                                                      .unit = (char *) "box.service" });
        PeerIdentity udevd = steady((PeerIdentity) { .known = true, .pid = 400, .unit = (char *) UDEV_UNIT,
                                                     .system_unit = true });
        PeerIdentity gone = steady((PeerIdentity) { .pid = 103, .cap_sys_module = true });
        AuthRequest r = { .method = AUTH_SEAL };

        check_allowed(&admin, &r);
        check_refused(&root, &r, "pid 101 (foo.service) lacks CAP_SYS_MODULE");
        check_refused(&nested, &r, "pid 102 (box.service) lacks CAP_SYS_MODULE in the initial user namespace");
        check_refused(&udevd, &r, "udevd may only load modules without CAP_SYS_MODULE");
        r = (AuthRequest) { .method = AUTH_SEAL, .source_given = true, .source = SOURCE_UDEV,
                            .devpath = "/devices/x", .device_exists = true };
        check_refused(&udevd, &r, "udevd may only load modules without CAP_SYS_MODULE");
        check_refused(&gone, &r, "the caller's identity cannot be read (it has exited, or is not a process)");
}

/* Reporting needs no capability: root, or a member of ReadGroup=, by primary or supplementary group. */
TEST(read) {
        PeerIdentity root = steady((PeerIdentity) { .known = true, .pid = 100, .uid = 0 });
        PeerIdentity user = steady((PeerIdentity) { .known = true, .pid = 101, .uid = 1000, .gid = 1000,
                                                    .groups = { 24, 27 }, .n_groups = 2 });
        PeerIdentity member = steady((PeerIdentity) { .known = true, .pid = 102, .uid = 1001, .gid = 990 });
        PeerIdentity gone = steady((PeerIdentity) { .pid = 103, .uid = 0 });
        AuthRequest r = { .method = AUTH_READ };

        check_allowed(&root, &r);
        check_refused(&user, &r, "uid 1000 is not root, and no ReadGroup= is configured");
        check_refused(&gone, &r, "the caller's identity cannot be read (it has exited, or is not a process)");
        r.have_read_group = true;
        r.read_group = 990;
        check_allowed(&member, &r);
        check_refused(&user, &r, "uid 1000 is neither root nor in group 990 (ReadGroup=)");
        r.read_group = 27;
        check_allowed(&user, &r);
        check_allowed(&root, &r);
}

static void check_unit(const char *text, int want_r, const char *want_unit, bool want_system, bool want_root) {
        char *unit = (char *) "unset";
        bool root = !want_root, system = !want_system;
        int r;

        r = cgroup_unit(text, &unit, &system, &root);
        check(r == want_r);
        if (r < 0)
                return;
        if (!streq_ptr(unit, want_unit))
                fprintf(stderr, "%s: got %s\n", text, unit);
        check(streq_ptr(unit, want_unit));
        check(system == want_system);
        check(root == want_root);
        free(unit);
}

TEST(cgroup) {
        check_unit("0::/system.slice/systemd-udevd.service/udev\n", 0, "systemd-udevd.service", true, false);
        check_unit("0::/system.slice/modgate-modules-load.service\n", 0, "modgate-modules-load.service", true, false);
        check_unit("0::/user.slice/user-0.slice/session-3.scope\n", 0, "session-3.scope", false, false);
        check_unit("0::/\n", 0, NULL, false, true);
        check_unit("0::/init.scope\n", 0, "init.scope", false, false);
        check_unit("0::/machine.slice/x\n", 0, NULL, false, false);
        /* A delegated subtree may name its cgroups anything: they are its unit's, not services. */
        check_unit("0::/system.slice/foo.service/systemd-udevd.service\n", 0, "foo.service", true, false);
        check_unit("0::/machine.slice/systemd-nspawn@c.service/payload/system.slice/systemd-udevd.service\n", 0,
                   "systemd-nspawn@c.service", false, false);
        /* Made at the top, or in another slice: called so, not a system service. */
        check_unit("0::/systemd-udevd.service\n", 0, "systemd-udevd.service", false, false);
        check_unit("0::/system.slice/x.slice/systemd-udevd.service\n", 0, "systemd-udevd.service", false, false);
        check_unit("0::/user.slice/systemd-udevd.service\n", 0, "systemd-udevd.service", false, false);
        /* Hybrid: systemd's own hierarchy says where; the unified one holds nothing. */
        check_unit("9:name=systemd:/system.slice/systemd-udevd.service\n8:pids:/\n0::/\n", 0,
                   "systemd-udevd.service", true, false);
        check_unit("9:name=systemd:/\n0::/\n", 0, NULL, false, true);
        /* A cgroup of another hierarchy, named to look like systemd's line, is that hierarchy's. */
        check_unit("1:name=systemd:/user.slice/user-1000.slice/user@1000.service/x\n"
                   "3:cpu:/x:name=systemd:/system.slice/systemd-udevd.service\n0::/\n", 0, "user@1000.service",
                   false, false);
        check_unit("4:memory:/x\n", -EBADMSG, NULL, false, false);
        check_unit("", -EBADMSG, NULL, false, false);
        check_unit("0::relative\n", -EBADMSG, NULL, false, false);
}

TEST(unit_names_are_not_credentials) {
        /* A process in a cgroup merely named like udevd's, not system.slice's service, is not udevd. */
        PeerIdentity fake = steady((PeerIdentity) { .known = true, .pid = 500, .unit = (char *) UDEV_UNIT,
                                                    .system_unit = false });
        AuthRequest r = { .method = AUTH_LOAD, .name = "x", .source_given = true, .source = SOURCE_UDEV,
                          .devpath = "/devices/x", .device_exists = true };

        check_refused(&fake, &r, "source \"udev\" is claimed by pid 500 (systemd-udevd.service), not by "
                      "systemd-udevd.service");
        r.source = SOURCE_ADMIN;
        check_refused(&fake, &r, "pid 500 (systemd-udevd.service) lacks CAP_SYS_MODULE");
}

/* The capability must hold when the peer connected and at the call, in the initial user namespace at
 * both, and never have been found missing on the connection in between; a zombie may do nothing. */
TEST(connect_and_now) {
        static const AuthMethod methods[] = { AUTH_LOAD, AUTH_UNLOAD, AUTH_RELOAD, AUTH_SEAL };

        for (size_t m = 0; m < ELEMENTSOF(methods); m++)
                for (unsigned bits = 0; bits < 64; bits++) {
                        bool cap_then = bits & 1, cap_now = bits & 2, ns_then = bits & 4, ns_now = bits & 8,
                             dropped = bits & 16, zombie = bits & 32;
                        PeerIdentity p = {
                                .known = true, .pid = 600, .exited = zombie,
                                .unit = (char *) "session-2.scope",
                                .cap_sys_module = cap_now && !ns_now, .other_userns = ns_now,
                                .connect = { .known = true, .cap_sys_module = cap_then && !ns_then,
                                             .other_userns = ns_then, .cap_dropped = dropped,
                                             .unit = "session-2.scope" },
                        };
                        AuthRequest r = { .method = methods[m], .name = "vxlan",
                                          .parameters = methods[m] == AUTH_LOAD ? "x=1" : NULL };
                        const char *why = decide(&p, &r);
                        bool want = cap_then && cap_now && !ns_then && !ns_now && !dropped && !zombie;

                        check(!why == want);
                        check(peer_has_cap_sys_module(&p) == (want));
                        if (zombie)
                                check_streq(why, "pid 600 (session-2.scope), which connected, has exited (a zombie): "
                                            "its connection is held by another process");
                        else if (ns_then || ns_now)
                                check_streq(why, "pid 600 (session-2.scope) lacks CAP_SYS_MODULE in the initial "
                                            "user namespace");
                        else if (!cap_now)
                                check_streq(why, "pid 600 (session-2.scope) lacks CAP_SYS_MODULE");
                        else if (!cap_then)
                                check_streq(why, "pid 600 (session-2.scope) lacked CAP_SYS_MODULE when it "
                                            "connected: a capability gained after connecting grants nothing on that "
                                            "connection");
                        else if (dropped)
                                check_streq(why, "pid 600 (session-2.scope) was without CAP_SYS_MODULE at an earlier "
                                            "call on this connection: a capability taken back grants nothing on it");
                }
}

/* What was not read at connect, or was read from a process whose ids had changed since connect(),
 * grants nothing but root's reading; a zombie may not even read. */
TEST(connect_unknown) {
        PeerIdentity p = { .known = true, .pid = 601, .cap_sys_module = true, .unit = (char *) "x.service" };
        AuthRequest load = { .method = AUTH_LOAD, .name = "vxlan" }, read = { .method = AUTH_READ };

        check_refused(&p, &load, "pid 601 (x.service) could not be read when its connection was accepted: what it "
                      "holds now grants nothing on this connection");
        p.connect.ids_changed = true;
        check_refused(&p, &load, "pid 601 (x.service) ran a set-user-ID or set-group-ID program between connecting "
                      "and the daemon's accept: what it holds now grants nothing on this connection");
        check_allowed(&p, &read);
        p.exited = true;
        check_refused(&p, &read, "pid 601 (x.service), which connected, has exited (a zombie): its connection is "
                      "held by another process");
        p = (PeerIdentity) { .known = true, .exited = true, .pid = 602 };
        check_refused(&p, &load, "pid 602 (no unit), which connected, has exited (a zombie): its connection is held "
                      "by another process");
}

/* Units and the kernel helper's parent: at connect and now. */
TEST(claims_connect_and_now) {
        PeerIdentity udevd = steady((PeerIdentity) { .known = true, .pid = 400, .unit = (char *) UDEV_UNIT,
                                                     .system_unit = true });
        PeerIdentity boot = steady((PeerIdentity) { .known = true, .pid = 300, .cap_sys_module = true,
                                                    .unit = (char *) BOOT_UNIT, .system_unit = true });
        PeerIdentity helper = steady((PeerIdentity) { .known = true, .pid = 200, .cap_sys_module = true,
                                                      .kernel_helper = true });
        AuthRequest r = { .method = AUTH_LOAD, .modalias = "pci:v1", .source_given = true, .source = SOURCE_UDEV,
                          .devpath = "/devices/x", .device_exists = true, .device_modalias = "pci:v1" };

        check_allowed(&udevd, &r);
        /* Moved into udevd's cgroup after connecting: not udevd. */
        udevd.connect.unit = "session-1.scope";
        udevd.connect.system_unit = false;
        check_refused(&udevd, &r, "source \"udev\" is claimed by pid 400 (systemd-udevd.service), not by "
                      "systemd-udevd.service");
        r.source = SOURCE_ADMIN;
        check_refused(&udevd, &r, "pid 400 (systemd-udevd.service) lacks CAP_SYS_MODULE");
        /* udevd in a user namespace when it connected. */
        udevd = steady(udevd);
        udevd.connect.unit = UDEV_UNIT;
        udevd.connect.system_unit = true;
        udevd.connect.other_userns = true;
        r.source = SOURCE_UDEV;
        check_refused(&udevd, &r, "pid 400 (systemd-udevd.service) lacks CAP_SYS_MODULE in the initial user "
                      "namespace");

        r = (AuthRequest) { .method = AUTH_LOAD, .name = "vxlan", .source_given = true, .source = SOURCE_BOOT };
        check_allowed(&boot, &r);
        boot.connect.unit = "foo.service";
        check_refused(&boot, &r, "source \"boot\" is claimed by pid 300 (modgate-modules-load.service), not by "
                      "modgate-modules-load.service");

        r.source = SOURCE_KERNEL;
        check_allowed(&helper, &r);
        helper.connect.kernel_helper = false;
        check_refused(&helper, &r, "source \"kernel\" is claimed by pid 200 (no unit), which is not a kernel "
                      "usermode helper");
}

/* A supplementary group counts when held at connect and now; the primary gid is the kernel's, kept at
 * connect(). */
TEST(read_group_connect_and_now) {
        PeerIdentity member = steady((PeerIdentity) { .known = true, .pid = 700, .uid = 4242, .gid = 4242,
                                                      .groups = { 4343 }, .n_groups = 1 });
        AuthRequest r = { .method = AUTH_READ, .have_read_group = true, .read_group = 4343 };

        check_allowed(&member, &r);
        member.connect.n_groups = 0;
        check_refused(&member, &r, "uid 4242 is neither root nor in group 4343 (ReadGroup=)");
        member = steady(member);
        member.connect.groups[0] = 4343;
        member.connect.n_groups = 1;
        member.n_groups = 0;
        check_refused(&member, &r, "uid 4242 is neither root nor in group 4343 (ReadGroup=)");
}

/* What the daemon takes of /proc/PID/status: a zombie's still reads, with the credentials it had. */
TEST(proc_status) {
        ProcStatus st;

        check(proc_status_parse("Name:\tsu\nState:\tZ (zombie)\nPPid:\t77\nUid:\t4242\t0\t0\t0\n"
                                "Gid:\t4343\t4343\t4343\t4343\nGroups:\t4343 27\n"
                                "CapEff:\t000001ffffffffff\n", &st) == 0);
        check(st.state == 'Z');
        check(st.euid == 0 && st.egid == 4343 && st.ppid == 77 && st.n_groups == 2 && st.groups[1] == 27);
        check(st.cap_eff == 0x1ffffffffffULL);
        check_streq(st.comm, "su");
        check(proc_status_parse("State:\tS (sleeping)\nPPid:\t1\nCapEff:\t0000000000000000\n", &st) == 0);
        check(st.state == 'S' && st.euid == (uid_t) -1 && st.egid == (gid_t) -1);
        check(proc_status_parse("State:\tR (running)\nUid:\t0\t0\t0\t0\n", &st) == -EBADMSG);
}

int main(void) {
        RUN(capability);
        RUN(source_claims);
        RUN(udevd_without_capability);
        RUN(reload);
        RUN(seal);
        RUN(read);
        RUN(cgroup);
        RUN(unit_names_are_not_credentials);
        RUN(connect_and_now);
        RUN(connect_unknown);
        RUN(claims_connect_and_now);
        RUN(read_group_connect_and_now);
        RUN(proc_status);
        return tests_done();
}
