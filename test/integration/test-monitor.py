#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Monitor streams what happens as it happens, in order: a request, each module started, each one
loaded once the kernel has it live (the shim's finit_module has returned before the event is read),
denials, unloads, refused callers, loads by others, reloads; a filtered monitor sees only its
modules. Status reports the daemon's state, and its counters equal what the test did."""

import json
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
DEP_MODULE = "vxlan"            # needs udp_tunnel and ip6_udp_tunnel
ALONE = "eql"
OTHER = "dummy"
BEHIND = "veth"                 # appears in /sys/module as insmod would make it
NO_CAP = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]


class Monitor(h.AsyncVarlink):
    """A Monitor call: the first reply is ready, then one reply per event, each with continues."""

    def __init__(self, address, parameters=None):
        super().__init__(address)
        self.sock.sendall(json.dumps({"method": M + "Monitor", "parameters": parameters or {},
                                      "more": True}).encode() + b"\0")
        first = self.receive()
        assert first.get("continues") is True and first["parameters"]["event"]["type"] == "ready", first

    def receive(self, timeout=30):
        self.sock.settimeout(timeout)
        return super().receive()

    def events(self, until, timeout=30):
        """Events, each with the CLOCK_MONOTONIC ns of its arrival, up to the first for which until()
        is true."""
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.receive(max(0.1, deadline - time.monotonic()))
            assert "error" not in r and r.get("continues") is True, r
            e = r["parameters"]["event"]
            e["_arrived"] = time.monotonic_ns()
            out.append(e)
            if until(e):
                return out
        raise AssertionError("no matching event within %ss; got %s" % (timeout, out))

    def nothing_within(self, seconds):
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return True
        self.buf += chunk
        return False


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    deps = h.parse_modules_dep(tree)
    work = tempfile.mkdtemp(prefix="modgate-monitor-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    d = h.Daemon(work, "monitor", root, extra_env={"MODGATE_SHIM_DELAY_MS": "300"}, args=("--workers=2",))
    assert d.activate(), d.stderr_text()
    mods = {}

    def case_load_in_order():
        mon = Monitor(d.address)
        h.ok(d.load(DEP_MODULE))
        ev = mon.events(lambda e: e["type"] == "loaded" and e.get("module") == DEP_MODULE)
        mon.close()
        kinds = [(e["type"], e.get("module")) for e in ev]
        assert kinds[0] == ("request", DEP_MODULE), kinds
        assert ev[0]["request"] == DEP_MODULE and ev[0]["method"] == "Load" and ev[0]["source"] == "admin", ev[0]
        assert ev[0]["peerPid"] == os.getpid() and ev[0]["peerUid"] == 0, ev[0]
        finit = {r["name"]: r for r in h.finit_records(d.shim_records())}
        names = [m for k, m in kinds if k == "loaded"]
        assert set(names) == set(finit), (names, finit.keys())
        for name in names:
            started = kinds.index(("started", name))
            loaded = kinds.index(("loaded", name))
            assert started < loaded, kinds
            e = ev[loaded]
            # Sent once the kernel had it live: the shim's finit_module had returned.
            assert finit[name]["result"] == 0 and finit[name]["end"] <= e["_arrived"], (finit[name], e)
            assert e["record"]["outcome"] == "loaded" and e["record"]["module"] == name, e
            # Sent when finit_module() returned; under this root's manifest evidence the file's .modinfo
            # (its alias and signer) is read after that, and Describe has the entry with it.
            described = h.ok(d.call(M + "Describe", {"name": name}))["module"]
            assert e["record"].get("modinfoPending") is True and "modinfoPending" not in described, (e, described)
            assert described["signer"] and described["signatureKey"], described
            modinfo = ("alias", "signer", "signatureKey", "modinfoPending")
            assert ({k: v for k, v in e["record"].items() if k not in modinfo} ==
                    {k: v for k, v in described.items() if k not in modinfo}), (e, described)
            assert ev[started]["path"] == e["record"]["path"] and ev[started]["role"] == e["record"]["role"]
            mods[name] = e["record"]
        # Dependencies are loaded before what needs them is started.
        assert sorted(deps[DEP_MODULE][1]) == ["ip6_udp_tunnel", "udp_tunnel"], deps[DEP_MODULE]
        for dep in deps[DEP_MODULE][1]:
            assert kinds.index(("loaded", dep)) < kinds.index(("started", DEP_MODULE)), kinds

    def case_filtered():
        mon = Monitor(d.address, {"modules": [OTHER]})
        h.ok(d.load(ALONE))
        assert mon.nothing_within(1.0), "a monitor of %s was sent %s's events: %r" % (OTHER, ALONE, mon.buf)
        h.ok(d.load(OTHER))
        ev = mon.events(lambda e: e["type"] == "loaded")
        assert [(e["type"], e["module"]) for e in ev] == [("request", OTHER), ("started", OTHER),
                                                           ("loaded", OTHER)], ev
        mon.close()

    def case_decisions():
        mon = Monitor(d.address)
        h.ok(d.call(M + "Unload", {"name": OTHER}))
        r = h.call_as(NO_CAP, d.address, M + "Load", {"name": "nlmon"})
        assert r.get("error") == M + "PermissionDenied", r
        h.set_module_state(BEHIND, "live")
        h.ok(d.load(BEHIND))
        h.ok(d.call(M + "Reload"))
        ev = mon.events(lambda e: e["type"] == "reloaded")
        mon.close()
        kinds = [(e["type"], e.get("module")) for e in ev]
        assert kinds == [("request", OTHER), ("unloaded", OTHER), ("refused_caller", None),
                         ("request", BEHIND), ("loaded_outside", BEHIND), ("reloaded", None)], kinds
        assert ev[1]["record"]["outcome"] == "unloaded", ev[1]
        assert ev[2]["method"] == "Load" and "CAP_SYS_MODULE" in ev[2]["reason"] and ev[2]["peerPid"] > 0, ev[2]
        assert ev[4]["record"]["reason"] == "found loaded when asked for", ev[4]
        status = h.ok(d.call(M + "Status"))
        assert ev[5]["policyDigest"] == status["policyDigest"], (ev[5], status)

    def case_bad_calls():
        c = h.Varlink(d.address)
        r = c.call(M + "Monitor")
        assert r.get("error") == "org.varlink.service.ExpectedMore", r
        c.close()
        c = h.AsyncVarlink(d.address)
        c.sock.sendall(json.dumps({"method": M + "Monitor", "parameters": {"modules": ["../x"]},
                                   "more": True}).encode() + b"\0")
        r = c.receive()
        c.close()
        assert r.get("error") == M + "InvalidName" and r["parameters"]["name"] == "../x", r
        # "modules": null is declared nullable: every module, as when it is not given.
        Monitor(d.address, {"modules": None}).close()

    def case_refused_reader():
        os.chmod(d.address, 0o666)
        p = ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]
        r = h.call_as(p, d.address, M + "Status")
        assert r.get("error") == M + "PermissionDenied", r

    def case_status():
        before = h.ok(d.call(M + "Status"))
        c0 = before["counters"]
        loads0 = len([r for r in h.finit_records(d.shim_records()) if r["result"] == 0])
        assert before["version"] and before["mode"] == "enforce" and len(before["policyDigest"]) == 64, before
        assert before["sealed"] is False and "modules_disabled" in before["enforcement"], before
        assert before["workers"] == 2 and before["busyWorkers"] == 0 and before["queuedJobs"] == 0, before
        [rt] = before["roots"]
        assert rt["path"] == root and rt["state"] == "pinned" and "manifest" in rt["evidence"], rt
        st = os.stat(root)
        assert rt["identity"].startswith("dev=%d:%d " % (os.major(st.st_dev), os.minor(st.st_dev))), rt
        with open(h.MANIFESTS[root]) as f:
            listed = [line for line in f if not line.startswith("#")]
        assert rt["manifestEntries"] == len(listed) > 1000, (rt, len(listed))
        assert before["latency"]["samples"] == c0["requests"] - c0["notFound"], before
        # One load held in its init while Status is asked: busy, pending, queued.
        slow = h.AsyncVarlink(d.address)
        slow.send(M + "Load", {"name": "macvlan"})
        time.sleep(0.15)
        during = h.ok(d.call(M + "Status"))
        assert during["busyWorkers"] >= 1 and during["pendingRequests"] == 1, during
        assert during["connections"] >= 2, during
        h.ok(slow.receive())
        slow.close()
        # Three at once for one module: one load, two joined it; one that matches nothing.
        released, results = h.call_many(d.address, [(M + "Load", {"name": "ipvlan"})] * 3)
        for reply, _, _ in results:
            h.ok(reply)
        assert d.call(M + "Load", {"name": "no-such-module-x"}).get("error") == M + "ModuleNotFound"
        after = h.ok(d.call(M + "Status"))
        c1 = after["counters"]
        delta = {k: c1[k] - c0[k] for k in c0}
        assert delta["requests"] == 5 and delta["notFound"] == 1, delta
        # macvlan and ipvlan need nothing else (modules.dep): two loads, and the ipvlan job joined twice.
        assert deps["macvlan"][1] == [] and deps["ipvlan"][1] == [], (deps["macvlan"], deps["ipvlan"])
        loads = len([r for r in h.finit_records(d.shim_records()) if r["result"] == 0])
        assert delta["loads"] == loads - loads0 == 2, (delta, loads, loads0)
        assert delta["coalesced"] == 2 and delta["failed"] == 0 and delta["denied"] == 0, delta
        assert after["latency"]["samples"] == before["latency"]["samples"] + 4, after
        lat = after["latency"]
        assert 0 < lat["p50USec"] <= lat["p90USec"] <= lat["p99USec"] <= lat["maxUSec"], lat
        # The held load took the shim's 300 ms at least.
        assert lat["maxUSec"] >= 300000, lat
        assert after["uptimeUSec"] > before["uptimeUSec"], after

    def case_monitor_gone():
        mons = [Monitor(d.address) for _ in range(3)]
        n = h.ok(d.call(M + "Status"))["connections"]
        for m in mons:
            m.close()
        deadline = time.monotonic() + 5
        while h.ok(d.call(M + "Status"))["connections"] > n - 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert h.ok(d.call(M + "Status"))["connections"] == n - 3
        h.ok(d.load("nlmon"))       # sending to nobody is no failure

    try:
        t.case("a Load's events arrive in order: the request, each module started, then loaded once live, "
               "dependencies first; each loaded event carries the module's record", case_load_in_order)
        t.case("a monitor of one module is sent only that module's events", case_filtered)
        t.case("unloads, refused callers, loads by others and reloads are events", case_decisions,
               needs=(case_filtered,))
        t.case("Monitor without more, and with an invalid module name, is refused; modules null is all",
               case_bad_calls)
        t.case("Status and Monitor are for root and ReadGroup= only", case_refused_reader)
        t.case("Status: version, mode, policy, roots with their identity, workers, and counters and latency that "
               "match what was asked", case_status, needs=(case_load_in_order,))
        t.case("a monitor that hangs up is forgotten", case_monitor_gone)
        t.case("the daemon exits cleanly", lambda: h.assert_clean_exit(d), always=True)
        t.run()
    finally:
        if t.failed:
            h.dump_stderr([d])
        journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
