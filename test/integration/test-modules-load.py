#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgate-modules-load: the boot list (modules-load.d precedence and masking, modules_load= and
rd.modules_load=), what each request says about where the module was listed, and
systemd-modules-load's failure semantics; against a stand-in daemon, then the real modgated."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

MODULES_LOAD = h.helper("modgate-modules-load")
# modgated trusts the boot list's source claim from this unit only, which it reads off the cgroup.
BOOT_UNIT = "modgate-modules-load.service"
DIRS = ["/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d"]
CMDLINE = "kernel command line"

ANSWERS = {
    "missing": ("io.modgate.Manager.ModuleNotFound", {"name": "missing"}),
    "bad name": ("io.modgate.Manager.InvalidName", {"name": "bad name"}),
    "blacklisted": ("io.modgate.Manager.ModuleNotFound", {"name": "blacklisted", "blacklisted": ["blacklisted"]}),
    "failing": ("io.modgate.Manager.LoadFailed", {"module": "failing", "reason": "finit_module failed",
                                                 "errnoName": "ENOEXEC", "modules": []}),
    "denied": ("io.modgate.Manager.UntrustedOrigin", {"module": "denied", "reason": "writable", "modules": []}),
    "install": ("io.modgate.Manager.InstallCommandRefused", {"module": "install", "command": "/bin/x",
                                                            "modules": []}),
}


def answer(msg):
    name = msg["parameters"].get("name")
    return ANSWERS.get(name, (None, {"modules": [{"name": name, "outcome": "loaded"}]}))


def write(root, path, text):
    full = root + path
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def main():
    h.require_root()
    h.unshare_mounts()

    work = tempfile.mkdtemp(prefix="modgate-modules-load-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    journal = h.Journal()
    os.makedirs("/run/modgate", exist_ok=True)
    fake_path = "/run/modgate/fake.sock"
    fake = h.FakeModgated(fake_path, answer)

    t = h.Tap()
    roots = iter(range(1000))

    def new_root():
        root = os.path.join(work, "root%d" % next(roots))
        for d in DIRS:
            os.makedirs(root + d)
        return root

    def modules_load(*args, cmdline="", initrd=None, address=fake_path):
        env = {"SYSTEMD_PROC_CMDLINE": cmdline}
        if initrd is not None:
            env["SYSTEMD_IN_INITRD"] = "1" if initrd else "0"
        before = len(fake.requests)
        res = h.run_program([MODULES_LOAD, "--address=" + address, *args], env=env)
        sent = [(r["parameters"]["name"], r["parameters"]["context"]["file"]) for r in fake.requests[before:]]
        for r in fake.requests[before:]:
            assert r["parameters"]["context"]["source"] == "boot", r
            assert "timeoutUSec" not in r["parameters"], "the boot list waits as long as the unit allows"
        return res, sorted(sent)

    def case_precedence_and_masking():
        root = new_root()
        write(root, "/usr/lib/modules-load.d/a.conf", "# vendor\nvxlan\n; also a comment\n\n  tun  \n")
        write(root, "/usr/lib/modules-load.d/b.conf", "vendor_b\n")
        write(root, "/etc/modules-load.d/b.conf", "admin_b\n")
        write(root, "/usr/lib/modules-load.d/c.conf", "masked_c\n")
        os.symlink("/dev/null", root + "/etc/modules-load.d/c.conf")
        write(root, "/usr/local/lib/modules-load.d/d.conf", "local_d\n")
        write(root, "/run/modules-load.d/d.conf", "run_d\n")
        write(root, "/usr/lib/modules-load.d/e.txt", "not_conf\n")
        write(root, "/usr/lib/modules-load.d/.f.conf", "hidden\n")
        res, sent = modules_load("--root=" + root)
        assert res.returncode == 0, res
        assert sent == sorted([("vxlan", "/usr/lib/modules-load.d/a.conf"), ("tun", "/usr/lib/modules-load.d/a.conf"),
                               ("admin_b", "/etc/modules-load.d/b.conf"), ("run_d", "/run/modules-load.d/d.conf")]), sent

    def case_cmdline():
        root = new_root()
        cmdline = "root=/dev/vda ro modules_load=bonding,tun rd.modules_load=initrd_only modules-load=dashed quiet"
        res, sent = modules_load("--root=" + root, cmdline=cmdline, initrd=False)
        assert res.returncode == 0, res
        assert sent == sorted([("bonding", CMDLINE), ("tun", CMDLINE), ("dashed", CMDLINE)]), sent
        res, sent = modules_load("--root=" + root, cmdline=cmdline, initrd=True)
        assert res.returncode == 0, res
        assert sent == sorted([("bonding", CMDLINE), ("tun", CMDLINE), ("dashed", CMDLINE),
                               ("initrd_only", CMDLINE)]), sent

    def case_arguments():
        root = new_root()
        write(root, "/usr/lib/modules-load.d/x.conf", "from_x\n")
        write(root, "/etc/modules-load.d/y.conf", "from_y\n")
        write(work, "/direct.conf", "from_direct\n")
        res, sent = modules_load("--root=" + root, "x.conf", os.path.join(work, "direct.conf"),
                                 cmdline="modules_load=ignored")
        assert res.returncode == 0, res
        assert sent == sorted([("from_x", "/usr/lib/modules-load.d/x.conf"),
                               ("from_direct", os.path.join(work, "direct.conf"))]), sent
        res, sent = modules_load("--root=" + root, "nonexistent.conf")
        assert res.returncode == 1 and sent == [], res
        # A name is looked up as the directories are listed: a mask hides it, quietly.
        write(root, "/usr/lib/modules-load.d/m.conf", "masked_m\n")
        os.symlink("/dev/null", root + "/etc/modules-load.d/m.conf")
        res, sent = modules_load("--root=" + root, "m.conf")
        assert res.returncode == 0 and sent == [], res

    def case_semantics():
        root = new_root()
        write(root, "/etc/modules-load.d/soft.conf", "missing\nbad name\nblacklisted\nfine\n")
        res, sent = modules_load("--root=" + root)
        assert res.returncode == 0, res
        # No module has such a name: refused with the daemon's own check, without asking it.
        assert sorted(n for n, _ in sent) == ["blacklisted", "fine", "missing"], sent
        assert "Module 'bad name' (/etc/modules-load.d/soft.conf) not found: not a module name." in res.stderr, res
        assert "Module 'missing' (/etc/modules-load.d/soft.conf) not found." in res.stderr, res
        assert "Module 'blacklisted' (/etc/modules-load.d/soft.conf) is blacklisted." in res.stderr, res
        for bad in ("failing", "denied", "install"):
            root = new_root()
            write(root, "/etc/modules-load.d/a.conf", "one\n%s\n" % bad)
            write(root, "/etc/modules-load.d/z.conf", "two\n")
            res, sent = modules_load("--root=" + root)
            assert res.returncode == 1, (bad, res)
            assert [n for n, _ in sent] == sorted(["one", bad, "two"]), ("every module must be tried", sent)

    def case_unreadable_file():
        root = new_root()
        write(root, "/etc/modules-load.d/big.conf", "x\n" * (600 * 1024))
        write(root, "/etc/modules-load.d/ok.conf", "fine\n")
        res, sent = modules_load("--root=" + root)
        assert res.returncode == 1 and "big.conf" in res.stderr, res
        assert sent == [("fine", "/etc/modules-load.d/ok.conf")], sent

    def case_unreachable():
        root = new_root()
        write(root, "/etc/modules-load.d/a.conf", "vxlan\n")
        res, _ = modules_load("--root=" + root, address="/run/modgate/nothing.sock")
        assert res.returncode == 1 and "could not connect to modgated" in res.stderr, res

    def case_nothing():
        n = fake.connections
        res, sent = modules_load("--root=" + new_root(), cmdline="quiet")
        assert res.returncode == 0 and sent == [] and fake.connections == n, res

    # The real daemon.
    tree = h.kernel_tree()
    trusted = h.mount_trusted_tree(tree, work)
    h.mount_sys_module()
    daemon = h.Daemon(work, "main", trusted, extra_env={"MODGATE_SHIM_FAIL": "veth:8"})
    daemon.activate()
    deps = h.parse_modules_dep(tree)

    def case_real_boot_list():
        root = new_root()
        write(root, "/etc/modules-load.d/net.conf", "vxlan\nno_such_module_xyz\n")
        res = h.run_program([*h.in_unit(BOOT_UNIT), MODULES_LOAD, "--address=" + daemon.address, "--root=" + root],
                            env={"SYSTEMD_PROC_CMDLINE": "modules_load=tun"})
        assert res.returncode == 0, res
        names = {r["name"] for r in daemon.shim_records()}
        assert {"vxlan", "tun"} | set(deps["vxlan"][1]) <= names, names
        assert "no_such_module_xyz" in res.stderr and "not found" in res.stderr, res
        recs = journal.records(MODGATE_MODULE="vxlan")
        assert recs, "no journal record for vxlan"

    def case_real_blacklisted():
        # modprobe.d stays mounted while the daemon runs: it notices a change of it at the next request.
        h.mount_modprobe_d("blacklist nlmon\n")
        bl = h.Daemon(work, "blacklist", trusted)
        try:
            assert bl.activate(), bl.stderr_text()
            root = new_root()
            write(root, "/etc/modules-load.d/b.conf", "nlmon\ndummy\n")
            res = h.run_program([*h.in_unit(BOOT_UNIT), MODULES_LOAD, "--address=" + bl.address, "--root=" + root],
                                env={"SYSTEMD_PROC_CMDLINE": ""})
            assert res.returncode == 0, res
            assert "Module 'nlmon' (/etc/modules-load.d/b.conf) is blacklisted." in res.stderr, res
            names = [r["name"] for r in bl.shim_records() if r["call"] == "finit_module"]
            assert names == ["dummy"], names
            rec = journal.records(MODGATE_OUTCOME="not_found", MODGATE_REQUEST_NAME="nlmon", _PID=str(bl.pid))
            assert len(rec) == 1 and rec[0]["MODGATE_BLACKLISTED"] == "nlmon" and rec[0]["MODGATE_SOURCE"] == "boot", rec
            # modprobe's rule for everyone else: a blacklist hides aliases, not a module asked for by name.
            mods = h.modules_of(bl.load("nlmon"))
            assert [(m["name"], m["outcome"]) for m in mods] == [("nlmon", "loaded")], mods
        finally:
            bl.stop()
            h.run("umount", "/etc/modprobe.d")

    def case_real_failure():
        root = new_root()
        write(root, "/etc/modules-load.d/a.conf", "veth\nbonding\n")
        res = h.run_program([*h.in_unit(BOOT_UNIT), MODULES_LOAD, "--address=" + daemon.address, "--root=" + root],
                            env={"SYSTEMD_PROC_CMDLINE": ""})
        assert res.returncode == 1 and "ENOEXEC" in res.stderr, res
        assert "bonding" in {r["name"] for r in daemon.shim_records()}, "the other module must still load"

    t.case("modules-load.d: precedence by directory, /dev/null masks, comments, only *.conf", case_precedence_and_masking)
    t.case("modules_load= on the host, rd.modules_load= too in the initrd", case_cmdline)
    t.case("files given as arguments are the only ones read", case_arguments)
    t.case("not found, invalid and blacklisted are logged and pass; other failures fail after trying all", case_semantics)
    t.case("a file that cannot be read fails the run, the others still load", case_unreadable_file)
    t.case("no daemon: logged, exit 1", case_unreachable)
    t.case("an empty boot list exits 0 without a connection", case_nothing)
    t.case("end to end: the boot list loads through modgated, a missing module does not fail it", case_real_boot_list)
    t.case("end to end: a module the kernel refuses fails the run after the others loaded", case_real_failure)
    t.case("end to end: a module modprobe.d blacklists, named in modules-load.d, is not loaded (as "
           "systemd-modules-load would not), and the run passes; an administrator's Load by name still loads it",
           case_real_blacklisted)

    t.case("the daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(daemon), always=True)
    t.run()
    fake.stop()
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
