#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every module in the kernel accounted for: this boot's history, kept in the service's file descriptor
store (never in the runtime directory, which a root process without CAP_SYS_MODULE can write),
survives a restart and an idle exit, List and Describe answer from it, a module that someone else loaded (before
the daemon started, or while it ran) is recorded as loaded outside modgate with its taint, one that
someone else unloaded while no daemon ran is recorded as such, and a torn last line after a crash is
skipped. A module refused after it was loaded (a Deny= added since) stays loaded in the history, so the
next start does not take it for a module loaded by someone else. Every request that joined a load is
in its record and its entry."""

import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
OUTSIDE_ID = "768173c3df9f4d60887b5916985cefb3"
GONE_ID = "50f3e70422fa4192b532eb77cc65998a"
ROOT_PINNED_ID = "283c442698e34f96a0fb27a1446e33af"
ROOT_CHANGED_ID = "6612a8c94965478dbfa239919e1ab334"
EARLY = "psmouse"               # "loaded by the initrd": in the kernel before the first daemon
LOADED = "eql"
KEPT = "nlmon"                  # loaded by modgate, then removed while no daemon runs
BEHIND = "veth"                 # appears while a daemon runs, as insmod would make it
DENIED_LATER = "ifb"            # loaded, then denied by the next start's policy
JOINED = "dummy"                # asked for by three units while its finit_module() is slow
LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
READ_AFTER = "tun"              # loaded while SLOW waits for the one worker, then its .modinfo behind it
SLOW = "macvlan"                # whose init holds that worker longer than a Describe waits


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-history-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module(live=(EARLY,))
    with open("/sys/module/%s/taint" % EARLY, "w") as f:
        f.write("E\n")
    runtime = os.path.join(work, "runtime")
    os.makedirs(runtime, mode=0o700)
    store = h.FdStore()
    journal = h.Journal()
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    env = {"RUNTIME_DIRECTORY": runtime}
    daemons = []

    def start(name, args=(), store=store):
        d = h.Daemon(work, name, root, extra_env=env, args=args, store=store)
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        return d

    def describe(d, name):
        r = d.call(M + "Describe", {"name": name})
        assert "error" not in r, r
        return r["parameters"]["module"]

    def listed(d):
        return {e["module"]: e for e in h.ok(d.call(M + "List"))["modules"]}

    first = start("first")

    def case_outside_at_start():
        rec = journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(first.pid))
        assert [(r["MODGATE_MODULE"], r.get("MODGATE_TAINT")) for r in rec] == [(EARLY, "E")], rec
        e = describe(first, EARLY)
        assert e["outcome"] == "loaded_outside" and e["taint"] == "E", e
        assert "when modgated started" in e["reason"], e

    def case_loaded():
        before = time.time()
        assert [m["outcome"] for m in h.ok(first.call(M + "Load", {"name": LOADED}))["modules"]] == ["loaded"]
        assert [m["outcome"] for m in h.ok(first.call(M + "Load", {"name": KEPT}))["modules"]] == ["loaded"]
        e = describe(first, LOADED)
        assert e["outcome"] == "loaded" and e["source"] == "admin" and e["peerUid"] == 0, e
        assert e["peerPid"] > 0 and e["path"].endswith("/eql.ko.xz") and e["evidence"] == "manifest", e
        signer = h.run("modinfo", "-F", "signer", e["path"], capture_output=True, text=True).stdout.strip()
        assert signer and e["signer"] == signer and e["signatureKey"], (e, signer)
        with open(e["path"], "rb") as f:
            assert e["sha256"] == hashlib.sha256(f.read()).hexdigest(), e
        assert abs(e["time"] / 1e6 - before) < 30, e
        st = os.stat(e["path"])
        assert e["inode"] == st.st_ino and e["device"] == "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), e
        assert set(listed(first)) == {EARLY, LOADED, KEPT}, listed(first)
        r = first.call(M + "Describe", {"name": "dummy"})
        assert r.get("error") == M + "NoRecord" and r["parameters"]["module"] == "dummy", r

    def case_modalias():
        # The CPU's modalias lists every feature: over a kilobyte, as udev sends it.
        cpu = [a for a in h.machine_modaliases() if a.startswith("cpu:type:x86")]
        assert cpu and len(cpu[0]) > 500, cpu
        r = h.ok(first.call(M + "Load", {"modalias": cpu[0]}))
        loaded = [m["name"] for m in r["modules"] if m["outcome"] == "loaded"]
        assert loaded, r
        l = listed(first)
        for name in loaded:
            assert l.get(name, {}).get("outcome") == "loaded" and l[name]["modalias"] == cpu[0], (name, l.get(name))

    def case_unload():
        h.ok(first.call(M + "Unload", {"name": LOADED}))
        assert describe(first, LOADED)["outcome"] == "unloaded"

    def case_behind():
        h.set_module_state(BEHIND, "live")
        r = h.ok(first.call(M + "Load", {"name": BEHIND}))
        assert [m["outcome"] for m in r["modules"]] == ["already_loaded"], r
        rec = journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(first.pid), MODGATE_MODULE=BEHIND)
        assert len(rec) == 1 and rec[0]["MODGATE_REASON"] == "found loaded when asked for", rec
        assert describe(first, BEHIND)["outcome"] == "loaded_outside"
        # Known now: asked again, it is not found twice.
        h.ok(first.call(M + "Load", {"name": BEHIND}))
        assert len(journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(first.pid), MODGATE_MODULE=BEHIND)) == 1

    def case_restart():
        h.assert_clean_exit(first)
        shutil.rmtree("/sys/module/" + KEPT)            # rmmod while no daemon runs
        assert store.count("history") == 1, store.names()
        fd = store.find("history")
        os.pwrite(fd, b'{"module":"torn","outc', os.fstat(fd).st_size)    # a write cut short by a crash
        second = start("second")
        assert "Skipped 1 entries of the history" in second.stderr_text(), second.stderr_text()
        assert journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(second.pid)) == [], \
            "a module the history knows was found again"
        gone = journal.records(MESSAGE_ID=GONE_ID, _PID=str(second.pid))
        assert [r["MODGATE_MODULE"] for r in gone] == [KEPT], gone
        l = listed(second)
        assert l[EARLY]["outcome"] == "loaded_outside" and l[LOADED]["outcome"] == "unloaded", l
        assert l[KEPT]["outcome"] == "unloaded_outside" and l[BEHIND]["outcome"] == "loaded_outside", l
        assert "torn" not in l, l
        h.assert_clean_exit(second)

    def case_idle_exit():
        third = start("third", args=("--idle-exit-sec=1",))
        deadline = time.monotonic() + 20
        while third.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert third.proc.poll() is not None, "no idle exit"
        assert third.proc.returncode == 0, third.stderr_text()
        fourth = start("fourth")
        assert listed(fourth)[KEPT]["outcome"] == "unloaded_outside"
        assert journal.records(MESSAGE_ID=GONE_ID, _PID=str(fourth.pid)) == []

    def case_forged_runtime():
        # What a root process without CAP_SYS_MODULE can write: /run/modgated. A history there that says
        # a module was loaded by modgate, and a record of the trusted root that is not the root's.
        d = daemons[-1]
        h.assert_clean_exit(d)
        with open(os.path.join(runtime, "history"), "w") as f:
            f.write('{"module":"forged","outcome":"loaded","source":"admin"}\n'
                    '{"module":"%s","outcome":"loaded","source":"admin","peerUid":0}\n' % EARLY)
        with open(os.path.join(runtime, "trusted-roots"), "w") as f:
            f.write("%s\tdev=1:1 diskseq=1 fstype=erofs\n" % root)
        d = start("forged")
        l = listed(d)
        assert "forged" not in l and l[EARLY]["outcome"] == "loaded_outside", l
        pinned = journal.records(MESSAGE_ID=ROOT_PINNED_ID, _PID=str(d.pid))
        assert [r.get("MODGATE_ROOT_RECORDED") for r in pinned] == [pinned[0]["MODGATE_ROOT_IDENTITY"]], pinned
        assert journal.records(MESSAGE_ID=ROOT_CHANGED_ID, _PID=str(d.pid)) == []
        assert [m["outcome"] for m in h.ok(d.call(M + "Load", {"name": LOADED}))["modules"]] == ["loaded"]

    def case_no_store():
        # Without a store nothing is kept, and the daemon says so once; it reads no file instead.
        d = start("nostore", store=None)
        text = d.stderr_text()
        assert text.count("No file descriptor store (FileDescriptorStoreMax=)") == 1, text
        l = listed(d)
        assert "forged" not in l and l[EARLY]["outcome"] == "loaded_outside", l
        assert LOADED not in l or l[LOADED].get("peerPid") is None, l
        h.assert_clean_exit(d)
        daemons.remove(d)

    def case_readers():
        d = daemons[-1]
        os.chmod(d.address, 0o666)
        r = h.call_as(["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"], d.address, M + "List")
        assert r.get("error") == M + "PermissionDenied", r
        r = h.call_as(["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"], d.address, M + "Describe",
                      {"name": EARLY})
        assert "error" not in r and r["parameters"]["module"]["module"] == EARLY, r

    t.case("a module in the kernel before the first daemon is recorded as loaded outside, with its taint",
           case_outside_at_start)
    t.case("List and Describe give each load's record: source, verified caller, file, evidence", case_loaded)
    t.case("a load by a long modalias is listed", case_modalias)
    t.case("an unload replaces the module's record", case_unload, needs=(case_loaded,))
    t.case("a module that appears while the daemon runs is recorded as loaded outside when asked for",
           case_behind)
    t.case("the history survives a restart; a module removed meanwhile is recorded as unloaded outside; a torn "
           "line is skipped", case_restart, needs=(case_unload, case_behind))
    t.case("and an idle exit, without recording anything twice", case_idle_exit, needs=(case_restart,))
    t.case("List and Describe are for root (any capabilities) and ReadGroup= only", case_readers)
    def case_denied_after_load():
        d = daemons[-1]
        assert [m["outcome"] for m in h.ok(d.call(M + "Load", {"name": DENIED_LATER}))["modules"]] == ["loaded"]
        h.assert_clean_exit(d)
        h.mount_file_over("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro module_blacklist=%s\n" % DENIED_LATER, work)
        fifth = start("fifth")
        r = fifth.call(M + "Load", {"name": DENIED_LATER})
        assert r.get("error") == M + "PolicyDenied", r
        e = describe(fifth, DENIED_LATER)
        assert e["outcome"] == "loaded" and e["source"] == "admin", e
        h.assert_clean_exit(fifth)
        sixth = start("sixth")
        rec = journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(sixth.pid))
        assert rec == [], "a module modgate loaded was taken for one loaded by someone else: %r" % rec
        assert describe(sixth, DENIED_LATER)["outcome"] == "loaded"

    t.case("a module denied after it was loaded stays loaded in the history; the next start finds nothing "
           "loaded outside", case_denied_after_load)
    def case_joined():
        h.assert_clean_exit(daemons[-1])
        d = h.Daemon(work, "joined", root, extra_env={**env, "MODGATE_SHIM_DELAY_MS": "1500"})
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        units = ["one.service", "two.service", "three.service"]
        procs = []
        for u in units:
            procs.append(h.call_as(h.in_unit(u), d.address, M + "Load", {"name": JOINED}, wait=False))
            time.sleep(0.2)     # in this order, each while the first's load is in flight
        for p in procs:
            r = h.call_as_result(p)
            assert [m["outcome"] for m in h.ok(r)["modules"]] == ["loaded"], r
        assert len(h.finit_records(d.shim_records(), {JOINED})) == 1, d.shim_records()
        rec = journal.records(MESSAGE_ID=LOADED_ID, _PID=str(d.pid), MODGATE_MODULE=JOINED)
        assert len(rec) == 1 and rec[0]["MODGATE_REQUESTERS"] == "3", rec
        joined = rec[0]["MODGATE_JOINED"]
        assert isinstance(joined, list) and len(joined) == 2, rec
        assert rec[0]["MODGATE_PEER_UNIT"] == units[0], rec
        # The journal keeps a field's values in an order of its own: the history keeps theirs.
        assert all(j.startswith("source=admin request=%s pid=" % JOINED) for j in joined), joined
        assert sorted(j.rsplit(" uid=0 unit=", 1)[1] for j in joined) == sorted(units[1:]), joined
        e = describe(d, JOINED)
        assert e["requesters"] == 3 and e["peerUnit"] == units[0], e
        assert [x["peerUnit"] for x in e["joined"]] == units[1:], e
        assert all(x["requestName"] == JOINED and x["peerPid"] > 0 for x in e["joined"]), e
        print("# %s" % " | ".join(joined), flush=True)

    def case_describe_waits_for_modinfo():
        # Under manifest evidence a load is final when finit_module() returns: its entry is kept then,
        # and its file's .modinfo (alias, signer) is read after, by a worker that no load wants. With
        # one worker, READ_AFTER's read waits behind SLOW's load (ready first), whose init lasts longer
        # than a Describe waits (2 s): that Describe answers the entry as it is, pending, and one after
        # SLOW's load the whole entry; its journal record is written once, whole.
        h.assert_clean_exit(daemons[-1])
        delays = "0,%s:500,%s:10000" % (READ_AFTER, SLOW)
        d = h.Daemon(work, "read-after", root, extra_env={**env, "MODGATE_SHIM_DELAY_MS": delays},
                     args=("--workers=1",))
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        first = h.call_as([], d.address, M + "Load", {"name": READ_AFTER}, wait=False)
        time.sleep(0.2)         # READ_AFTER inside finit_module(), SLOW waiting for the worker
        slow = h.call_as([], d.address, M + "Load", {"name": SLOW}, wait=False)
        r = h.call_as_result(first)
        assert [m["outcome"] for m in h.ok(r)["modules"]] == ["loaded"], r
        s = h.ok(d.call(M + "Status"))
        assert s["unrecordedLoads"] == 1 and s["counters"]["namesFromPath"] == 1, s
        assert s["counters"]["namesFromModinfo"] == 0, s
        start_time = time.monotonic()
        e = describe(d, READ_AFTER)
        waited = time.monotonic() - start_time
        assert 1.8 <= waited < 3.5, waited
        assert e["outcome"] == "loaded" and e["modinfoPending"] is True and "signer" not in e, e
        assert h.ok(d.call(M + "Status"))["unrecordedLoads"] == 1
        out = h.run(os.environ["MODGATECTL"], "--address=" + d.address, "describe", READ_AFTER,
                    capture_output=True, text=True).stdout
        assert "      Signer: not known yet (the file's .modinfo is read after the load)\n" in out, out
        # At most DESCRIBE_WAITING_MAX (64) calls wait at once; one more is answered at once, pending.
        took = []

        def one():
            begin = time.monotonic()
            entry = describe(d, READ_AFTER)
            took.append((time.monotonic() - begin, entry.get("modinfoPending")))

        threads = [threading.Thread(target=one) for _ in range(65)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        quick = [t for t, _ in took if t < 1.0]
        assert len(took) == 65 and all(p is True for _, p in took), took
        assert len(quick) == 1 and all(t >= 1.8 for t, _ in took if t >= 1.0), sorted(t for t, _ in took)
        r = h.call_as_result(slow)
        assert [m["outcome"] for m in h.ok(r)["modules"]] == ["loaded"], r
        e2 = describe(d, READ_AFTER)
        assert "modinfoPending" not in e2 and e2["signer"] and e2["signatureKey"], e2
        assert e2["time"] == e["time"], (e, e2)
        rec = journal.records(MESSAGE_ID=LOADED_ID, _PID=str(d.pid), MODGATE_MODULE=READ_AFTER)
        assert len(rec) == 1 and rec[0]["MODGATE_SIGNER"] == e2["signer"], rec
        assert rec[0]["MODGATE_NAME_CHECK"] == "path" and rec[0]["MODGATE_FILE_MODULE"] == READ_AFTER, rec
        assert h.ok(d.call(M + "Status"))["unrecordedLoads"] == 0
        print("# Describe waited %.2f s, then answered modinfoPending" % waited, flush=True)

    t.case("every request that joined a load is in its record and its history entry", case_joined)
    t.case("a load is kept when finit_module() returns; Describe waits a bounded time for the .modinfo read "
           "after it, then answers it pending; the journal record is written once, whole",
           case_describe_waits_for_modinfo)
    t.case("a history and a root record forged in the runtime directory are not read", case_forged_runtime)
    t.case("without a file descriptor store nothing is kept across restarts, said once", case_no_store)
    t.case("every daemon exits cleanly", lambda: h.assert_clean_exit(*daemons[-1:]), always=True)
    t.run()
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
