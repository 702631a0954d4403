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
REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]
ONLY_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-all,+sys_module"]

def call_as(prefix, address, method, parameters):
    return h.call_as(prefix, address, method, parameters)


# One connection, several calls, the caller changing between them: the daemon reads its identity at
# every call, never from the connection's first. Prints each reply, one JSON a line.
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
        h.reset_sys_module()
        n = len(h.finit_records(d.shim_records()))
        p = subprocess.run([sys.executable, "-c", SAME_CONNECTION, d.address, MODULE], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        first, dropped, again = [json.loads(x) for x in p.stdout.splitlines()]
        assert [(m["name"], m["outcome"]) for m in h.ok(first)["modules"]] == [(MODULE, "loaded")], first
        denied(dropped, "lacks CAP_SYS_MODULE")
        assert [(m["name"], m["outcome"]) for m in h.ok(again)["modules"]] == [(MODULE, "already_loaded")], again
        assert len(h.finit_records(d.shim_records())) == n + 1

    t.case("on one connection the identity is read at every call: CAP_SYS_MODULE dropped after connecting is "
           "refused, taken back loads", case_same_connection)
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
        for d in ("/etc/udev/rules.d", "/run/udev/rules.d"):
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
            # A rules file written while the daemon runs (modgate-udev-rules' copy of a package's rule
            # that called the kmod builtin) counts at the next request, and no longer once it is gone.
            rules = "/run/udev/rules.d/81-vendor.rules"
            with open(rules, "w") as f:
                f.write('# Generated by modgate-udev-rules from /usr/lib/udev/rules.d/81-vendor.rules.\n'
                        'SUBSYSTEM=="%s", RUN+="/usr/libexec/modgate/modgate-udev %s"\n' % (subsystem, MODULE))
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert [(m["name"], m["outcome"]) for m in r["parameters"]["modules"]] == [(MODULE, "loaded")], r
            os.unlink(rules)
            h.reset_sys_module()
            r = h.call_as(udevd, d2.address, "io.modgate.Manager.Load", {"name": MODULE, "context": ctx})
            assert r.get("error") == "io.modgate.Manager.PermissionDenied", r
            # The administrator's file masks it by name: /etc hides /run.
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
           "claims none; rules are read as they are at the request", case_rule_names)
    t.case("the daemon exits cleanly on SIGTERM", lambda: h.assert_clean_exit(*daemons))

    journal.stop()
    if t.failed:
        h.dump_stderr(daemons, 20)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
