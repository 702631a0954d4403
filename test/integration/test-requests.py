#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every request a real system makes: modalias, softdeps, options, one load per module however many
ask, dependency-aware parallel loading, unload.

Real libkmod over the real Debian module tree on a read-only erofs loop mount, real socket
activation, a real journald, a modprobe.d and a kernel command line mounted in this test's private
mount namespace before the daemons start. Only finit_module/delete_module are faked (test/shim),
over a private /sys/module."""

import errno
import json
import os
import signal
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
LOAD = M + "Load"
UNLOAD = M + "Unload"

# Well-known real modaliases, as udev passes them.
FIXED_MODALIASES = [
    "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",   # QEMU's e1000
    "virtio:d00000001v00001AF4",                                # virtio net
    "acpi:ACPI0003:",                                           # ACPI AC adapter
    "usb:v0781p5567d0100dc00dsc00dp00ic08isc06ip50in00",        # a SanDisk USB stick (mass storage)
]
E1000_MODALIAS = FIXED_MODALIASES[0]
VIRTIO_NET_MODALIAS = FIXED_MODALIASES[1]

# A Skylake-SP server's CPU (Intel family 6 model 0x55), as posted to linux-modules in 2022: for
# machines whose own CPU modalias matches fewer than two modules.
INTEL_CPU_MODALIAS = (
    "cpu:type:x86,ven0000fam0006mod0055:feature:,0000,0001,0002,0003,0004,0005,0006,0007,0008,0009,000B,"
    "000C,000D,000E,000F,0010,0011,0013,0015,0016,0017,0018,0019,001A,001B,001C,001D,001F,002B,0034,003A,"
    "003B,003D,0068,006A,006B,006C,006D,006F,0070,0072,0074,0075,0076,0078,0079,007C,0080,0081,0082,0083,"
    "0084,0085,0086,0087,0088,0089,008B,008C,008D,008E,008F,0091,0092,0093,0094,0095,0096,0097,0098,0099,"
    "009A,009B,009C,009D,009E,00C0,00C5,00C8,00E1,00E3,00E4,00E6,00E7,00EA,00F0,00F1,00F2,00F3,00F5,00F9,"
    "00FA,00FB,00FE,00FF,0100,0101,0102,0103,0104,0111,0120,0121,0123,0125,0126,0127,0128,0129,012A,012C,"
    "012D,012E,012F,0130,0131,0132,0133,0134,0137,0138,0139,013C,013E,013F,0140,0141,0142,0143,0160,0161,"
    "0162,0163,0164,0165,0171,01C0,01C1,01C2,01C4,01C5,01C6,0203,0204,020B,024A,025A,025B,025C,025D,025F")

# modprobe.d and the kernel command line of the scenarios. Each case has modules of its own.
INSTALL_MODULE = "veth"         # install command: refused when asked for
INSTALL_DEP_MODULE = "pppox"    # install command on a dependency of ...
INSTALL_DEP_USER = "pppoe"      # ... this one
REMOVE_MODULE = "vcan"          # remove command: Unload refuses
FRESH_MODULE = "eql"            # missing from the fresh tree's index until depmod sees it again
CONF_ALIAS = "mgcc"             # an alias of modprobe.d, with options of its own, for ...
CONF_ALIAS_MODULE = "tcp_htcp"  # ... this one
MODPROBE_D = """\
# modgate integration test: test-requests.py
softdep ipvlan pre: nlmon post: ifb
softdep team_mode_broadcast pre: team
options macvlan mgconf=1
alias {alias} {alias_module}
options {alias} mgalias=1
blacklist e1000
install {inst} /usr/bin/touch {{pwned}}-install
install {dep} /usr/bin/touch {{pwned}}-dependency
remove {rm} /usr/bin/touch {{pwned}}-remove
""".format(inst=INSTALL_MODULE, dep=INSTALL_DEP_MODULE, rm=REMOVE_MODULE, alias=CONF_ALIAS,
           alias_module=CONF_ALIAS_MODULE)
UNINDEXED_MODPROBE_D = """\
install {inst} /usr/bin/touch {pwned}-unindexed
blacklist {black}
options {opts} upconf=1
"""
CMDLINE = "BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 ro quiet macvlan.mgcmd=2 {opts}.upcmd=2\n"
BOOT_UNIT = "modgate-modules-load.service"

# Names the cases use by name; the pool of independent modules leaves them out.
NAMED = {"nlmon", "ifb", "ipvlan", "macvlan", "macvtap", "tap", "e1000", INSTALL_MODULE, INSTALL_DEP_MODULE,
         INSTALL_DEP_USER, REMOVE_MODULE, "dummy", "geneve", "vxlan", "udp_tunnel",
         "ip6_udp_tunnel", "virtio_net", "net_failover", "failover", "bonding", "can_dev", "ppp_generic", "slhc",
         "at803x", "qcom_phy_lib", "libphy", "team", "team_mode_broadcast", CONF_ALIAS_MODULE}

SLOW_MS = 1000          # a module's init in the daemon where requests must overlap
PAR_MS = 300            # a module's init in the parallelism cases
PAR_WORKERS = 4
PAR_MODULES = 16
CROWD = 200

ERRNO_CASES = [errno.EEXIST, errno.ENOEXEC, errno.EPERM, errno.EKEYREJECTED, errno.ENOKEY, errno.EBADMSG,
               errno.ETXTBSY, errno.ENOENT, errno.ENODEV, errno.EIO]
SOFTDEP_FAILURE = errno.ENODEV


class Pool:
    """Modules with no dependency and no softdep, handed out so that no two cases share one."""

    def __init__(self, names):
        self.names = list(names)

    def take(self, n):
        if len(self.names) < n:
            raise RuntimeError("not enough independent modules in the tree")
        taken, self.names = self.names[:n], self.names[n:]
        return taken


def by_name(mods):
    return {m["name"]: m for m in mods}


def calls_for(d, names):
    return [r for r in d.shim_records() if r.get("name") in names]


def finit_by_name(d):
    return {r["name"]: r for r in h.finit_records(d.shim_records())}


def ms(ns):
    return ns / 1e6


wait_for = h.wait_for


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    work = tempfile.mkdtemp(prefix="modgate-rq-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    deps = h.parse_modules_dep(tree)
    with open(os.path.join(tree, "modules.builtin")) as f:
        builtins = [h.module_name(line.strip()) for line in f if line.strip()]
    print("# module tree: %s" % tree, flush=True)

    started = time.monotonic()
    trusted = h.mount_erofs_tree(tree, work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    daemons = []

    def daemon(name, root=trusted, env=None, args=()):
        d = h.Daemon(work, name, root, extra_env=env, args=args)
        daemons.append(d)
        assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        return d

    # --- 1: the machine's own configuration, as modprobe sees it ---------------------------------

    real = h.Lazy(lambda: daemon("real"))

    def case_modalias_like_modprobe():
        own = h.machine_modaliases()
        cpu = "/sys/devices/system/cpu/modalias"
        if os.path.exists(cpu):
            with open(cpu) as f:
                assert f.read().strip() in own, "the CPU modalias was not found under /sys/devices"
        aliases = own + [a for a in FIXED_MODALIASES + [INTEL_CPU_MODALIAS] if a not in own]
        bad, found, not_found = [], 0, 0
        for alias in aliases:
            want = h.modprobe_resolve(kver, alias)
            reply = real.call(LOAD, {"modalias": alias})
            p = reply.get("parameters", {})
            if reply.get("error") == M + "ModuleNotFound":
                # Only when modprobe -R prints nothing, or only modules that modprobe.d blacklists.
                got = set(p.get("blacklisted", []))
                not_found += 1
                if got != want:
                    bad.append("%s: ModuleNotFound (blacklisted %s), modprobe -R prints %s"
                               % (alias[:80], sorted(got), sorted(want)))
                continue
            if alias in FIXED_MODALIASES and not want:
                bad.append("%s: modprobe -R prints nothing for a fixed modalias" % alias)
            requested = {m["name"] for m in p.get("modules", []) if m.get("role") == "requested"}
            got = requested | set(p.get("blacklisted", []))
            found += 1
            if "modules" not in p:
                bad.append("%s: %s" % (alias[:80], reply))
            elif got != want:
                bad.append("%s: modgate %s, modprobe -R %s" % (alias[:80], sorted(got), sorted(want)))
        print("# %d modaliases (%d of this machine, %d fixed): %d resolved, %d ModuleNotFound"
              % (len(aliases), len(own), len(aliases) - len(own), found, not_found), flush=True)
        if os.path.exists(cpu):
            with open(cpu) as f:
                alias = f.read().strip()
            print("# CPU modalias (%d bytes) -> %s" % (len(alias), " ".join(sorted(h.modprobe_resolve(kver, alias)))))
        assert not bad, "\n".join(bad)
        assert all(r["call"] == "finit_module" for r in real.shim_records())

    t.case("1 modaliases of this machine and well-known ones resolve to what modprobe -R prints",
           case_modalias_like_modprobe)
    # What follows changes modprobe.d and the kernel command line, which case 1 must not see.
    t.run()
    if real.built():
        real.stop()
    h.reset_sys_module()

    # --- the scenarios' configuration, mounted before their daemons start -------------------------

    pwned = os.path.join(work, "PWNED")
    exclude = NAMED | set(deps["vport_vxlan"][1])
    pool = Pool(h.independent_modules(tree, "kernel/drivers/net/", exclude))

    coming_live, coming_gone = pool.take(2)
    par_names = pool.take(PAR_MODULES)
    alone_name, *alone_others = pool.take(7)
    errno_names = dict(zip(ERRNO_CASES, pool.take(len(ERRNO_CASES))))
    path_module = pool.take(1)[0]
    oneway_name, oneway_other, conflict_name, drain_name = pool.take(4)
    # Modules that the fresh tree has as files but its index does not list, each with a line of its own
    # in modprobe.d: a request by path for such a file is a request for that module.
    unindexed_install, unindexed_black, unindexed_opts = unindexed = pool.take(3)
    h.mount_modprobe_d(MODPROBE_D.format(pwned=pwned) + UNINDEXED_MODPROBE_D.format(
        inst=unindexed_install, black=unindexed_black, opts=unindexed_opts, pwned=pwned))
    h.mount_file_over("/proc/cmdline", CMDLINE.format(opts=unindexed_opts), work)
    fail_env = ",".join(["nlmon:%d" % SOFTDEP_FAILURE, "team:%d" % errno.EIO] +
                        ["%s:%d" % (n, e) for e, n in errno_names.items()])

    # A tree of our own that the test may change: a tmpfs, read-only at the superblock while the
    # daemon looks, made writable only to add a module and run depmod. kmod 34 wants BASE/lib/modules.
    fresh_base = os.path.join(work, "fresh")
    os.makedirs(fresh_base)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", fresh_base)
    fresh_root = os.path.join(fresh_base, "lib/modules", kver)
    h.copy_tree(tree, fresh_root)
    # The module the case adds: a real one, taken out of this copy and its index, which the
    # manifest of the tree as the kernel package installed it still lists. tmpfs is never read-only
    # evidence: the manifest vouches for the bytes.
    fresh_manifest = h.write_manifest(fresh_root, os.path.join(work, "fresh.sha256"))
    fresh_module = os.path.join(fresh_root, deps[FRESH_MODULE][0])
    fresh_module_bytes = os.path.join(work, "fresh-module")
    shutil.move(fresh_module, fresh_module_bytes)
    unindexed_files = {n: os.path.join(fresh_root, deps[n][0]) for n in unindexed}
    for n, f in unindexed_files.items():
        shutil.move(f, os.path.join(work, "unindexed-" + n))
    h.run("depmod", "-b", fresh_base, kver)
    for n, f in unindexed_files.items():
        shutil.move(os.path.join(work, "unindexed-" + n), f)
    h.run("mount", "-o", "remount,ro", fresh_base)

    main_d = daemon("main")
    fail_d = daemon("fail", env={"MODGATE_SHIM_FAIL": fail_env})
    slow_d = daemon("slow", env={"MODGATE_SHIM_DELAY_MS": str(SLOW_MS)}, args=("--workers=8",))
    par_d = daemon("par", env={"MODGATE_SHIM_DELAY_MS": str(PAR_MS)}, args=("--workers=%d" % PAR_WORKERS,))
    alone_d = daemon("alone", env={"MODGATE_SHIM_DELAY_MS": str(SLOW_MS)},
                     args=("--workers=%d" % PAR_WORKERS, "--load-alone=" + alone_name))
    fresh_d = daemon("fresh", root=fresh_root, args=("--manifest=" + fresh_manifest,))
    print("# set-up took %.1f s" % (time.monotonic() - started), flush=True)

    forget_modules = h.reset_sys_module

    # --- 2: softdeps -----------------------------------------------------------------------------

    def case_softdeps():
        forget_modules()
        mods = h.modules_of(main_d.load("ipvlan"))
        assert [(m["name"], m["role"], m["outcome"]) for m in mods] == [
            ("nlmon", "softdep_pre", "loaded"), ("ipvlan", "requested", "loaded"),
            ("ifb", "softdep_post", "loaded")], mods
        recs = finit_by_name(main_d)
        assert set(recs) == {"nlmon", "ipvlan", "ifb"}, recs
        assert recs["nlmon"]["end"] <= recs["ipvlan"]["start"], recs
        assert recs["ipvlan"]["end"] <= recs["ifb"]["start"], recs
        print("# shim order: %s" % " < ".join(r["name"] for r in sorted(recs.values(), key=lambda r: r["start"])))

        # A softdep that the kernel refuses does not fail the request.
        forget_modules()
        p = h.ok(fail_d.load("ipvlan"))
        got = {m["name"]: (m["role"], m["outcome"]) for m in p["modules"]}
        assert got == {"nlmon": ("softdep_pre", "failed"), "ipvlan": ("requested", "loaded"),
                       "ifb": ("softdep_post", "loaded")}, p
        nlmon = by_name(p["modules"])["nlmon"]
        assert nlmon["errnoName"] == errno.errorcode[SOFTDEP_FAILURE], nlmon
        assert [r["result"] for r in calls_for(fail_d, {"nlmon"})] == [-SOFTDEP_FAILURE]

    t.case("2 softdep pre: and post: load around the module, in order; a failing softdep does not fail "
           "the request", case_softdeps)

    # --- 3: options ------------------------------------------------------------------------------

    def case_options():
        forget_modules()
        p = h.ok(main_d.call(LOAD, {"name": "macvlan", "parameters": "mgreq=3"}))
        rec = finit_by_name(main_d)["macvlan"]
        print("# macvlan finit_module params: %r" % rec["params"])
        # The order the interface documents: modprobe.d, the kernel command line, the request.
        assert rec["params"] == "mgconf=1 mgcmd=2 mgreq=3", rec
        assert by_name(p["modules"])["macvlan"]["parameters"] == rec["params"], p

        # A request's parameters are for the module it names, not for that module's dependencies.
        forget_modules()
        n = len(main_d.shim_records())
        p = h.ok(main_d.call(LOAD, {"name": "macvtap", "parameters": "vtreq=1"}))
        recs = {r["name"]: r for r in h.finit_records(main_d.shim_records()[n:])}
        assert set(recs) == {"macvlan", "tap", "macvtap"}, recs
        assert recs["macvtap"]["params"] == "vtreq=1", recs
        assert "vtreq" not in recs["macvlan"]["params"] and "mgconf=1" in recs["macvlan"]["params"], recs
        assert recs["tap"]["params"] == "", recs
        print("# macvtap request: macvtap %r, macvlan %r, tap %r"
              % (recs["macvtap"]["params"], recs["macvlan"]["params"], recs["tap"]["params"]))

        # "options ALIAS" is for a request by that alias, as modprobe reads it, also once a request by
        # the module's name came first (the daemon keeps libkmod's object by name), and not for that one.
        for key, params in ((CONF_ALIAS_MODULE, ""), (CONF_ALIAS, "mgalias=1"), (CONF_ALIAS_MODULE, "")):
            forget_modules()
            n = len(main_d.shim_records())
            p = h.ok(main_d.call(LOAD, {"name": key}))
            recs = {r["name"]: r for r in h.finit_records(main_d.shim_records()[n:])}
            assert set(recs) == {CONF_ALIAS_MODULE} and recs[CONF_ALIAS_MODULE]["params"] == params, (key, recs)
            assert by_name(p["modules"])[CONF_ALIAS_MODULE].get("parameters", "") == params, (key, p)

    t.case("3 modprobe.d options, the kernel command line and the request's parameters reach finit_module, "
           "the request's last and only for the module it names; options of an alias for a request by it",
           case_options)

    # --- 4: blacklist ----------------------------------------------------------------------------

    def case_blacklist():
        forget_modules()
        n = len(main_d.shim_records())
        p = h.error_of(main_d.call(LOAD, {"modalias": E1000_MODALIAS}), "ModuleNotFound")
        assert p == {"modalias": E1000_MODALIAS, "blacklisted": ["e1000"]}, p
        assert len(main_d.shim_records()) == n, "a blacklisted module was handed to the kernel"
        recs = journal.records(MODGATE_MODALIAS=E1000_MODALIAS, MODGATE_OUTCOME="not_found")
        assert recs and recs[-1].get("MODGATE_BLACKLISTED") == "e1000", recs
        assert "e1000" in h.modprobe_resolve(kver, E1000_MODALIAS)   # modprobe -R does not filter either

        mods = h.modules_of(main_d.load("e1000"))
        assert [(m["name"], m["outcome"]) for m in mods] == [("e1000", "loaded")], mods
        assert [r["name"] for r in main_d.shim_records()[n:]] == ["e1000"]

    t.case("4 blacklist hides a module from its modalias but not from a request by name", case_blacklist)

    # --- 5: install and remove commands ----------------------------------------------------------

    def case_install_commands():
        forget_modules()
        n = len(main_d.shim_records())
        p = h.error_of(main_d.load(INSTALL_MODULE), "InstallCommandRefused")
        assert p["module"] == INSTALL_MODULE and p["command"] == "/usr/bin/touch %s-install" % pwned, p
        assert [(m["name"], m["outcome"]) for m in p["modules"]] == [(INSTALL_MODULE, "denied")], p

        p = h.error_of(main_d.load(INSTALL_DEP_USER), "InstallCommandRefused")
        assert p["module"] == INSTALL_DEP_MODULE and p["command"] == "/usr/bin/touch %s-dependency" % pwned, p
        user = by_name(p["modules"])[INSTALL_DEP_USER]
        assert user["outcome"] == "failed" and user["reason"] == "dependency %s was not loaded" % INSTALL_DEP_MODULE, p
        called = {r["name"] for r in main_d.shim_records()[n:]}
        assert not called & {INSTALL_MODULE, INSTALL_DEP_MODULE, INSTALL_DEP_USER}, called

        h.ok(main_d.load(REMOVE_MODULE))
        n = len(main_d.shim_records())
        p = h.error_of(main_d.call(UNLOAD, {"name": REMOVE_MODULE}), "InstallCommandRefused")
        assert p["module"] == REMOVE_MODULE and p["command"] == "/usr/bin/touch %s-remove" % pwned, p
        assert main_d.shim_records()[n:] == [] and h.module_state(REMOVE_MODULE) == "live"

        time.sleep(0.2)
        assert not [f for f in os.listdir(work) if f.startswith("PWNED")], os.listdir(work)
        refused = journal.records(MODGATE_REFUSED_COMMAND="/usr/bin/touch %s-install" % pwned)
        assert refused and refused[-1]["MODGATE_OUTCOME"] == "denied", refused

    t.case("5 install and remove commands are refused, never run, also for a dependency", case_install_commands)

    # --- 5b-d: a request by path for a file that the index does not list ----------------------------

    def unindexed_start():
        # The fresh tree has these files, and its manifest vouches for them, but depmod did not see them.
        indexed = h.parse_modules_dep(fresh_root)
        for name, f in unindexed_files.items():
            assert name not in indexed and os.path.exists(f), (name, f)
        forget_modules()
        return len(main_d.shim_records()), len(fresh_d.shim_records())

    def case_unindexed_install():
        n_main, n_fresh = unindexed_start()
        by_name_p = h.error_of(main_d.load(unindexed_install), "InstallCommandRefused")
        p = h.error_of(fresh_d.call(LOAD, {"path": unindexed_files[unindexed_install]}), "InstallCommandRefused")
        want = "/usr/bin/touch %s-unindexed" % pwned
        assert by_name_p["command"] == p["command"] == want and p["module"] == unindexed_install, (by_name_p, p)
        assert [(m["name"], m["outcome"], m["path"]) for m in p["modules"]] == [
            (unindexed_install, "denied", unindexed_files[unindexed_install])], p
        assert main_d.shim_records()[n_main:] == fresh_d.shim_records()[n_fresh:] == []
        time.sleep(0.2)
        assert not [f for f in os.listdir(work) if f.startswith("PWNED")], os.listdir(work)

    def case_unindexed_blacklist():
        # For the boot list's request by path as for its request by name, "not found"; for an
        # administrator's, as for a name, not.
        n_main, n_fresh = unindexed_start()
        boot = h.in_unit(BOOT_UNIT)
        ctx = {"context": {"source": "boot"}}
        by_name_p = h.error_of(h.call_as(boot, main_d.address, LOAD, dict(ctx, name=unindexed_black)),
                               "ModuleNotFound")
        p = h.error_of(h.call_as(boot, fresh_d.address, LOAD, dict(ctx, path=unindexed_files[unindexed_black])),
                       "ModuleNotFound")
        assert p == by_name_p == {"name": unindexed_black, "blacklisted": [unindexed_black]}, (by_name_p, p)
        assert main_d.shim_records()[n_main:] == fresh_d.shim_records()[n_fresh:] == []
        rec = journal.records(MODGATE_OUTCOME="not_found", MODGATE_REQUEST_PATH=unindexed_files[unindexed_black])
        assert len(rec) == 1 and rec[0]["MODGATE_BLACKLISTED"] == unindexed_black, rec
        mods = h.modules_of(fresh_d.call(LOAD, {"path": unindexed_files[unindexed_black]}))
        assert [(m["name"], m["outcome"]) for m in mods] == [(unindexed_black, "loaded")], mods

    def case_unindexed_options():
        # modprobe.d's, the kernel command line's, then the request's, as for the name.
        n_main, n_fresh = unindexed_start()
        h.ok(main_d.call(LOAD, {"name": unindexed_opts, "parameters": "upreq=3"}))
        forget_modules()
        p = h.ok(fresh_d.call(LOAD, {"path": unindexed_files[unindexed_opts], "parameters": "upreq=3"}))
        by_name_rec, = h.finit_records(main_d.shim_records()[n_main:])
        rec, = h.finit_records(fresh_d.shim_records()[n_fresh:])
        assert rec["params"] == by_name_rec["params"] == "upconf=1 upcmd=2 upreq=3", (by_name_rec, rec)
        assert rec["path"] == unindexed_files[unindexed_opts] and p["modules"][0]["parameters"] == rec["params"], p
        print("# %s by path: finit_module params %r" % (unindexed_opts, rec["params"]))

        # A request's parameter over the administrator's option is refused for the path as for the name.
        forget_modules()
        by_name_p = h.error_of(main_d.call(LOAD, {"name": unindexed_opts, "parameters": "upconf=9"}),
                               "ParameterDenied")
        p = h.error_of(fresh_d.call(LOAD, {"path": unindexed_files[unindexed_opts], "parameters": "upconf=9"}),
                       "ParameterDenied")
        assert p == by_name_p, (by_name_p, p)
        assert len(fresh_d.shim_records()) == n_fresh + 1

    t.case("5b a request by path for a file the index does not list: its module's install command is refused, "
           "as for the name", case_unindexed_install)
    t.case("5c ... its module's blacklist holds for the boot list, as for the name", case_unindexed_blacklist)
    t.case("5d ... its module's options reach finit_module, and guard them from the request's, as for the name",
           case_unindexed_options)

    # --- 6: builtin and coming modules -----------------------------------------------------------

    def case_builtin_and_coming():
        forget_modules()
        n = len(main_d.shim_records())
        mods = h.modules_of(main_d.load(builtins[0]))
        assert mods == [{"name": builtins[0], "outcome": "builtin", "role": "requested"}], mods

        # Someone else (an initrd, PID 1) is loading it: the answer waits for that load.
        h.set_module_state(coming_live, "coming")
        c = h.AsyncVarlink(main_d.address)
        c.send(LOAD, {"name": coming_live})
        assert not c.answered(0.5), "answered while the module was still coming"
        h.set_module_state(coming_live, "live")
        assert c.answered(5), "no answer after the module became live"
        mods = h.modules_of(c.receive())
        c.close()
        assert [(m["name"], m["outcome"]) for m in mods] == [(coming_live, "already_loaded")], mods

        # The other load failed: its directory went away, and modgate loads the module itself.
        h.set_module_state(coming_gone, "coming")
        c = h.AsyncVarlink(main_d.address)
        c.send(LOAD, {"name": coming_gone})
        assert not c.answered(0.5), "answered while the module was still coming"
        shutil.rmtree("/sys/module/" + coming_gone)
        assert c.answered(5), "no answer after the coming module went away"
        mods = h.modules_of(c.receive())
        c.close()
        assert [(m["name"], m["outcome"]) for m in mods] == [(coming_gone, "loaded")], mods
        assert [r["name"] for r in main_d.shim_records()[n:]] == [coming_gone], main_d.shim_records()[n:]
        assert h.module_state(coming_gone) == "live"

    t.case("6 builtin modules are reported builtin; a coming module is waited for, and loaded if it goes away",
           case_builtin_and_coming)

    # --- 7: one load per module however many ask ------------------------------------------------

    def case_crowd():
        forget_modules()
        alias = None
        try:
            with open("/sys/devices/system/cpu/modalias") as f:
                alias = f.read().strip()
        except FileNotFoundError:
            pass
        if not alias or len(h.modprobe_resolve(kver, alias)) < 2:
            alias = INTEL_CPU_MODALIAS
        released, results = h.call_many(slow_d.address, [(LOAD, {"modalias": alias})] * CROWD)
        replies = [json.dumps(r, sort_keys=True) for r, _, _ in results]
        finits = h.finit_records(slow_d.shim_records())
        counts = {}
        for r in finits:
            counts[r["name"]] = counts.get(r["name"], 0) + 1
        mods = h.modules_of(results[0][0])
        loaded = sorted(m["name"] for m in mods if m["outcome"] == "loaded")
        last_sent = max(s for _, s, _ in results)
        first_end = min(r["end"] for r in finits) if finits else 0
        wall = max(a for _, _, a in results) - released
        print("# %d concurrent Load requests for the CPU modalias (%d bytes): %d modules resolved "
              "(%d loaded, %d builtin), %d finit_module calls, %d distinct replies, all sent %.0f ms before the "
              "first load ended, wall %.2f s"
              % (CROWD, len(alias), len(mods), len(loaded), sum(m["outcome"] == "builtin" for m in mods),
                 len(finits), len(set(replies)), ms(first_end - last_sent), wall / 1e9), flush=True)
        print("# resolved: %s" % " ".join("%s(%s)" % (m["name"], m["role"]) for m in mods))
        assert "error" not in results[0][0], results[0][0]
        assert len(mods) >= 2 and loaded, mods
        assert last_sent < first_end, "the requests did not overlap the loads; the test proves nothing"
        assert len(set(replies)) == 1, "replies differ: %s" % sorted(set(replies))[:2]
        assert sorted(counts) == loaded and set(counts.values()) == {1}, counts
        for name in loaded:
            recs = [r for r in journal.records(MODGATE_MODULE=name, _PID=str(slow_d.pid))
                    if r["MODGATE_OUTCOME"] == "loaded"]
            assert len(recs) == 1 and recs[0]["MODGATE_REQUESTERS"] == str(CROWD), (name, recs)

    t.case("7 200 concurrent requests for one CPU modalias: one finit_module per module, the same reply "
           "for all", case_crowd)

    # --- 8: parallel loading, bounded by the workers, in dependency order -------------------------

    def case_parallel():
        forget_modules()
        released, results = h.call_many(par_d.address, [(LOAD, {"name": n}) for n in par_names])
        wall = max(a for _, _, a in results) - released
        for reply, _, _ in results:
            h.ok(reply)
        recs = h.finit_records(par_d.shim_records(), set(par_names))
        assert sorted(r["name"] for r in recs) == sorted(par_names), recs
        peak = h.max_in_flight(recs)
        serial = PAR_MODULES * PAR_MS * 1e6
        print("# %d independent modules x %d ms with --workers=%d: at most %d finit_module in flight; "
              "wall %.2f s against %.2f s serial (%.0f%%)"
              % (PAR_MODULES, PAR_MS, PAR_WORKERS, peak, wall / 1e9, serial / 1e9, 100 * wall / serial), flush=True)
        assert peak <= PAR_WORKERS, "%d loads in flight with %d workers" % (peak, PAR_WORKERS)
        assert peak >= PAR_WORKERS - 1, "at most %d loads in flight: not parallel" % peak
        assert wall < 0.6 * serial, "wall %.2f s is not well under serial %.2f s" % (wall / 1e9, serial / 1e9)

        # A chain: each module starts only once all it needs (modules.dep, read here) has ended.
        forget_modules()
        n = len(par_d.shim_records())
        start = time.monotonic()
        p = h.ok(par_d.load("vport_vxlan"))
        chain_wall = time.monotonic() - start
        recs = {r["name"]: r for r in h.finit_records(par_d.shim_records()[n:])}
        closure = {"vport_vxlan", *deps["vport_vxlan"][1]}
        assert closure <= set(recs), (sorted(closure), sorted(recs))
        for name in closure:
            for d in deps[name][1]:
                assert recs[name]["start"] >= recs[d]["end"], "%s started before its dependency %s ended" % (name, d)
        print("# vport_vxlan: %d modules (%d by modules.dep), %d at most in flight, wall %.2f s"
              % (len(p["modules"]), len(closure), h.max_in_flight(list(recs.values())), chain_wall))

    t.case("8 independent modules load in parallel, at most --workers at once; a chain loads in order",
           case_parallel)

    # --- 9: --load-alone -------------------------------------------------------------------------

    def case_load_alone():
        forget_modules()
        first, later = alone_others[:3], alone_others[3:]
        conns = []
        for name in first:
            c = h.AsyncVarlink(alone_d.address)
            c.send(LOAD, {"name": name})
            conns.append(c)
        # Started, not necessarily all still in their init: on a loaded machine one may have finished
        # before the last began (that they overlapped is asserted below, from the shim's records).
        wait_for("the first loads to start",
                 lambda: all(h.module_state(n) in ("coming", "live") for n in first))
        for name in [alone_name] + later:
            c = h.AsyncVarlink(alone_d.address)
            c.send(LOAD, {"name": name})
            conns.append(c)
        for c in conns:
            h.ok(c.receive())
            c.close()
        recs = {r["name"]: r for r in h.finit_records(alone_d.shim_records())}
        a = recs[alone_name]
        overlapping = [n for n in alone_others if recs[n]["start"] < a["end"] and recs[n]["end"] > a["start"]]
        print("# %s ran alone for %.0f ms; %d other loads overlapped it; the others peaked at %d in flight"
              % (alone_name, ms(a["end"] - a["start"]), len(overlapping),
                 h.max_in_flight([recs[n] for n in alone_others])))
        assert not overlapping, "%s overlapped %s" % (alone_name, overlapping)
        assert h.max_in_flight([recs[n] for n in first]) == len(first), "the first loads did not overlap"

    t.case("9 --load-alone: nothing else is in flight while that module loads", case_load_alone)

    # --- 10: a requester's timeout ---------------------------------------------------------------

    def case_timeout():
        # Alone: the requester gives up, the load goes on and is recorded.
        forget_modules()
        start = time.monotonic()
        p = h.error_of(slow_d.call(LOAD, {"name": "geneve", "timeoutUSec": 300000}), "Timeout")
        waited = time.monotonic() - start
        assert "geneve" in p["pending"] and waited < SLOW_MS / 1000, (p, waited)
        assert h.module_state("geneve") is None, "geneve started before its dependencies were live"
        wait_for("geneve to be live", lambda: h.module_state("geneve") == "live")
        wait_for("geneve's finit_module record",
                 lambda: "geneve" in [r["name"] for r in h.finit_records(slow_d.shim_records())])
        recs = wait_for("geneve's journal record",
                        lambda: journal.records(MODGATE_MODULE="geneve", _PID=str(slow_d.pid)))
        assert [r["MODGATE_OUTCOME"] for r in recs] == ["loaded"], recs
        print("# Timeout after %.0f ms with pending %s; geneve live later" % (waited * 1000, p["pending"]))

        # With a second requester that waits: it gets the real result.
        forget_modules()
        impatient, patient = h.AsyncVarlink(slow_d.address), h.AsyncVarlink(slow_d.address)
        impatient.send(LOAD, {"name": "at803x", "timeoutUSec": 300000})
        patient.send(LOAD, {"name": "at803x"})
        p = h.error_of(impatient.receive(), "Timeout")
        assert set(p["pending"]) == {"at803x", *deps["at803x"][1]}, p
        mods = h.modules_of(patient.receive())
        impatient.close()
        patient.close()
        assert [(m["name"], m["outcome"]) for m in mods] == [
            ("libphy", "loaded"), ("qcom_phy_lib", "loaded"), ("at803x", "loaded")], mods
        recs = journal.records(MODGATE_MODULE="at803x", _PID=str(slow_d.pid))
        assert [(r["MODGATE_OUTCOME"], r["MODGATE_REQUESTERS"]) for r in recs] == [("loaded", "2")], recs

    t.case("10 a requester's timeout gives Timeout with the pending modules while the load goes on",
           case_timeout)

    # --- 11: the index changes on disk -----------------------------------------------------------

    def case_index_freshness():
        forget_modules()
        n = len(fresh_d.shim_records())
        h.error_of(fresh_d.load(FRESH_MODULE), "ModuleNotFound")
        h.run("mount", "-o", "remount,rw", fresh_base)
        new = fresh_module
        shutil.copy2(fresh_module_bytes, new)
        start = time.monotonic()
        h.run("depmod", "-b", fresh_base, kver)
        took = time.monotonic() - start
        # The daemon still maps the index files that depmod replaced, and the kernel does not make a
        # superblock read-only while unlinked files are open (EBUSY). Any request makes the daemon see
        # the new index and let go of the old one; this one is for another name, so that the answer
        # for the module below is the first since depmod.
        h.error_of(fresh_d.load("mgtestother"), "ModuleNotFound")
        h.run("mount", "-o", "remount,ro", fresh_base)
        mods = h.modules_of(fresh_d.load(FRESH_MODULE))
        assert [(m["name"], m["outcome"], m["path"]) for m in mods] == [(FRESH_MODULE, "loaded", new)], mods
        assert [r["name"] for r in fresh_d.shim_records()[n:]] == [FRESH_MODULE]
        # Seen by the inotify watch, not by the stats it falls back to (the tier logs at debug).
        assert "checked by stat" not in fresh_d.stderr_text(), fresh_d.stderr_text()
        print("# depmod -b %s %s took %.1f s; %s resolved after it" % (fresh_base, kver, took, FRESH_MODULE))

    t.case("11 a module added by depmod resolves on the next request; the earlier ModuleNotFound is not kept",
           case_index_freshness)

    # --- 12: unload ------------------------------------------------------------------------------

    def case_unload():
        forget_modules()
        h.ok(main_d.load("vxlan"))
        holders = "/sys/module/udp_tunnel/holders"
        os.makedirs(holders, exist_ok=True)     # the shim makes it, as the kernel does
        os.symlink("../../vxlan", os.path.join(holders, "vxlan"))
        n = len(main_d.shim_records())

        p = h.error_of(main_d.call(UNLOAD, {"name": "udp_tunnel"}), "ModuleInUse")
        assert p["module"] == "udp_tunnel" and p["holders"] == ["vxlan"], p
        assert main_d.shim_records()[n:] == [] and h.module_state("udp_tunnel") == "live"

        assert h.ok(main_d.call(UNLOAD, {"name": "vxlan"})) == {"name": "vxlan"}
        recs = main_d.shim_records()[n:]
        assert [(r["call"], r["name"], r["flags"]) for r in recs] == [("delete_module", "vxlan", os.O_NONBLOCK)], recs
        assert h.module_state("vxlan") is None

        p = h.error_of(main_d.call(UNLOAD, {"name": "vxlan"}), "NotLoaded")
        assert p == {"module": "vxlan"}, p

        # A builtin module with parameters has a directory in /sys/module, one without has none.
        with_params = "8250"
        os.makedirs("/sys/module/%s/parameters" % with_params)
        without = next(b for b in builtins if b != with_params and not os.path.exists("/sys/module/" + b))
        for name in (with_params, without):
            p = h.error_of(main_d.call(UNLOAD, {"name": name}), "UnloadFailed")
            assert p["module"] == name and "built into the kernel" in p["reason"], p
        assert len(main_d.shim_records()) == n + 1, "delete_module called for a refused unload"

        # One record per decision: (module, outcome, errno name).
        recs = journal.records(MESSAGE_ID="fa479a41770b4c8c9ac677d2e9139751", _PID=str(main_d.pid))
        got = [(r["MODGATE_MODULE"], r["MODGATE_OUTCOME"], r.get("MODGATE_ERRNO_NAME")) for r in recs
               if r["MODGATE_MODULE"] != REMOVE_MODULE]
        print("# unload journal records: %s" % ", ".join("%s %s %s" % g for g in got))
        assert got == [("udp_tunnel", "kept", "EBUSY"), ("vxlan", "unloaded", None), ("vxlan", "kept", "ENOENT"),
                       (with_params, "kept", "EPERM"), (without, "kept", "EPERM")], got

    t.case("12 Unload: in use, success with O_NONBLOCK, not loaded, builtin; each decision in the journal",
           case_unload)

    # --- 13: finit_module errors -----------------------------------------------------------------

    def case_errors():
        forget_modules()
        reasons = {}
        for e, name in errno_names.items():
            reply = fail_d.load(name)
            p = h.error_of(reply, "LoadFailed")
            if e == errno.EEXIST:
                # The module is not live: the EEXIST came from its init, not from a loaded module.
                assert "not live" in p["reason"], p
            assert p["module"] == name and p["errno"] == e and p["errnoName"] == errno.errorcode[e], p
            assert h.module_state(name) is None
            reasons[errno.errorcode[e]] = p["reason"]
            rec = journal.records(MODGATE_MODULE=name, _PID=str(fail_d.pid))
            assert [r["MODGATE_ERRNO_NAME"] for r in rec] == [errno.errorcode[e]], rec
        for k, v in reasons.items():
            print("# %s: %s" % (k, v))
        assert [r["result"] for r in h.finit_records(fail_d.shim_records(), set(errno_names.values()))] == \
            [-e for e in ERRNO_CASES], fail_d.shim_records()
        for k in ("EKEYREJECTED", "ENOKEY", "EBADMSG"):
            assert "signature" in reasons[k], reasons[k]
        assert "lockdown" in reasons["EPERM"], reasons["EPERM"]
        classes = [reasons[k] for k in ("ENOEXEC", "EPERM", "EKEYREJECTED", "ETXTBSY", "ENOENT", "ENODEV", "EIO")]
        assert len(set(classes)) == len(classes), "two classes of failure share a reason: %s" % classes
        assert "init" in reasons["EIO"], reasons["EIO"]

    t.case("13 finit_module errors are classified: each LoadFailed with a reason, EEXIST for a module that is "
           "not live too", case_errors)

    # --- 14: bad input ---------------------------------------------------------------------------

    def bad_input_round():
        """Every malformed request once; returns what went wrong."""
        bad = []

        def expect(params, name):
            reply = main_d.call(LOAD, params)
            if reply.get("error") != M + name:
                bad.append("%s -> %s, expected %s" % (json.dumps(params)[:100], reply.get("error", reply), name))

        expect({"modalias": "acpi:" + "X" * (16 * 1024 - 5)}, "ModuleNotFound")
        expect({"modalias": "acpi:" + "X" * (64 * 1024 - 5)}, "ModuleNotFound")
        expect({"modalias": "acpi:" + "X" * (64 * 1024 - 4)}, "InvalidModalias")
        for alias in ("pci:v 1", "pci:\tx", "pci:x\ny", "pci:v\u00e9", "-pci:x", ""):
            expect({"modalias": alias}, "InvalidModalias")
        for path in ("kernel/drivers/net/dummy.ko.xz", "/x/../y.ko", "/x//y.ko", "/x/./y.ko", "/x/y.txt", "/x/y",
                     "/x/y.ko.bz2", trusted + "/.."):
            expect({"path": path}, "InvalidPath")
        for params in ("a=\x01", "a=1\nb=2", "a=\x7f", "a=\u00e9", "x" * 4097):
            expect({"name": "dummy", "parameters": params}, "InvalidModuleParameters")
        for ctx in ({"source": "udev", "devpath": "/devices/x\n"}, {"source": "udev", "subsystem": "pci\x1b[31m"},
                    {"source": "udev", "action": "add\x07"}, {"seqnum": -5}):
            expect({"name": "dummy", "context": ctx}, "InvalidRequest")
        # Source is an enum in the interface: sd-varlink checks the call against the interface before
        # the method runs, and answers a value outside the enum with the protocol's own error.
        reply = main_d.call(LOAD, {"name": "dummy", "context": {"source": "nonsense"}})
        if reply != {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "context"}}:
            bad.append("unknown source -> %s" % reply)
        for params in ({"name": "dummy", "modalias": "pci:x"}, {"name": "dummy", "path": "/x/dummy.ko"},
                       {"modalias": "pci:x", "path": "/x/dummy.ko"}):
            expect(params, "InvalidRequest")
        return bad

    def case_bad_input():
        forget_modules()
        n = len(main_d.shim_records())
        bad_input_round()
        fds_before = main_d.fds()
        bad = bad_input_round()
        assert not bad, "\n".join(bad)

        # A glob is one literal key: modprobe -R finds nothing for it, and neither does modgate.
        pci_modules = set()
        with open(os.path.join(tree, "modules.alias")) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[1].startswith("pci:"):
                    pci_modules.add(w[2])
        assert h.modprobe_resolve(kver, "pci:*") == set()
        p = h.error_of(main_d.call(LOAD, {"modalias": "pci:*"}), "ModuleNotFound")
        print("# 'pci:*' matched nothing (modules.alias has %d modules with PCI aliases)" % len(pci_modules))
        assert main_d.shim_records()[n:] == [], "a bad request reached the kernel"

        # By path: a copy outside the trusted root is refused, the file in the root loads.
        rel = deps[path_module][0]
        outside = os.path.join(work, "writable")
        os.makedirs(outside)
        h.run("mount", "-t", "tmpfs", "tmpfs", outside)
        copy = os.path.join(outside, os.path.basename(rel))
        shutil.copy2(os.path.join(trusted, rel), copy)
        p = h.error_of(main_d.call(LOAD, {"path": copy}), "UntrustedOrigin")
        assert p["module"] == path_module and p["path"] == copy, p
        assert main_d.shim_records()[n:] == [], "an untrusted file reached the kernel"
        recs = journal.records(MODGATE_REQUEST_PATH=copy)
        assert [r["MODGATE_OUTCOME"] for r in recs] == ["denied"], recs
        print("# %s: %s" % (copy, p["reason"]))

        inside = os.path.join(trusted, rel)
        mods = h.modules_of(main_d.call(LOAD, {"path": inside}))
        assert [(m["name"], m["outcome"], m["path"]) for m in mods] == [(path_module, "loaded", inside)], mods
        assert [r["path"] for r in main_d.shim_records()[n:]] == [inside]

        for _ in range(10):
            bad_input_round()
        fds_after = main_d.fds()
        assert main_d.proc.poll() is None and "error" not in main_d.call("org.varlink.service.GetInfo")
        assert fds_after == fds_before, "fds before %s, after %s" % (fds_before, fds_after)
        print("# %d fds before and after 11 rounds of bad input" % len(fds_before))

    t.case("14 bad input gets a named error, a glob is a literal key, untrusted paths are refused; no crash, "
           "no fd growth", case_bad_input)

    # --- 15: provenance of udev requests, and of joined ones -------------------------------------

    def case_udev_provenance():
        forget_modules()
        ctx = {"source": "udev", "devpath": "/devices/pci0000:00/0000:00:03.0/virtio0", "subsystem": "virtio",
               "seqnum": 4242, "action": "add"}
        # A udev request comes from udevd's unit, or its claim is refused (test-callers.py).
        udevd = h.in_unit("systemd-udevd.service")
        mods = h.modules_of(h.call_as(udevd, main_d.address, LOAD, {"modalias": VIRTIO_NET_MODALIAS, "context": ctx}))
        assert by_name(mods)["virtio_net"]["outcome"] == "loaded", mods
        recs = journal.records(MODGATE_MODULE="virtio_net", _PID=str(main_d.pid))
        assert len(recs) == 1, recs
        r = recs[0]
        want = {"MODGATE_SOURCE": "udev", "MODGATE_DEVPATH": ctx["devpath"], "MODGATE_SUBSYSTEM": "virtio",
                "MODGATE_SEQNUM": "4242", "MODGATE_ACTION": "add", "MODGATE_MODALIAS": VIRTIO_NET_MODALIAS,
                "MODGATE_OUTCOME": "loaded", "MODGATE_REQUESTERS": "1"}
        assert {k: r.get(k) for k in want} == want, r

        forget_modules()
        procs = [h.call_as(udevd, slow_d.address, LOAD, {"modalias": VIRTIO_NET_MODALIAS,
                                                         "context": dict(ctx, seqnum=s)}, wait=False)
                 for s in (5001, 5002)]
        for p in procs:
            h.ok(h.call_as_result(p))
        recs = journal.records(MODGATE_MODULE="virtio_net", _PID=str(slow_d.pid))
        assert len(recs) == 1 and recs[0]["MODGATE_REQUESTERS"] == "2", recs
        assert recs[0]["MODGATE_SEQNUM"] in ("5001", "5002") and recs[0]["MODGATE_SOURCE"] == "udev", recs[0]
        print("# joined udev requests: one virtio_net record, MODGATE_REQUESTERS=%s, MODGATE_SEQNUM=%s"
              % (recs[0]["MODGATE_REQUESTERS"], recs[0]["MODGATE_SEQNUM"]))

    t.case("15 a udev request's journal record has its device fields; a joined job counts its requesters",
           case_udev_provenance)

    # --- 16: what review found -------------------------------------------------------------------

    def case_softdep_is_also_dependency():
        # team is team_mode_broadcast's hard dependency and, by modprobe.d, its softdep too. When team
        # fails, team_mode_broadcast fails once, and the daemon lives (the sanitizer build watches).
        forget_modules()
        p = h.error_of(fail_d.load("team_mode_broadcast"), "LoadFailed")
        assert p["module"] == "team" and p["errnoName"] == "EIO", p
        assert [(m["name"], m["outcome"]) for m in p["modules"]] == [
            ("team", "failed"), ("team_mode_broadcast", "failed")], p
        assert fail_d.proc.poll() is None, "daemon died"
        h.ok(fail_d.call("org.varlink.service.GetInfo"))

    def case_oneway():
        # A oneway Load is carried out and answers nobody; the next call on the connection gets its
        # own reply, not the oneway one's.
        forget_modules()
        c = h.AsyncVarlink(slow_d.address)
        c.sock.sendall(json.dumps({"method": LOAD, "parameters": {"name": oneway_name},
                                   "oneway": True}).encode() + b"\0")
        time.sleep(0.2)
        c.send(LOAD, {"name": oneway_other})
        mods = h.modules_of(c.receive())
        assert [m["name"] for m in mods] == [oneway_other], mods
        assert not c.answered(1.5), "a second reply came on the connection"
        c.close()
        wait_for("the oneway load", lambda: h.module_state(oneway_name) == "live")

    def case_coming_with_install_command():
        # Refused at once, not after the other loader gives up, and never loaded.
        forget_modules()
        h.set_module_state(INSTALL_MODULE, "coming")
        try:
            p = h.error_of(main_d.load(INSTALL_MODULE), "InstallCommandRefused")
            assert p["module"] == INSTALL_MODULE, p
        finally:
            shutil.rmtree("/sys/module/" + INSTALL_MODULE)
        time.sleep(0.2)
        assert not calls_for(main_d, [INSTALL_MODULE]), calls_for(main_d, [INSTALL_MODULE])

    def case_join_conflict():
        # A load in flight with other parameters is not joined: Busy, naming the module.
        forget_modules()
        first = h.AsyncVarlink(slow_d.address)
        first.send(LOAD, {"name": conflict_name, "parameters": "mgfirst=1"})
        wait_for("the first load to start", lambda: h.module_state(conflict_name) == "coming")
        p = h.error_of(slow_d.call(LOAD, {"name": conflict_name, "parameters": "mgsecond=2"}), "Busy")
        assert p["module"] == conflict_name, p
        same = slow_d.call(LOAD, {"name": conflict_name, "parameters": "mgfirst=1"})
        assert [(m["name"], m["outcome"]) for m in h.modules_of(same)] == [(conflict_name, "loaded")], same
        assert h.modules_of(first.receive())[0]["parameters"] == "mgfirst=1"
        first.close()
        assert [r["params"] for r in calls_for(slow_d, [conflict_name])] == ["mgfirst=1"]

    def case_drain_at_stop():
        # SIGTERM while a module's init runs: the load finishes, and its journal record is written.
        forget_modules()
        d = h.Daemon(work, "drain", trusted, extra_env={"MODGATE_SHIM_DELAY_MS": str(SLOW_MS)})
        try:
            assert d.activate()
            c = h.AsyncVarlink(d.address)
            c.send(LOAD, {"name": drain_name})
            wait_for("the load to start", lambda: h.module_state(drain_name) == "coming")
            d.proc.send_signal(signal.SIGTERM)
            d.proc.wait(timeout=10)
            assert d.proc.returncode == 0, d.stderr_text()[-2000:]
            recs = wait_for("the record of the drained load",
                            lambda: journal.records(MODGATE_MODULE=drain_name, _PID=str(d.pid)))
            assert [r["MODGATE_OUTCOME"] for r in recs] == ["loaded"], recs
            c.close()
        finally:
            d.stop()

    t.case("16a a softdep that is also a hard dependency fails once; the daemon lives", case_softdep_is_also_dependency)
    t.case("16b a oneway Load answers nobody, and the next call gets its own reply", case_oneway)
    t.case("16c a coming module with an install command is refused at once and never loaded",
           case_coming_with_install_command)
    t.case("16d a load in flight with other parameters is not joined: Busy", case_join_conflict)
    t.case("16e SIGTERM during a load: the load completes and is recorded", case_drain_at_stop)

    def case_clean():
        for d in daemons[1:]:
            assert d.proc.poll() is None, "daemon %s died:\n%s" % (d.address, d.stderr_text()[-2000:])
            assert all(r["call"] != "init_module" for r in d.shim_records()), d.shim_records()

    t.case("every daemon is still running and none called init_module", case_clean, always=True)
    # Every daemon of the run, those stopped along the way included (stop() keeps the status).
    t.case("every daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()
    journal.stop()
    print("# whole run took %.1f s" % (time.monotonic() - started))
    if t.failed or os.environ.get("MODGATE_TEST_VERBOSE"):
        h.dump_stderr(daemons, 40)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
