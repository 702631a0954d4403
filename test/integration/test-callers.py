#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who may ask: the peer's identity from its pidfd, never the request's say-so. Root without
CAP_SYS_MODULE is refused Load, Unload and parameters; a claimed source must be the caller's own;
udevd without the capability (the takeover) may load only what a real device in sysfs announces.
Each refusal is a PermissionDenied reply and a journal record of the caller and its claim."""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

MODULE = "eql"          # no dependencies
UNLOAD = "nlmon"
REFUSALS_COUNTED = "bb53ea26cd364226b2ce5d3c142f7111"
REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
READERS = 4343         # ReadGroup=
MEMBER = ["setpriv", "--reuid=4242", "--regid=%d" % READERS, "--clear-groups"]
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]
ONLY_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-all,+sys_module"]

def call_as(prefix, address, method, parameters):
    return h.call_as(prefix, address, method, parameters)


# One connection, several calls, the caller changing between them: the daemon reads its identity at
# every call, and what was missing once on a connection stays missing. Prints each reply, one JSON a
# line.
SAME_CONNECTION = r"""
import ctypes, json, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
CAP_SYS_MODULE = 16

class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

def set_effective(on):
    hdr, data = Header(0x20080522, 0), (Data * 2)()
    assert libc.capget(ctypes.byref(hdr), data) == 0, ctypes.get_errno()
    data[0].effective = data[0].effective | (1 << CAP_SYS_MODULE) if on else data[0].effective & ~(1 << CAP_SYS_MODULE)
    assert libc.capset(ctypes.byref(hdr), data) == 0, ctypes.get_errno()

s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
buf = b""
def call():
    global buf
    s.sendall(json.dumps({"method": "io.modgate.Manager.Load", "parameters": {"name": sys.argv[2]}}).encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(65536)
        assert chunk, "connection closed"
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    print(msg.decode(), flush=True)

call()
set_effective(False)
call()
set_effective(True)
call()
"""


# A ReadGroup= member's connection, kept by a child while the process that connected gains
# CAP_SYS_MODULE by executing a program that has it as a file capability and runs on ("exec"), or runs
# it to its end and stays a zombie that its parent has not reaped yet ("zombie"). The connector makes
# one call first (Explain, a reader's), so that the daemon has accepted the connection before
# anything changes. Prints one JSON a line: that reply, what the keeper saw of the connector before
# its calls, each call's reply, and what it saw after.
KEPT_CONNECTION = r"""
import json, os, socket, sys, time
address, mode, program, calls = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
rfd, wfd = os.pipe()            # close-on-exec: the connector's exec leaves only the keeper's

def status(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return {k: v.strip() for k, v in (x.split(":", 1) for x in f.read().splitlines() if ":" in x)}
    except FileNotFoundError:
        return {}

connector = os.fork()
if connector == 0:
    s = socket.socket(socket.AF_UNIX)           # close-on-exec too: the keeper holds it alone
    s.connect(address)
    buf = b""
    def call(method, params):
        global buf
        s.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
        while b"\0" not in buf:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
        msg, buf = buf.split(b"\0", 1)
        return msg.decode()
    out = os.fdopen(wfd, "w")
    out.write(call("io.modgate.Manager.Explain", {"name": "eql"}) + "\n")
    out.flush()
    me = os.getpid()
    if os.fork() == 0:
        deadline = time.monotonic() + 30
        while True:
            st = status(me)
            if int(st.get("CapEff", "0"), 16) & (1 << 16) and (mode == "exec" or st["State"].startswith("Z")):
                break
            assert time.monotonic() < deadline, st
            time.sleep(0.01)
        out.write(json.dumps({"before": {"state": st["State"], "capeff": st["CapEff"]}}) + "\n")
        for method, params in calls:
            out.write(call(method, params) + "\n")
        st = status(me)
        out.write(json.dumps({"after": {"state": st.get("State"), "capeff": st.get("CapEff")}}) + "\n")
        out.close()
        os._exit(0)
    os.execv(program, [program] + (["30"] if mode == "exec" else []))
os.close(wfd)
with os.fdopen(rfd) as f:
    sys.stdout.write(f.read())
if mode == "exec":
    os.kill(connector, 9)
os.waitpid(connector, 0)
"""


def device_with_modalias(resolvable):
    """A device of this machine whose uevent's MODALIAS the index resolves."""
    for dirpath, _, filenames in sorted(os.walk("/sys/devices")):
        if "uevent" not in filenames:
            continue
        try:
            with open(os.path.join(dirpath, "uevent")) as f:
                env = dict(x.split("=", 1) for x in f.read().splitlines() if "=" in x)
        except OSError:
            continue
        alias = env.get("MODALIAS")
        if alias and resolvable(alias):
            return dirpath[len("/sys"):], alias
    raise RuntimeError("no device of this machine has a modalias the module index resolves")


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-callers-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    sysctl = h.fake_modules_disabled(work)      # what a Seal that should not happen would write
    h.mount_etc_overlay(work)
    os.makedirs("/etc/modgate/modgate.conf.d")
    with open("/etc/modgate/modgate.conf.d/50-readers.conf", "w") as f:
        f.write("[Manager]\nReadGroup=%d\n" % READERS)
    journal = h.Journal()
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    d = h.Daemon(work, "callers", root)
    assert d.activate(), d.stderr_text()
    daemons = [d]

    def refused_records(**match):
        return journal.records(MESSAGE_ID=REFUSED_ID, _PID=str(d.pid), **match)

    def denied(reply, part):
        assert reply.get("error") == "io.modgate.Manager.PermissionDenied", reply
        assert part in reply["parameters"]["reason"], reply
        return reply["parameters"]["reason"]

    def case_capability():
        r = call_as(NO_SYS_MODULE, d.address, "io.modgate.Manager.Load", {"name": MODULE})
        why = denied(r, "lacks CAP_SYS_MODULE")
        rec = refused_records(MODGATE_METHOD="Load")
        assert len(rec) == 1 and rec[0]["MODGATE_REQUEST_NAME"] == MODULE and rec[0]["MODGATE_PEER_UID"] == "0", rec
        assert rec[0]["MODGATE_REASON"] == why and rec[0]["MODGATE_OUTCOME"] == "refused_caller", rec
        r = call_as(NO_SYS_MODULE, d.address, "io.modgate.Manager.Load",
                    {"name": "dummy", "parameters": "numdummies=2"})
        denied(r, "lacks CAP_SYS_MODULE")
        assert h.finit_records(d.shim_records()) == [], d.shim_records()
        # With CAP_SYS_MODULE and nothing else, the same uid 0 may.
        r = call_as(ONLY_SYS_MODULE, d.address, "io.modgate.Manager.Load", {"name": MODULE})
        assert [(m["name"], m["outcome"]) for m in r["parameters"]["modules"]] == [(MODULE, "loaded")], r
        print("# %s" % why, flush=True)

    def case_unload():
        h.ok(d.load(UNLOAD))
        r = call_as(NO_SYS_MODULE, d.address, "io.modgate.Manager.Unload", {"name": UNLOAD})
        denied(r, "lacks CAP_SYS_MODULE")
        assert refused_records(MODGATE_METHOD="Unload"), "no record"
        assert h.module_state(UNLOAD) == "live"
        r = call_as(ONLY_SYS_MODULE, d.address, "io.modgate.Manager.Unload", {"name": UNLOAD})
        assert r.get("parameters") == {"name": UNLOAD}, r

    def case_claimed_source():
        h.reset_sys_module()
        n = len(d.shim_records())
        for source in ("kernel", "boot", "udev"):
            r = call_as([], d.address, "io.modgate.Manager.Load", {"name": MODULE, "context": {"source": source}})
            why = denied(r, 'source "%s" is claimed by pid ' % source)
            rec = refused_records(MODGATE_CLAIMED_SOURCE=source)
            assert len(rec) == 1 and rec[0]["MODGATE_REASON"] == why, rec
            # A refused claim is never provenance: no record names that source as who asked.
            other = journal.records(MODGATE_SOURCE=source, _PID=str(d.pid))
            assert other == [], other
        assert d.shim_records()[n:] == [], d.shim_records()[n:]
        r = call_as([], d.address, "io.modgate.Manager.Load", {"name": MODULE, "context": {"source": "admin"}})
        assert r["parameters"]["modules"][0]["outcome"] == "loaded", r

    # udevd under the takeover: its cgroup is systemd-udevd.service's, its bounding set lacks the
    # capability. modgate-udev run there, with the environment udev gives it.
    def resolvable(alias):
        reply = d.call("io.modgate.Manager.Load", {"modalias": alias, "context": {"source": "admin"}})
        return "error" not in reply

    def run_udev(devpath, modalias, *names):
        # SEQNUM 1: an event before the daemon started, which its uevent log cannot know: the device in
        # sysfs decides (test-udev.py has the kernel's own events).
        env = dict(os.environ, ACTION="add", DEVPATH=devpath, SUBSYSTEM="pci", SEQNUM="1")
        env.pop("MODALIAS", None)
        if modalias:
            env["MODALIAS"] = modalias
        return subprocess.run([*h.in_unit("systemd-udevd.service"), *NO_SYS_MODULE, os.environ["MODGATE_UDEV"],
                               "--address=" + d.address, *names], env=env, capture_output=True, text=True,
                              timeout=60)

    def case_udev():
        h.reset_sys_module()
        devpath, alias = device_with_modalias(resolvable)
        h.reset_sys_module()
        before = len(h.finit_records(d.shim_records()))
        # The device's own modalias: loaded.
        res = run_udev(devpath, alias)
        assert res.returncode == 0, res
        loaded = h.finit_records(d.shim_records())[before:]
        assert loaded, (res, d.stderr_text()[-2000:])
        rec = journal.records(MODGATE_SOURCE="udev", MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert rec and rec[0]["MODGATE_PEER_UNIT"] == "systemd-udevd.service" and rec[0]["MODGATE_DEVPATH"] == devpath, rec
        # Another modalias than the device's: refused, nothing loads.
        h.reset_sys_module()
        n = len(d.shim_records())
        res = run_udev(devpath, "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00")
        assert d.shim_records()[n:] == [], d.shim_records()[n:]
        rec = refused_records(MODGATE_CLAIMED_DEVPATH=devpath)
        assert rec and "is not device %s's (%s)" % (devpath, alias) in rec[-1]["MODGATE_REASON"], rec
        # A device that does not exist.
        res = run_udev("/devices/pci0000:00/0000:00:1f.7", "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00")
        rec = refused_records(MODGATE_CLAIMED_DEVPATH="/devices/pci0000:00/0000:00:1f.7")
        assert rec and rec[-1]["MODGATE_REASON"] == "device /devices/pci0000:00/0000:00:1f.7 does not exist", rec
        # A devpath that leads out of /sys to a uevent file anyone could write: no device.
        fake = os.path.join(work, "fake")
        os.makedirs(fake)
        with open(os.path.join(fake, "uevent"), "w") as f:
            f.write("MODALIAS=%s\n" % alias)
        up = "/.." + fake
        res = run_udev(up, alias)
        rec = refused_records(MODGATE_CLAIMED_DEVPATH=up)
        assert rec and rec[-1]["MODGATE_REASON"] == "device %s does not exist" % up, rec
        assert d.shim_records()[n:] == []
        # A cgroup only named like udevd's, below another unit (a delegated subtree): not udevd.
        res = subprocess.run([*h.in_unit("delegate.service/systemd-udevd.service"), *NO_SYS_MODULE,
                              os.environ["MODGATE_UDEV"], "--address=" + d.address],
                             env=dict(os.environ, ACTION="add", DEVPATH=devpath, MODALIAS=alias, SUBSYSTEM="pci"),
                             capture_output=True, text=True, timeout=60)
        rec = refused_records(MODGATE_PEER_UNIT="delegate.service")
        assert rec and 'source "udev" is claimed by pid' in rec[-1]["MODGATE_REASON"], rec
        assert d.shim_records()[n:] == []
        # A name: only those udev's installed rules name (none are installed here), then refused.
        res = run_udev(devpath, None, MODULE)
        rec = refused_records(MODGATE_REQUEST_NAME=MODULE, MODGATE_CLAIMED_SOURCE="udev")
        assert rec and rec[-1]["MODGATE_REASON"] == "module %s is not one that udev's installed rules name" % MODULE, rec
        assert d.shim_records()[n:] == []
        print("# %s: %s" % (devpath, alias), flush=True)

    t.case("root without CAP_SYS_MODULE is refused Load and parameters, recorded with its identity; with only "
           "CAP_SYS_MODULE it loads", case_capability)
    t.case("Unload needs CAP_SYS_MODULE too", case_unload)

    def case_same_connection():
        h.reload(d)     # a new counting window: earlier cases' refusals of MODULE are not this one's
        since = len(refused_records())
        h.reset_sys_module()
        n = len(h.finit_records(d.shim_records()))
        p = subprocess.run([sys.executable, "-c", SAME_CONNECTION, d.address, MODULE], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        first, dropped, again = [json.loads(x) for x in p.stdout.splitlines()]
        assert [(m["name"], m["outcome"]) for m in h.ok(first)["modules"]] == [(MODULE, "loaded")], first
        denied(dropped, "lacks CAP_SYS_MODULE")
        why = denied(again, "was without CAP_SYS_MODULE at an earlier call on this connection: a capability taken "
                     "back grants nothing on it")
        assert len(h.finit_records(d.shim_records())) == n + 1
        # The first refusal on the connection is a record; the second, of the same method, source and
        # module from the same peer in the same minute, is counted (docs/journal.md), and the count is
        # written when a reload begins a new window.
        rec = refused_records()[since:]
        assert len(rec) == 1 and rec[0]["MODGATE_METHOD"] == "Load", rec
        assert "lacks CAP_SYS_MODULE" in rec[0]["MODGATE_REASON"], rec
        assert refused_records(MODGATE_REASON=why) == []
        h.reload(d)
        counted = journal.records(MESSAGE_ID=REFUSALS_COUNTED, MODGATE_OUTCOME="refused_caller", _PID=str(d.pid))
        assert any("Load:admin:%s=1" % MODULE in r.get("MODGATE_TOP", "").split() for r in counted), counted

    t.case("on one connection the identity is read at every call: CAP_SYS_MODULE dropped after connecting is "
           "refused, and taken back it is still refused", case_same_connection)

    # What the member's kept connection asks once its connector holds CAP_SYS_MODULE.
    kept_calls = [("io.modgate.Manager.Load", {"name": MODULE}),
                  ("io.modgate.Manager.Load", {"name": "dummy", "parameters": "numdummies=2"}),
                  ("io.modgate.Manager.Unload", {"name": UNLOAD}),
                  ("io.modgate.Manager.Reload", {}),
                  ("io.modgate.Manager.Seal", {})]
    caps = os.path.join(work, "caps")
    os.makedirs(caps, mode=0o755)
    sleep_cap = h.copy_with_file_caps("/usr/bin/sleep", os.path.join(caps, "sleep"))
    true_cap = h.copy_with_file_caps("/usr/bin/true", os.path.join(caps, "true"))

    def kept_connection(mode, program, reason):
        # A new counting window: this case's refusals are its own first ones, each a record.
        h.reload(d)
        h.reset_sys_module()
        h.ok(d.load(UNLOAD))
        n = len(h.finit_records(d.shim_records()))
        since = len(refused_records(MODGATE_PEER_UID="4242"))
        os.chmod(d.address, 0o666)
        try:
            p = subprocess.run([*MEMBER, sys.executable, "-c", KEPT_CONNECTION, d.address, mode, program,
                                json.dumps(kept_calls)], capture_output=True, text=True, timeout=90)
        finally:
            os.chmod(d.address, 0o600)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        explained, before, replies, after = lines[0], lines[1]["before"], lines[2:-1], lines[-1]["after"]
        # The member reads; its connector held CAP_SYS_MODULE, alive or a zombie, while the keeper asked.
        assert h.ok(explained)["verdict"], explained
        for seen in (before, after):
            assert int(seen["capeff"], 16) & (1 << h.CAP_SYS_MODULE), lines
            assert seen["state"][0] in ("Z" if mode == "zombie" else "RS"), lines
        assert len(replies) == len(kept_calls), lines
        for reply in replies:
            denied(reply, reason)
        assert h.finit_records(d.shim_records())[n:] == [], d.shim_records()
        assert h.module_state(UNLOAD) == "live"
        with open(sysctl) as f:
            assert f.read().strip() == "0", "sealed"
        rec = refused_records(MODGATE_PEER_UID="4242")[since:]
        assert [r["MODGATE_METHOD"] for r in rec] == ["Load", "Load", "Unload", "Reload", "Seal"], rec
        assert all(reason in r["MODGATE_REASON"] for r in rec), rec
        print("# %s" % rec[0]["MODGATE_REASON"], flush=True)

    t.case("a ReadGroup= member's connection kept by a child while its connector runs a program with "
           "cap_sys_module as a file capability: Load, parameters, Unload, Reload and Seal refused and recorded",
           lambda: kept_connection("exec", sleep_cap, "lacked CAP_SYS_MODULE when it connected: a capability "
                                   "gained after connecting grants nothing on that connection"))
    t.case("the same with the connector exited, a zombie whose status still shows the capability: refused as "
           "a zombie", lambda: kept_connection("zombie", true_cap, "which connected, has exited (a zombie): its "
                                               "connection is held by another process"))

    def case_fresh_connection():
        # The member's own process that holds CAP_SYS_MODULE from a file capability when it connects.
        h.reset_sys_module()
        python_cap = h.copy_with_file_caps(sys.executable, os.path.join(caps, "python3"))
        os.chmod(d.address, 0o666)
        try:
            proc = subprocess.run([*MEMBER, python_cap, "-c", h.CLIENT, d.address, "io.modgate.Manager.Load",
                                   json.dumps({"name": MODULE})], capture_output=True, text=True, timeout=60)
        finally:
            os.chmod(d.address, 0o600)
        assert proc.returncode == 0, proc
        r = json.loads(proc.stdout)
        assert [(m["name"], m["outcome"]) for m in h.ok(r)["modules"]] == [(MODULE, "loaded")], r
        rec = journal.records(MODGATE_OUTCOME="loaded", MODGATE_PEER_UID="4242", _PID=str(d.pid))
        assert rec, "no record of the member's load"

    t.case("a fresh connection by a process that holds CAP_SYS_MODULE when it connects (the member running a "
           "program with the file capability) is served", case_fresh_connection)
    t.case("a source claimed by a process that is not it (kernel, boot, udev) is refused and journaled as a "
           "refused claim, never as provenance", case_claimed_source)
    t.case("udevd without CAP_SYS_MODULE: its device's modalias loads; another modalias, a missing device or an "
           "unlisted name is refused, nothing loads", case_udev)
    def case_rule_names():
        # udev's rules name modules for devices they match: the administrator's file here. The daemon
        # reads the rules when a request names a module, so they stay mounted while it runs.
        h.reset_sys_module()
        devpath, alias = device_with_modalias(resolvable)
        subsystem = os.path.basename(os.readlink("/sys%s/subsystem" % devpath))
        mounted = []
        for d in ("/etc/udev/rules.d", "/run/udev/rules.d", "/usr/lib/udev/rules.d"):
            os.makedirs(d, exist_ok=True)
            h.run("mount", "-t", "tmpfs", "tmpfs", d)
            mounted.append(d)
        try:
            with open("/etc/udev/rules.d/80-modgate.rules", "w") as f:
                f.write('SUBSYSTEM=="tifm", RUN+="/usr/libexec/modgate/modgate-udev %s"\n' % MODULE)
                f.write('SUBSYSTEM=="%s", RUN+="/usr/libexec/modgate/modgate-udev %s"\n' % (subsystem, UNLOAD))
            d2 = h.Daemon(work, "rules", root)
            assert d2.activate(), d2.stderr_text()
            daemons.append(d2)
            udevd = [*h.in_unit("systemd-udevd.service/udev/x"), *NO_SYS_MODULE]
            ctx = {"source": "udev", "devpath": devpath, "seqnum": 1}
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
            assert r["parameters"]["reason"] == ("udev's rules pass module %s for other devices than %s (subsystem %s)"
                                                 % (MODULE, devpath, subsystem)), r
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": UNLOAD, "context": ctx})
            assert [(m["name"], m["outcome"]) for m in r["parameters"]["modules"]] == [(UNLOAD, "loaded")], r
            # No source given: recorded without a claim.
            r = h.call_as(NO_SYS_MODULE, d2.address, "io.modgate.Manager.Load", {"name": MODULE})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
            rec = journal.records(MESSAGE_ID=REFUSED_ID, _PID=str(d2.pid), MODGATE_REQUEST_NAME=MODULE)
            assert len(rec) == 2 and "MODGATE_CLAIMED_SOURCE" not in rec[-1], rec
            # A rules file in /run/udev/rules.d counts for nothing, even one that says modgate-udev-rules
            # wrote it: whatever may not load modules (udevd itself) can usually write there.
            copy = "/run/udev/rules.d/81-vendor.rules"
            with open(copy, "w") as f:
                f.write('# Generated by modgate-udev-rules from /usr/lib/udev/rules.d/81-vendor.rules.\n'
                        'SUBSYSTEM=="%s", RUN+="/usr/libexec/modgate/modgate-udev %s"\n' % (subsystem, MODULE))
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
            # Its source, a package's rule that calls udev's kmod builtin, written while the daemon
            # runs, counts at the next request, and no longer once it is gone.
            rules = "/usr/lib/udev/rules.d/81-vendor.rules"
            with open(rules, "w") as f:
                f.write('SUBSYSTEM=="%s", RUN{builtin}+="kmod load %s"\n' % (subsystem, MODULE))
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert [(m["name"], m["outcome"]) for m in r["parameters"]["modules"]] == [(MODULE, "loaded")], r
            os.unlink(rules)
            h.reset_sys_module()
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
            # The administrator's file masks it by name: /etc hides /usr.
            with open(rules, "w") as f:
                f.write('SUBSYSTEM=="%s", RUN+="/usr/libexec/modgate/modgate-udev %s"\n' % (subsystem, MODULE))
            os.symlink("/dev/null", "/etc/udev/rules.d/81-vendor.rules")
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
        finally:
            for d in mounted:
                h.run("umount", d)
        print("# rules for %s pass %s, not %s; a rule added later passes %s until it goes"
              % (subsystem, UNLOAD, MODULE, MODULE), flush=True)

    t.case("a name udev's rules pass loads only for a device of the rule's subsystem; a request without a source "
           "claims none; rules are read as they are at the request, from /etc and /usr, never /run", case_rule_names)
    t.case("the daemon exits cleanly on SIGTERM", lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()

    journal.stop()
    if t.failed:
        h.dump_stderr(daemons, 20)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
