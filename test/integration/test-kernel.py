#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel boundary: what modgated does with each answer of finit_module and delete_module, and
with each state a module can be in, as Linux 6.12 gives them.

The real daemon under real socket activation, real libkmod over the real Debian module tree on a
read-only erofs loop mount (with one module uncompressed, re-indexed by depmod, and two whose bytes
are not what the kernel takes), a real journald. Only the module syscalls are faked (test/shim),
over a private /sys/module, and the shim answers as the kernel does: holders, refcnt and initstate
decide delete_module; flags, the file's magic and /sys/module/compression decide finit_module."""

import errno
import gzip
import json
import functools
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
LOAD = M + "Load"
UNLOAD = M + "Unload"
UNLOADED_ID = "fa479a41770b4c8c9ac677d2e9139751"

PLAIN_MODULE = "nlmon"          # uncompressed in the image: a .ko, loaded with flags 0
NOT_ELF_MODULE = "dummy"        # a .ko whose bytes are not an ELF object
GZIP_MODULE = "ifb"             # a .ko.xz whose bytes are gzip
USER_MODULE = "vxlan"           # uses udp_tunnel and ip6_udp_tunnel
USED_MODULE = "udp_tunnel"
REF_MODULE = "veth"             # the test gives it references
RACE_MODULE = "macvlan"         # a reference comes between the daemon's look and delete_module
NO_EXIT_MODULE = "vcan"         # has no exit function: the kernel will not unload it
NAMED = {PLAIN_MODULE, NOT_ELF_MODULE, GZIP_MODULE, USER_MODULE, USED_MODULE, REF_MODULE, RACE_MODULE,
         NO_EXIT_MODULE}

NOT_ELF_BYTES = b"#!/bin/sh\necho this is not a kernel module\n"


def calls(d, name, call=None):
    return [r for r in d.shim_records() if r.get("name") == name and (call is None or r["call"] == call)]


wait_for = functools.partial(h.wait_for, timeout=30)


def build_tree(tree, work, kver):
    """A copy of the real tree with PLAIN_MODULE and NOT_ELF_MODULE uncompressed to .ko and indexed
    again by depmod, then NOT_ELF_MODULE's bytes replaced and GZIP_MODULE recompressed with gzip."""
    base = os.path.join(work, "stage")
    stage = os.path.join(base, "lib/modules", kver)
    h.copy_tree(tree, stage)
    deps = h.parse_modules_dep(tree)
    for name in (PLAIN_MODULE, NOT_ELF_MODULE):
        rel = deps[name][0]
        assert rel.endswith(".ko.xz"), rel
        elf = h.run("xz", "-dc", os.path.join(stage, rel), capture_output=True).stdout
        with open(os.path.join(stage, rel[:-3]), "wb") as f:
            f.write(elf)
        os.unlink(os.path.join(stage, rel))
    h.run("depmod", "-b", base, kver)
    new_deps = h.parse_modules_dep(stage)
    for name in (PLAIN_MODULE, NOT_ELF_MODULE):
        assert new_deps[name][0] == deps[name][0][:-3], new_deps[name]

    with open(os.path.join(stage, new_deps[NOT_ELF_MODULE][0]), "wb") as f:
        f.write(NOT_ELF_BYTES)
    path = os.path.join(stage, new_deps[GZIP_MODULE][0])
    elf = h.run("xz", "-dc", path, capture_output=True).stdout
    with open(path, "wb") as f:
        f.write(gzip.compress(elf))
    return h.mount_erofs_tree(stage, work), new_deps


# A process of its own with the shim preloaded makes the module syscalls as the daemon does, to
# check that the shim refuses what the kernel refuses: the cases above rely on it. x86_64 numbers.
SYS_FINIT_MODULE = 313
SYS_DELETE_MODULE = 176
SYS_CLOCK_NANOSLEEP = 230
SHIM_CLIENT = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
out = []
for op in json.loads(sys.argv[1]):
    if op[0] == "finit":
        fd = os.open(op[1], os.O_RDONLY | os.O_CLOEXEC)
        r = libc.syscall(L(%d), L(fd), ctypes.c_char_p(b""), L(op[2]))
        os.close(fd)
    else:
        r = libc.syscall(L(%d), ctypes.c_char_p(op[1].encode()), L(op[2]))
    out.append(0 if r == 0 else -ctypes.get_errno())
print(json.dumps(out))
""" % (SYS_FINIT_MODULE, SYS_DELETE_MODULE)


def shim_run(work, ops, background=False):
    """Runs ops ([("finit", path, flags)] or [("delete", name, flags)]) in a process with the shim;
    returns the results (0 or -errno), or the running process."""
    env = {"LD_PRELOAD": os.environ["MODGATE_SHIM"], "MODGATE_SHIM_LOG": os.path.join(work, "client.shim.log"),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    # In the sanitizer build: python's own allocations at exit are not ours to report.
    for k in ("UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    if "ASAN_OPTIONS" in os.environ:
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":detect_leaks=0"
    args = [sys.executable, "-c", SHIM_CLIENT, json.dumps(ops)]
    if background:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    return json.loads(h.run(*args, env=env, capture_output=True, text=True).stdout)


def sleeping(pid):
    """Whether the process's main thread is in clock_nanosleep(2): the shim polls so while it waits."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0] == str(SYS_CLOCK_NANOSLEEP)
    except (FileNotFoundError, IndexError):
        return False


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    work = tempfile.mkdtemp(prefix="modgate-kn-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    print("# module tree: %s" % tree, flush=True)

    trusted, deps = build_tree(tree, work, kver)
    # Modules with no dependency and no softdep, each loaded by one finit_module: one for each case
    # below, so that no case sees another's records.
    STATE_MODULES = h.independent_modules(tree, "kernel/drivers/net/", exclude=NAMED)[:8]
    assert len(STATE_MODULES) == 8, STATE_MODULES
    print("# modules for the state cases: %s" % ", ".join(STATE_MODULES), flush=True)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    daemons = []

    def daemon(name, env=None):
        d = h.Daemon(work, name, trusted, extra_env=env)
        daemons.append(d)
        assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        return d

    main_d = daemon("main")
    racy_d = daemon("racy", env={"MODGATE_SHIM_TAKE_REF": RACE_MODULE, "MODGATE_SHIM_NO_EXIT": NO_EXIT_MODULE})

    def path_of(name):
        return os.path.join(trusted, deps[name][0])

    def unload_records(d, name):
        return [(r["MODGATE_OUTCOME"], r.get("MODGATE_ERRNO_NAME"), r.get("MODGATE_REASON"))
                for r in journal.records(MESSAGE_ID=UNLOADED_ID, MODGATE_MODULE=name, _PID=str(d.pid))]

    def module_records(d, name):
        return journal.records(MODGATE_MODULE=name, MODGATE_ROLE="requested", _PID=str(d.pid))

    # --- Unload --------------------------------------------------------------------------------

    def case_unload_holders():
        h.ok(main_d.load(USER_MODULE))
        assert h.module_state(USED_MODULE) == "live"
        # The shim made holders/ as the kernel does; the link is the one the kernel adds when vxlan
        # binds to udp_tunnel's symbols.
        holders = "/sys/module/%s/holders" % USED_MODULE
        assert os.listdir(holders) == [], os.listdir(holders)
        os.symlink("../../" + USER_MODULE, os.path.join(holders, USER_MODULE))
        p = h.error_of(main_d.call(UNLOAD, {"name": USED_MODULE}), "ModuleInUse")
        assert p == {"module": USED_MODULE, "holders": [USER_MODULE], "refcount": 0}, p
        assert calls(main_d, USED_MODULE, "delete_module") == [], "delete_module for a module with holders"
        assert h.module_state(USED_MODULE) == "live"
        assert unload_records(main_d, USED_MODULE) == [("kept", "EBUSY", "used by other modules")]

    def case_unload_success():
        assert h.ok(main_d.call(UNLOAD, {"name": USER_MODULE})) == {"name": USER_MODULE}
        recs = calls(main_d, USER_MODULE, "delete_module")
        assert [(r["flags"], r["result"]) for r in recs] == [(os.O_NONBLOCK, 0)], recs
        assert not os.path.exists("/sys/module/" + USER_MODULE)
        # The kernel takes the module's link out of the holders of what it used.
        assert os.listdir("/sys/module/%s/holders" % USED_MODULE) == []
        assert unload_records(main_d, USER_MODULE) == [("unloaded", None, None)]
        # Now nothing holds udp_tunnel, and it goes too.
        assert h.ok(main_d.call(UNLOAD, {"name": USED_MODULE})) == {"name": USED_MODULE}
        recs = calls(main_d, USED_MODULE, "delete_module")
        assert [(r["flags"], r["result"]) for r in recs] == [(os.O_NONBLOCK, 0)], recs
        assert h.module_state(USED_MODULE) is None and not os.path.exists("/sys/module/" + USED_MODULE)

    def case_unload_refcount():
        h.ok(main_d.load(REF_MODULE))
        with open("/sys/module/%s/refcnt" % REF_MODULE) as f:
            assert f.read() == "0\n"
        with open("/sys/module/%s/refcnt" % REF_MODULE, "w") as f:
            f.write("2\n")
        p = h.error_of(main_d.call(UNLOAD, {"name": REF_MODULE}), "ModuleInUse")
        assert p == {"module": REF_MODULE, "holders": [], "refcount": 2}, p
        assert calls(main_d, REF_MODULE, "delete_module") == []
        assert h.module_state(REF_MODULE) == "live"
        # The references go away: so can the module.
        with open("/sys/module/%s/refcnt" % REF_MODULE, "w") as f:
            f.write("0\n")
        assert h.ok(main_d.call(UNLOAD, {"name": REF_MODULE})) == {"name": REF_MODULE}
        assert [r["result"] for r in calls(main_d, REF_MODULE, "delete_module")] == [0]
        assert h.module_state(REF_MODULE) is None
        assert unload_records(main_d, REF_MODULE) == [("kept", "EBUSY", "in use"), ("unloaded", None, None)]

    def case_unload_not_live():
        coming, going = STATE_MODULES[0], STATE_MODULES[1]
        h.set_module_state(coming, "coming")
        h.set_module_state(going, "going")
        try:
            p = h.error_of(main_d.call(UNLOAD, {"name": coming}), "UnloadFailed")
            assert p == {"module": coming, "reason": "module is still initializing", "errnoName": "EBUSY"}, p
            p = h.error_of(main_d.call(UNLOAD, {"name": going}), "UnloadFailed")
            assert p == {"module": going, "reason": "module is already being unloaded", "errnoName": "EBUSY"}, p
            assert calls(main_d, coming) == [] and calls(main_d, going) == [], main_d.shim_records()
            assert h.module_state(coming) == "coming" and h.module_state(going) == "going"
            assert unload_records(main_d, coming) == [("kept", "EBUSY", "module is still initializing")]
            assert unload_records(main_d, going) == [("kept", "EBUSY", "module is already being unloaded")]
        finally:
            for name in (coming, going):
                shutil.rmtree("/sys/module/" + name)

    def case_unload_not_loaded():
        name = STATE_MODULES[2]
        p = h.error_of(main_d.call(UNLOAD, {"name": name}), "NotLoaded")
        assert p == {"module": name}, p
        assert calls(main_d, name) == []
        assert unload_records(main_d, name) == [("kept", "ENOENT", "module is not loaded")]

    def case_unload_race():
        h.ok(racy_d.load(RACE_MODULE))
        p = h.error_of(racy_d.call(UNLOAD, {"name": RACE_MODULE}), "ModuleInUse")
        # The reply says what the kernel shows after its refusal: the reference that came.
        assert p == {"module": RACE_MODULE, "holders": [], "refcount": 1}, p
        recs = calls(racy_d, RACE_MODULE, "delete_module")
        assert [(r["flags"], r["result"]) for r in recs] == [(os.O_NONBLOCK, -errno.EWOULDBLOCK)], recs
        assert h.module_state(RACE_MODULE) == "live"
        assert unload_records(racy_d, RACE_MODULE) == [("kept", errno.errorcode[errno.EWOULDBLOCK], "in use")]

    def case_unload_no_exit():
        h.ok(racy_d.load(NO_EXIT_MODULE))
        p = h.error_of(racy_d.call(UNLOAD, {"name": NO_EXIT_MODULE}), "UnloadFailed")
        reason = ("the kernel cannot unload the module now: it is initializing or going away, or it has no exit "
                  "function")
        assert p == {"module": NO_EXIT_MODULE, "reason": reason, "errnoName": "EBUSY"}, p
        recs = calls(racy_d, NO_EXIT_MODULE, "delete_module")
        assert [(r["flags"], r["result"]) for r in recs] == [(os.O_NONBLOCK, -errno.EBUSY)], recs
        assert h.module_state(NO_EXIT_MODULE) == "live"
        assert unload_records(racy_d, NO_EXIT_MODULE) == [("kept", "EBUSY", reason)]

    t.case("Unload of a module with holders: ModuleInUse naming them, no delete_module", case_unload_holders)
    t.case("Unload succeeds with O_NONBLOCK, the shim records 0, /sys/module/NAME and its holder links go",
           case_unload_success, needs=(case_unload_holders,))
    t.case("Unload of a module with references: ModuleInUse with the refcount, no delete_module",
           case_unload_refcount)
    t.case("Unload of a coming or going module: UnloadFailed EBUSY with the state, no delete_module",
           case_unload_not_live)
    t.case("Unload of a module that is not loaded: NotLoaded, no delete_module", case_unload_not_loaded)
    t.case("a reference that comes before delete_module: EWOULDBLOCK is ModuleInUse, the record says kept",
           case_unload_race)
    t.case("a module the kernel cannot unload (EBUSY, no exit function): UnloadFailed, the record says kept",
           case_unload_no_exit)

    # --- Load: what the file holds -------------------------------------------------------------

    def case_uncompressed():
        mods = h.modules_of(main_d.load(PLAIN_MODULE))
        assert [(m["name"], m["outcome"], m["path"]) for m in mods] == [
            (PLAIN_MODULE, "loaded", path_of(PLAIN_MODULE))], mods
        assert path_of(PLAIN_MODULE).endswith(".ko")
        recs = calls(main_d, PLAIN_MODULE, "finit_module")
        assert [(r["path"], r["flags"], r["params"], r["result"]) for r in recs] == [
            (path_of(PLAIN_MODULE), 0, "", 0)], recs
        assert h.module_state(PLAIN_MODULE) == "live"
        recs = module_records(main_d, PLAIN_MODULE)
        assert [(r["MODGATE_OUTCOME"], r["MODGATE_COMPRESSION"], r["MODGATE_FINIT_FLAGS"], r["MODGATE_PATH"])
                for r in recs] == [("loaded", "none", "0", path_of(PLAIN_MODULE))], recs

    def case_wrong_bytes():
        p = h.error_of(main_d.load(GZIP_MODULE), "LoadFailed")
        assert (p["module"], p["reason"], p["errno"], p["errnoName"]) == (
            GZIP_MODULE, "file is gzip-compressed, the kernel decompresses xz", errno.ENOEXEC, "ENOEXEC"), p
        assert [(m["name"], m["outcome"]) for m in p["modules"]] == [(GZIP_MODULE, "failed")], p
        p = h.error_of(main_d.load(NOT_ELF_MODULE), "LoadFailed")
        assert (p["module"], p["reason"], p["errno"], p["errnoName"]) == (
            NOT_ELF_MODULE, "not an ELF object or a known compressed file", errno.ENOEXEC, "ENOEXEC"), p
        assert [(m["name"], m["outcome"]) for m in p["modules"]] == [(NOT_ELF_MODULE, "failed")], p
        for name in (GZIP_MODULE, NOT_ELF_MODULE):
            assert calls(main_d, name) == [], "finit_module for %s: %s" % (name, calls(main_d, name))
            assert h.module_state(name) is None
            recs = module_records(main_d, name)
            assert [(r["MODGATE_OUTCOME"], r["MODGATE_ERRNO_NAME"]) for r in recs] == [("failed", "ENOEXEC")], recs

    def case_no_decompression():
        h.reset_sys_module(keep=())
        assert not os.path.exists("/sys/module/compression")
        try:
            d = daemon("nocomp")
            xz_name = STATE_MODULES[3]
            p = h.error_of(d.load(xz_name), "LoadFailed")
            assert (p["module"], p["reason"], p["errno"], p["errnoName"]) == (
                xz_name, "file is xz-compressed, the kernel decompresses nothing", errno.ENOEXEC, "ENOEXEC"), p
            assert d.shim_records() == [], d.shim_records()
            mods = h.modules_of(d.load(PLAIN_MODULE))
            assert [(m["name"], m["outcome"]) for m in mods] == [(PLAIN_MODULE, "loaded")], mods
            assert [(r["name"], r["flags"], r["result"]) for r in d.shim_records()] == [(PLAIN_MODULE, 0, 0)]
        finally:
            with open("/sys/module/compression", "w") as f:
                f.write("xz\n")

    t.case("an uncompressed .ko in the trusted tree is loaded with flags 0", case_uncompressed)
    t.case("gzip bytes for an xz kernel, and bytes that are not ELF, are refused before finit_module",
           case_wrong_bytes)
    t.case("a kernel that decompresses nothing: .ko.xz refused before any syscall, .ko still loads",
           case_no_decompression)

    # --- Load: a module another loader has in hand ---------------------------------------------

    def case_coming_becomes_live():
        h.reset_sys_module()
        name = STATE_MODULES[4]
        h.set_module_state(name, "coming")
        first, second = h.AsyncVarlink(main_d.address), h.AsyncVarlink(main_d.address)
        try:
            first.send(LOAD, {"name": name})
            second.send(LOAD, {"name": name})
            assert not first.answered(0.5) and not second.answered(0), "answered while the module was coming"
            assert calls(main_d, name) == [], "finit_module while another loader had the module"
            h.set_module_state(name, "live")
            for c in (first, second):
                mods = h.modules_of(c.receive())
                assert [(m["name"], m["outcome"]) for m in mods] == [(name, "already_loaded")], mods
        finally:
            first.close()
            second.close()
        assert calls(main_d, name) == [], calls(main_d, name)
        recs = module_records(main_d, name)
        assert [(r["MODGATE_OUTCOME"], r["MODGATE_REQUESTERS"]) for r in recs] == [("already_loaded", "2")], recs

    def case_coming_goes_away():
        name = STATE_MODULES[5]
        h.set_module_state(name, "coming")
        first, second = h.AsyncVarlink(main_d.address), h.AsyncVarlink(main_d.address)
        try:
            first.send(LOAD, {"name": name})
            second.send(LOAD, {"name": name})
            assert not first.answered(0.5) and not second.answered(0), "answered while the module was coming"
            shutil.rmtree("/sys/module/" + name)
            for c in (first, second):
                mods = h.modules_of(c.receive())
                assert [(m["name"], m["outcome"]) for m in mods] == [(name, "loaded")], mods
        finally:
            first.close()
            second.close()
        recs = calls(main_d, name)
        assert [(r["call"], r["path"], r["result"]) for r in recs] == [("finit_module", path_of(name), 0)], recs
        assert h.module_state(name) == "live"

    def case_going():
        name = STATE_MODULES[6]
        h.set_module_state(name, "going")
        try:
            p = h.error_of(main_d.load(name), "LoadFailed")
            assert (p["module"], p["reason"], p["errno"], p["errnoName"]) == (
                name, "module is being removed", errno.EBUSY, "EBUSY"), p
            assert [(m["name"], m["outcome"]) for m in p["modules"]] == [(name, "failed")], p
            assert calls(main_d, name) == [] and h.module_state(name) == "going"
        finally:
            shutil.rmtree("/sys/module/" + name)
        # Once it is gone, the refusal is not remembered: the next request loads it.
        mods = h.modules_of(main_d.load(name))
        assert [(m["name"], m["outcome"]) for m in mods] == [(name, "loaded")], mods
        assert [(r["call"], r["result"]) for r in calls(main_d, name)] == [("finit_module", 0)]
        recs = module_records(main_d, name)
        assert [(r["MODGATE_OUTCOME"], r.get("MODGATE_ERRNO_NAME")) for r in recs] == [
            ("failed", "EBUSY"), ("loaded", None)], recs

    t.case("a coming module is waited for by every requester and answers already_loaded once live",
           case_coming_becomes_live)
    t.case("a coming module that goes away is loaded once, by one finit_module", case_coming_goes_away)
    t.case("a going module: LoadFailed EBUSY at once, no finit_module; loaded once it is gone", case_going)

    # --- The shim answers as the kernel does ---------------------------------------------------

    def case_shim_refuses_like_the_kernel():
        h.reset_sys_module()
        xz = os.path.join(trusted, deps[STATE_MODULES[7]][0])
        plain = path_of(PLAIN_MODULE)
        gz = path_of(GZIP_MODULE)
        C = h.MODULE_INIT_COMPRESSED_FILE
        got = shim_run(work, [("finit", xz, 1), ("finit", xz, 2), ("finit", xz, C | 8), ("finit", plain, C),
                              ("finit", gz, C), ("finit", xz, 0), ("finit", path_of(NOT_ELF_MODULE), 0),
                              ("delete", "no_such_module", os.O_NONBLOCK)])
        assert got == [-errno.EINVAL, -errno.EINVAL, -errno.EINVAL, -errno.EINVAL, -errno.EINVAL, -errno.ENOEXEC,
                       -errno.ENOEXEC, -errno.ENOENT], got
        os.unlink("/sys/module/compression")
        try:
            assert shim_run(work, [("finit", xz, C), ("finit", plain, 0)]) == [-errno.EOPNOTSUPP, 0]
        finally:
            with open("/sys/module/compression", "w") as f:
                f.write("xz\n")
        assert shim_run(work, [("finit", plain, 0), ("delete", PLAIN_MODULE, os.O_NONBLOCK | os.O_TRUNC),
                               ("delete", PLAIN_MODULE, os.O_NONBLOCK), ("delete", PLAIN_MODULE, os.O_NONBLOCK)]) == [
            -errno.EEXIST, -errno.EINVAL, 0, -errno.ENOENT]
        name = h.module_name(xz)
        h.set_module_state(name, "going")
        assert shim_run(work, [("finit", xz, C), ("delete", name, os.O_NONBLOCK)]) == [-errno.EBUSY, -errno.EBUSY]
        # A coming module: finit_module waits, then EEXIST once live, EBUSY once gone.
        for end, want in (("live", -errno.EEXIST), (None, -errno.EBUSY)):
            h.set_module_state(name, "coming")
            proc = shim_run(work, [("finit", xz, C)], background=True)
            try:
                wait_for("finit_module to wait for the coming module", lambda: sleeping(proc.pid))
                assert proc.poll() is None, "finit_module did not wait for the coming module"
                if end:
                    h.set_module_state(name, end)
                else:
                    shutil.rmtree("/sys/module/" + name)
                out, _ = proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            assert json.loads(out) == [want], (end, out)
        assert h.module_state(name) is None
        assert shim_run(work, [("finit", xz, C)]) == [0] and h.module_state(name) == "live"
        with open(os.path.join(work, "client.shim.log")) as f:
            recs = [json.loads(line) for line in f]
        assert [r["result"] for r in recs if r["call"] == "delete_module"] == [
            -errno.ENOENT, -errno.EINVAL, 0, -errno.ENOENT, -errno.EBUSY], recs

    t.case("the shim refuses what the kernel refuses: flags, magic, no decompression, states",
           case_shim_refuses_like_the_kernel)

    def case_clean_exit():
        for d in daemons:
            assert all(r["call"] != "init_module" for r in d.shim_records()), d.shim_records()
        # SIGTERM ends every daemon with status 0; in the sanitizer build that includes no leaks.
        h.assert_clean_exit(*daemons)

    t.case("SIGTERM stops every daemon with status 0, none called init_module", case_clean_exit, always=True)
    t.run()

    for d in daemons:
        d.stop()
    journal.stop()
    if t.failed or os.environ.get("MODGATE_TEST_VERBOSE"):
        h.dump_stderr(daemons, 40)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
