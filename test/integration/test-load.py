#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The walking skeleton end to end: socket-activated modgated loads modules from a real Debian
module tree on a read-only erofs image, refuses every other origin, and records each decision in
the journal. Only finit_module/delete_module are faked (test/shim)."""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

OUTSIDE_MODULE = "dummy"        # replaced in the image by a symlink that leaves the tree
INSIDE_LINK_MODULE = "tun"      # replaced by a relative symlink that stays inside the tree
ZSTD_MODULE = "nlmon"           # replaced by a zstd-compressed copy; the kernel takes xz only
FAILING_MODULE = "veth"         # the shim makes finit_module fail with ENOEXEC
LIVE_MODULE = "libcrc32c"       # live before the test starts
DEEP_MODULE = "vport_vxlan"     # a dependency chain of eleven modules


def expected_order(deps, name):
    """Every module in the closure of name, as modules.dep lists it."""
    return {name, *deps[name][1]}


def build_image(tree, work):
    """An erofs image of the real tree with three modules altered as the cases need."""
    stage = os.path.join(work, "stage")
    outside = os.path.join(work, "outside")
    os.makedirs(outside)
    h.copy_tree(tree, stage)
    deps = h.parse_modules_dep(tree)

    rel = deps[OUTSIDE_MODULE][0]
    os.rename(os.path.join(stage, rel), os.path.join(outside, os.path.basename(rel)))
    os.symlink(os.path.join(outside, os.path.basename(rel)), os.path.join(stage, rel))

    rel = deps[INSIDE_LINK_MODULE][0]
    os.makedirs(os.path.join(stage, "extra"), exist_ok=True)
    os.rename(os.path.join(stage, rel), os.path.join(stage, "extra", os.path.basename(rel)))
    target = os.path.relpath(os.path.join(stage, "extra", os.path.basename(rel)),
                             os.path.dirname(os.path.join(stage, rel)))
    os.symlink(target, os.path.join(stage, rel))

    rel = deps[ZSTD_MODULE][0]
    path = os.path.join(stage, rel)
    elf = subprocess.run(["xz", "-dc", path], check=True, capture_output=True).stdout
    zst = subprocess.run(["zstd", "-q", "-c"], input=elf, check=True, capture_output=True).stdout
    with open(path, "wb") as f:
        f.write(zst)

    image = os.path.join(work, "tree.erofs")
    h.run("mkfs.erofs", "--quiet", image, stage)
    return image, deps


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-it-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    print("# module tree: %s" % tree, flush=True)

    image, deps = build_image(tree, work)
    trusted = os.path.join(work, "trusted")
    os.makedirs(trusted)
    h.run("mount", "-t", "erofs", "-o", "ro,loop", image, trusted)
    # The image is in a writable tmpfs: its manifest, not the read-only superblock, vouches for it.
    h.MANIFESTS[trusted] = h.write_manifest(os.path.join(work, "stage"), os.path.join(work, "tree.sha256"),
                                            kernel=os.path.basename(tree))

    # The same tree on a writable tmpfs, and a read-only bind mount of that tmpfs.
    writable = os.path.join(work, "writable")
    os.makedirs(writable)
    h.run("mount", "-t", "tmpfs", "tmpfs", writable)
    h.copy_tree(tree, os.path.join(writable, "tree"))
    robind = os.path.join(work, "robind")
    os.makedirs(robind)
    h.run("mount", "--bind", os.path.join(writable, "tree"), robind)
    h.run("mount", "-o", "remount,bind,ro", robind)

    h.mount_sys_module(live=[LIVE_MODULE])
    journal = h.Journal()

    main_d = h.Daemon(work, "main", trusted,
                      extra_env={"MODGATE_SHIM_FAIL": "%s:8" % FAILING_MODULE})
    tmpfs_d = h.Daemon(work, "tmpfs", os.path.join(writable, "tree"))
    robind_d = h.Daemon(work, "robind", robind)
    daemons = [main_d, tmpfs_d, robind_d]

    t = h.Tap()

    def no_syscalls(d):
        recs = d.shim_records()
        assert recs == [], "unexpected module syscalls: %s" % recs

    def error_of(reply, name):
        assert reply.get("error") == name, "expected %s, got %s" % (name, reply)
        return reply.get("parameters", {})

    def case_ready():
        for d in daemons:
            assert d.activate(), "daemon %s did not send READY=1:\n%s" % (d.address, d.stderr_text())

    def case_capabilities():
        # CAP_SYS_MODULE is bit 16: nothing else may be left, not even in the bounding set, and in
        # every thread: each has its own sets, and a worker made before the drop keeps what it had.
        tasks = os.listdir("/proc/%d/task" % main_d.pid)
        assert len(tasks) > 4, tasks    # the workers and the readers are there to check
        for tid in tasks:
            with open("/proc/%d/task/%s/status" % (main_d.pid, tid)) as f:
                status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            for key in ("CapEff", "CapPrm", "CapBnd"):
                assert int(status[key], 16) == 1 << 16, "thread %s (%s): %s is %s" % (tid, status["Name"], key, status[key])
            for key in ("CapInh", "CapAmb"):
                assert int(status[key], 16) == 0, "thread %s: %s is %s" % (tid, key, status[key])

    def case_dependencies_in_order():
        reply = main_d.load(DEEP_MODULE)
        assert "error" not in reply, reply
        mods = reply["parameters"]["modules"]
        names = [m["name"] for m in mods]
        # Every hard dependency (modules.dep, read here without libkmod) is there; anything more is a
        # softdep of one of them (libcrc32c's crc32c, from modules.softdep).
        assert expected_order(deps, DEEP_MODULE) <= set(names), names
        for m in mods:
            if m["name"] not in expected_order(deps, DEEP_MODULE):
                assert m["role"] in ("softdep_pre", "softdep_post"), m
        assert mods[[m["name"] for m in mods].index(DEEP_MODULE)]["role"] == "requested"
        for m in mods:
            want = "already_loaded" if m["name"] == LIVE_MODULE else "loaded"
            assert m["outcome"] == want, m
            assert m["path"] == os.path.join(trusted, deps[m["name"]][0]), m

        # The syscalls came in an order where each module follows every one of its dependencies.
        recs = main_d.shim_records()
        called = [r["name"] for r in recs]
        assert sorted(called) == sorted(n for n in names if n != LIVE_MODULE), (called, names)
        for i, n in enumerate(called):
            for d in deps[n][1]:
                assert d == LIVE_MODULE or called.index(d) < i, "%s loaded before its dependency %s" % (n, d)
        dev = os.stat(trusted).st_dev
        for r in recs:
            assert r["call"] == "finit_module", r
            assert r["path"] == os.path.join(trusted, deps[r["name"]][0]), r
            st = os.stat(r["path"])
            assert r["dev"] == "%d:%d" % (os.major(dev), os.minor(dev)) and r["ino"] == st.st_ino, r
            assert r["flags"] == h.MODULE_INIT_COMPRESSED_FILE and r["params"] == "", r

    def case_already_live():
        n = len(main_d.shim_records())
        for name in (LIVE_MODULE, DEEP_MODULE):
            reply = main_d.load(name)
            assert "error" not in reply, reply
            assert all(m["outcome"] == "already_loaded" for m in reply["parameters"]["modules"]), reply
        assert len(main_d.shim_records()) == n, "a live module was loaded again"

    def case_builtin():
        with open(os.path.join(tree, "modules.builtin")) as f:
            name = h.module_name(f.readline().strip())
        reply = main_d.load(name)
        assert "error" not in reply, reply
        assert reply["parameters"]["modules"] == [{"name": name, "outcome": "builtin", "role": "requested"}], reply

    def case_unknown():
        n = len(main_d.shim_records())
        p = error_of(main_d.load("no_such_module_xyz"), "io.modgate.Manager.ModuleNotFound")
        assert p == {"name": "no_such_module_xyz"}, p
        assert len(main_d.shim_records()) == n

    def case_invalid_names():
        n = len(main_d.shim_records())
        for name in ("../x", "a b", "-r", "x" * 56, "", "vxlan\n", "a/b", "*", "vx\u00e9"):
            p = error_of(main_d.load(name), "io.modgate.Manager.InvalidName")
            assert p == {"name": name}, p
        # 55 characters is still a name, just not one the index knows.
        error_of(main_d.load("x" * 55), "io.modgate.Manager.ModuleNotFound")
        for params in ({"name": 5}, {"name": None}, {"name": "vxlan", "extra": 1}, {"name": "vxlan", "context": 3},
                       {"name": "vxlan", "context": {"seqnum": "x"}}, {"name": "vxlan", "timeoutUSec": -1},
                       {"name": "vxlan", "context": {"source": "nobody"}}):
            reply = main_d.call("io.modgate.Manager.Load", params)
            assert reply.get("error") == "org.varlink.service.InvalidParameter", (params, reply)
        for params in ({}, {"name": "vxlan", "modalias": "x"}, {"parameters": "a=1"},
                       {"name": "vxlan", "context": {"devpath": "/devices/x\n"}}):
            reply = main_d.call("io.modgate.Manager.Load", params)
            assert reply.get("error") == "io.modgate.Manager.InvalidRequest", (params, reply)
        assert len(main_d.shim_records()) == n, "a syscall was made for an invalid request"

    def case_nul_in_name():
        # A raw NUL ends a varlink message: what comes before it is not JSON. An escaped one is
        # JSON that sd-json refuses. Either way sd-varlink hangs up without a reply, nothing is
        # loaded, and the daemon serves the next connection.
        n = len(main_d.shim_records())
        for raw in (b'{"method":"io.modgate.Manager.Load","parameters":{"name":"vx\0lan"}}',
                    b'{"method":"io.modgate.Manager.Load","parameters":{"name":"vxlan\\u0000/../x"}}'):
            c = h.Varlink(main_d.address, timeout=10)
            try:
                c.sock.sendall(raw + b"\0")
                assert c.sock.recv(65536) == b"", "a reply to %r" % raw
            finally:
                c.close()
            assert main_d.proc.poll() is None, "daemon died"
            reply = main_d.load("vxlan")
            assert "error" not in reply and reply["parameters"]["modules"], reply
        assert len(main_d.shim_records()) == n, main_d.shim_records()[n:]

    def case_symlink_outside():
        n = len(main_d.shim_records())
        p = error_of(main_d.load(OUTSIDE_MODULE), "io.modgate.Manager.UntrustedOrigin")
        assert p["module"] == OUTSIDE_MODULE and "leaves the trusted root" in p["reason"], p
        assert len(main_d.shim_records()) == n

    def case_symlink_inside():
        reply = main_d.load(INSIDE_LINK_MODULE)
        assert "error" not in reply, reply
        rec = main_d.shim_records()[-1]
        assert rec["name"] == INSIDE_LINK_MODULE and rec["path"].startswith(os.path.join(trusted, "extra/")), rec

    def case_tmpfs_root():
        p = error_of(tmpfs_d.load("bonding"), "io.modgate.Manager.UntrustedOrigin")
        assert "read-only: file system type tmpfs is never read-only evidence" in p["reason"], p
        assert "manifest: no manifest to check against: " in p["reason"] and p["module"] == "tls", p
        assert [m["outcome"] for m in p["modules"]] == ["denied", "failed"], p
        assert p["modules"][1]["reason"] == "dependency tls was not loaded", p
        no_syscalls(tmpfs_d)

    def case_readonly_bind():
        # The mount is read-only; the tmpfs below it is not, and is never evidence anyway.
        p = error_of(robind_d.load("macvlan"), "io.modgate.Manager.UntrustedOrigin")
        assert "read-only: file system type tmpfs is never read-only evidence" in p["reason"], p
        no_syscalls(robind_d)

    def case_wrong_compression():
        n = len(main_d.shim_records())
        p = error_of(main_d.load(ZSTD_MODULE), "io.modgate.Manager.LoadFailed")
        assert "zstd" in p["reason"] and p["errnoName"] == "ENOEXEC", p
        assert len(main_d.shim_records()) == n

    def case_kernel_refuses():
        p = error_of(main_d.load(FAILING_MODULE), "io.modgate.Manager.LoadFailed")
        assert p["module"] == FAILING_MODULE and p["errnoName"] == "ENOEXEC", p
        rec = main_d.shim_records()[-1]
        assert rec["name"] == FAILING_MODULE and rec["result"] == -8, rec

    def case_journal():
        recs = journal.records(MODGATE_MODULE="vxlan", MODGATE_OUTCOME="loaded")
        assert len(recs) == 1, recs
        r = recs[0]
        shim = [x for x in main_d.shim_records() if x["name"] == "vxlan"][0]
        assert r["MESSAGE_ID"] == "9f556e7045894398898a0967ca80c0b2", r
        assert r["MODGATE_PATH"] == shim["path"], r
        assert r["MODGATE_DEVICE"] == shim["dev"] and int(r["MODGATE_INODE"]) == shim["ino"], r
        assert r["MODGATE_FSTYPE"] == "erofs" and r["MODGATE_SUPERBLOCK_RO"] == "1", r
        assert int(r["MODGATE_MOUNT_ID"]) > 0 and r["MODGATE_REQUEST_NAME"] == DEEP_MODULE, r
        assert r["MODGATE_PEER_UID"] == "0" and int(r["MODGATE_PEER_PID"]) > 0, r
        assert r["MODGATE_COMPRESSION"] == "xz" and r["MODGATE_FINIT_FLAGS"] == "4", r
        # The evidence: the manifest, against the SHA-256 of the bytes, here computed independently;
        # and what the erofs is stored on: a loop device, whose image is in a tmpfs.
        with open(shim["path"], "rb") as f:
            assert r["MODGATE_SHA256"] == hashlib.sha256(f.read()).hexdigest(), r
        assert r["MODGATE_EVIDENCE"] == "manifest" and r["MODGATE_FILE_MODULE"] == "vxlan", r
        assert r["MODGATE_BACKING"].startswith("loop") and " <- %s/tree.erofs on tmpfs" % work in \
            r["MODGATE_BACKING"], r

        denied = journal.records(MODGATE_OUTCOME="denied")
        assert sorted(d["MODGATE_MODULE"] for d in denied) == sorted(
                ["tls", "macvlan", OUTSIDE_MODULE]), denied
        for d in (x for x in denied if x["MODGATE_MODULE"] != OUTSIDE_MODULE):
            assert d["MESSAGE_ID"] == "3c67f0aec4794a73a35a7cb128a9d622" and d["MODGATE_FSTYPE"] == "tmpfs", d
            assert d["MODGATE_SUPERBLOCK_RO"] == "0" and "tmpfs is never read-only evidence" in d["MODGATE_REASON"], d
        failed = journal.records(MODGATE_MODULE=FAILING_MODULE)
        assert len(failed) == 1 and failed[0]["MODGATE_ERRNO_NAME"] == "ENOEXEC", failed

    def case_varlinkctl():
        out = h.run("varlinkctl", "introspect", main_d.address, "io.modgate.Manager",
                    capture_output=True, text=True).stdout
        for word in ("method Load", "error UntrustedOrigin", "error InvalidName", "already_loaded"):
            assert word in out, out
        res = h.run("varlinkctl", "call", main_d.address, "io.modgate.Manager.Load", '{"name":"vxlan"}',
                    capture_output=True, text=True, check=False)
        assert res.returncode == 0 and '"already_loaded"' in res.stdout, res
        res = h.run("varlinkctl", "call", main_d.address, "io.modgate.Manager.Load", '{"name":"../x"}',
                    capture_output=True, text=True, check=False)
        assert res.returncode != 0 and "io.modgate.Manager.InvalidName" in res.stderr, res

    def case_modgatectl():
        ctl = [os.environ["MODGATECTL"], "--address=" + main_d.address]
        res = h.run(*ctl, "load", "vxlan", capture_output=True, text=True, check=False)
        assert res.returncode == 0 and "already_loaded" in res.stdout, res
        res = h.run(*ctl, "load", "no_such_module_xyz", capture_output=True, text=True, check=False)
        assert res.returncode == 4 and "no_such_module_xyz: no such module." in res.stderr, res
        res = h.run(*ctl, "load", "../x", capture_output=True, text=True, check=False)
        assert res.returncode == 2 and "io.modgate.Manager.InvalidName" in res.stderr, res
        # What the daemon would refuse as invalid is refused in its words, without a connection.
        nowhere = [os.environ["MODGATECTL"], "--address=/run/modgate/nothing.sock"]
        invalid = "io.modgate.Manager.Invalid"
        for args, words in ((["load", "x" * 70], "x" * 70 + ": %sName" % invalid),
                            (["unload", "a b"], "a b: %sName" % invalid),
                            (["-m", "load", "pci:v1 pci:v2"], "pci:v1 pci:v2: %sModalias: modalias contains a space, "
                             "a control character or a non-ASCII byte" % invalid),
                            (["load", "/x/../a.ko"], "%sPath: path is not normalized" % invalid),
                            (["-p", "a=\x01", "load", "vxlan"], "vxlan: %sModuleParameters" % invalid)):
            res = h.run(*nowhere, *args, capture_output=True, text=True, check=False)
            assert res.returncode == 2 and words in res.stderr, (args, res)
            assert "Failed to connect" not in res.stderr, (args, res)
        res = h.run(*nowhere, "load", "x" * 70, "vxlan", capture_output=True, text=True, check=False)
        assert res.returncode == 2 and "Failed to connect" in res.stderr, "a valid one is still asked for"
        res = h.run(*ctl, "load", OUTSIDE_MODULE, capture_output=True, text=True, check=False)
        assert res.returncode == 3 and "UntrustedOrigin: path leaves the trusted root" in res.stderr, res
        res = h.run(*ctl, "--json", "load", "macvlan", capture_output=True, text=True, check=False)
        assert res.returncode == 0 and json.loads(res.stdout)["modules"][0]["outcome"] == "loaded", res
        res = h.run(*ctl, "frobnicate", "x", capture_output=True, text=True, check=False)
        assert res.returncode == 2 and "Unknown command 'frobnicate'" in res.stderr, res
        res = h.run(*ctl, "--address=/run/modgate/none.sock", "load", "x", capture_output=True, text=True,
                    check=False)
        assert res.returncode == 7 and "Failed to connect to /run/modgate/none.sock" in res.stderr, res

    def case_no_fd_leak():
        def round():
            main_d.load(DEEP_MODULE)
            main_d.load(OUTSIDE_MODULE)
            main_d.load(ZSTD_MODULE)
            main_d.load("no_such_module_xyz")
            main_d.load("../x")
        # The first round has opened what stays open (the journal socket); nothing may be added after.
        round()
        fds_before = main_d.fds()
        for _ in range(50):
            round()
        assert main_d.fds() == fds_before, "fds before %s, after %s" % (fds_before, main_d.fds())

    def case_no_init_module():
        for d in daemons:
            assert all(r["call"] == "finit_module" for r in d.shim_records()), d.shim_records()

    def case_no_socket():
        res = h.run(os.environ["MODGATED"], "--trusted-root=" + trusted, capture_output=True, text=True,
                    check=False, env=dict(os.environ, LD_PRELOAD=os.environ["MODGATE_SHIM"]))
        assert res.returncode != 0 and "FileDescriptorName=varlink" in res.stderr, res

    def case_bad_root():
        res = h.run(os.environ["MODGATED"], "--trusted-root=/nonexistent", "--listen=/run/modgate/x.sock",
                    capture_output=True, text=True, check=False)
        assert res.returncode != 0 and "Failed to pin trusted root /nonexistent" in res.stderr, res
        res = h.run(os.environ["MODGATED"], "--trusted-root=relative", capture_output=True, text=True,
                    check=False)
        assert res.returncode != 0 and "absolute path" in res.stderr, res

    def case_reload():
        h.reload(main_d)
        msg = main_d.wait_notify("RELOADING=1", timeout=10)
        assert msg and "MONOTONIC_USEC=" in msg, msg
        assert main_d.wait_ready(), "no READY=1 after the reload"
        reply = main_d.load(DEEP_MODULE)
        assert "error" not in reply, reply

    def case_reloads_unread():
        # Reloads in a row, nobody waiting for each: every one is announced, and the daemon still
        # answers. (The harness reads notify messages as they come, as the service manager does;
        # before it did, a daemon blocked in sd_notify() once the socket's queue of about 10 was full.)
        for _ in range(30):
            h.reload(main_d)
            reply = main_d.call("org.varlink.service.GetInfo")
            assert "error" not in reply, reply
        h.wait_for("the reloads' notify messages",
                   lambda: sum("RELOADING=1" in m.split("\n") for m in main_d.notify_messages()) >= 12)
        reply = main_d.load(DEEP_MODULE)
        assert "error" not in reply, reply

    def case_idle_exit():
        d = h.Daemon(work, "idle", trusted, args=("--idle-exit-sec=1",))
        try:
            # An open connection keeps it alive, however long it is quiet.
            c = h.Varlink(d.address)
            c.call("org.varlink.service.GetInfo")
            assert d.wait_ready()
            time.sleep(2.5)
            assert d.proc.poll() is None, "exited while a client was connected"
            c.close()
            d.proc.wait(timeout=10)
            assert d.proc.returncode == 0, d.proc.returncode
            assert "Idle for 1 s, exiting." in d.stderr_text(), d.stderr_text()
        finally:
            d.stop()

    t.case("daemons are socket-activated and report READY=1", case_ready)
    t.case("only CAP_SYS_MODULE is left", case_capabilities, needs=(case_ready,))
    t.case("a module with dependencies loads in dependency order from the erofs root", case_dependencies_in_order,
           needs=(case_ready,))
    t.case("a live module is not loaded again", case_already_live,
           needs=(case_ready, case_dependencies_in_order))
    t.case("a builtin module is reported as builtin", case_builtin, needs=(case_ready,))
    t.case("an unknown name gives ModuleNotFound and no syscall", case_unknown, needs=(case_ready,))
    t.case("invalid names give InvalidName, bad parameters InvalidParameter, no syscall", case_invalid_names,
           needs=(case_ready,))
    t.case("a NUL inside a name is refused", case_nul_in_name,
           needs=(case_ready, case_dependencies_in_order))
    t.case("a symlink out of the trusted tree is refused", case_symlink_outside, needs=(case_ready,))
    t.case("a symlink that stays inside the trusted tree is followed", case_symlink_inside,
           needs=(case_ready,))
    t.case("a writable tmpfs root gives UntrustedOrigin and no syscall", case_tmpfs_root,
           needs=(case_ready,))
    t.case("a read-only bind mount of a writable filesystem is refused", case_readonly_bind,
           needs=(case_ready,))
    t.case("a module compressed with another algorithm than the kernel's is refused", case_wrong_compression,
           needs=(case_ready,))
    t.case("a kernel error is a named LoadFailed with its errno", case_kernel_refuses, needs=(case_ready,))
    t.case("journal records carry module, path, device, inode, mount, fs type, outcome", case_journal,
           needs=(case_ready, case_dependencies_in_order))
    t.case("varlinkctl introspects and calls the interface", case_varlinkctl,
           needs=(case_ready, case_dependencies_in_order))
    t.case("modgatectl loads, and says why it did not", case_modgatectl,
           needs=(case_ready, case_dependencies_in_order))
    t.case("no fd leaks across requests", case_no_fd_leak, needs=(case_ready,))
    t.case("init_module is never called", case_no_init_module, needs=(case_ready,))
    t.case("without a passed socket or --listen the daemon says why and exits", case_no_socket)
    t.case("a bad trusted root is a clear start-up error", case_bad_root)
    t.case("Reload reloads with RELOADING=1, MONOTONIC_USEC= and READY=1", case_reload, needs=(case_ready,))
    t.case("30 reloads in a row, nobody waiting for each: each announced, the daemon still answers",
           case_reloads_unread, needs=(case_ready,))
    t.case("an idle daemon exits by itself, never while a client is connected", case_idle_exit,
           needs=(case_ready,))

    def case_clean_exit():
        # SIGTERM ends every daemon with status 0; in the sanitizer build that includes no leaks.
        for d in daemons:
            d.stop()
            assert d.proc.returncode == 0, "%s exited with %s:\n%s" % (d.address, d.proc.returncode,
                                                                        d.stderr_text()[-3000:])

    def case_config():
        conf_dir = "/etc/modgate/modgate.conf.d"
        os.makedirs(conf_dir, exist_ok=True)
        try:
            with open("/etc/modgate/modgate.conf", "w") as f:
                f.write("[Load]\nWorkers=2\nLoadAlone=foo-bar\n\n[Manager]\nIdleExitSec=5min\n")
            with open(conf_dir + "/50-local.conf", "w") as f:
                f.write("[Load]\nWorkers=3\n")
            res = h.run(os.environ["MODGATED"], "-n", capture_output=True, text=True, check=False)
            assert res.returncode == 0, res
            for line in ("Workers=3", "LoadAlone=foo_bar", "IdleExitSec=300s", "RequireReadOnlySuperblock=yes"):
                assert line in res.stdout.splitlines(), res.stdout
            # The command line wins.
            res = h.run(os.environ["MODGATED"], "-n", "--workers=7", capture_output=True, text=True, check=False)
            assert "Workers=7" in res.stdout.splitlines(), res.stdout

            # A typo stops the start with file, line and a hint; nothing runs on a half-read policy.
            with open(conf_dir + "/60-typo.conf", "w") as f:
                f.write("[Trust]\nRequireReadOnlySuperblok=no\n")
            for args in (["-n"], ["--listen=/run/modgate/bad.sock", "--trusted-root=" + trusted]):
                res = h.run(os.environ["MODGATED"], *args, capture_output=True, text=True, check=False)
                assert res.returncode == 1, res
                assert "Invalid configuration: /etc/modgate/modgate.conf.d/60-typo.conf:2:" in res.stderr, res.stderr
            assert not os.path.exists("/run/modgate/bad.sock")
        finally:
            for p in ("/etc/modgate/modgate.conf", conf_dir + "/50-local.conf", conf_dir + "/60-typo.conf"):
                if os.path.exists(p):
                    os.unlink(p)

    t.case("SIGTERM stops every daemon cleanly, with nothing leaked", case_clean_exit,
           always=True, needs=(case_ready,))
    t.case("modgate.conf and drop-ins configure the daemon; a typo stops it with file and line", case_config)
    t.run()
    for d in daemons:
        d.stop()
    journal.stop()
    if t.failed or os.environ.get("MODGATE_TEST_VERBOSE"):
        for d in daemons:
            print("# --- %s stderr ---" % d.address)
            for line in d.stderr_text().splitlines()[:60]:
                print("# " + line)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
