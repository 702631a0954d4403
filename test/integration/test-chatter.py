#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Decisions are never lost to chatter. 20,000 requests that match no module and one real load in
the same window, read back from a real journald whose rate limit that many records would exceed: the load's record is
there, each key that matched nothing was journaled at most once a window, the rest were counted, and the
counts come back as summary records, also at exit. The same for a module asked for again and again
once it is loaded. And refusals: 20,000 Load calls refused to a root peer without CAP_SYS_MODULE in
one unit, then one refused to another unit: the other's refusal is a record of its own, the flood a
few first records and summaries whose counts add up to exactly the rest; the same for policy denials."""

import json
import subprocess

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
PRESENT_ID = "9804cc4e5ad548c785ff9f16da0c915f"
NOT_FOUND_ID = "e17a107dd17e44e68aa0f15806e59623"
SUMMARY_ID = "c8d1b1d2700740cfa317dadecaa59c5f"
STARTED_ID = "0b62bd3196754f93821022336e8ce9fa"
FLOOD = 20000
REPEATED_KEY = "net-pf-99"
MODULE = "eql"
AGAIN = 300
FIRST_PER_PEER = 32             # CHATTER_FIRST_PER_PEER
JOURNALD_BURST = 1000
REFUSALS_ID = "bb53ea26cd364226b2ce5d3c142f7111"
REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]
REFUSALS = 20000
FLOOD_KEYS = 5000
DENIED = "ifb"                  # module_blacklist= on the kernel command line: a policy denial
DENIALS = 5000
DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"

# Many Load calls over one connection, pipelined: a thread sends, the main one reads every reply.
FLOOD_CLIENT = r"""
import json, socket, sys, threading
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
n, keys, prefix = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def send():
    for i in range(n):
        name = prefix + ("%d" % (i % keys) if keys > 1 else "")
        s.sendall(json.dumps({"method": "io.modgate.Manager.Load", "parameters": {"name": name}}).encode() + b"\0")
threading.Thread(target=send, daemon=True).start()
buf, errors = b"", {}
for _ in range(n):
    while b"\0" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("closed")
        buf += chunk
    reply, _, buf = buf.partition(b"\0")
    e = json.loads(reply).get("error", "none")
    errors[e] = errors.get(e, 0) + 1
print(json.dumps(errors))
"""


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-chatter-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    # A journald that drops what comes after about 4,000 records in 30 s (the burst, scaled by free
    # space): 20,000 records journaled one by one would lose the load's.
    journal = h.Journal(rate_limit_burst=JOURNALD_BURST)
    h.mount_file_over("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro module_blacklist=%s\n" % DENIED, work)
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    # In a unit's cgroup: journald rate-limits per unit, and not at all what belongs to none.
    d = h.Daemon(work, "chatter", root, wrapper=h.in_unit("modgated.service"))
    assert d.activate(), d.stderr_text()
    pid = str(d.pid)
    counts = {}

    def case_started():
        rec = journal.records(MESSAGE_ID=STARTED_ID, _PID=pid)
        assert len(rec) == 1, rec
        assert len(rec[0]["MODGATE_POLICY_DIGEST"]) == 64 and rec[0]["MODGATE_MODE"] == "enforce", rec
        assert rec[0]["MODGATE_TREE"].startswith("dev=") and "fstype=erofs" in rec[0]["MODGATE_TREE"], rec
        assert rec[0]["MODGATE_VERSION"] and rec[0]["MODGATE_ENFORCEMENT"], rec

    def case_flood():
        c = h.Varlink(d.address)
        start = time.monotonic()
        try:
            for i in range(FLOOD):
                key = REPEATED_KEY if i % 2 else "nosuch-%d" % i
                r = c.call(M + "Load", {"name": key})
                assert r.get("error") == M + "ModuleNotFound", r
                if i == FLOOD // 2:
                    # The real load, in the middle of the flood.
                    assert [m["outcome"] for m in h.ok(c.call(M + "Load", {"name": MODULE}))["modules"]] == ["loaded"]
            for _ in range(AGAIN):
                assert [m["outcome"] for m in h.ok(c.call(M + "Load", {"name": MODULE}))["modules"]] == \
                    ["already_loaded"]
        finally:
            c.close()
        print("# %d requests in %.1f s" % (FLOOD + AGAIN + 1, time.monotonic() - start), flush=True)

        loaded = journal.records(MESSAGE_ID=LOADED_ID, _PID=pid, MODGATE_MODULE=MODULE)
        assert len(loaded) == 1, "the load's record is lost in the flood: %r" % loaded
        not_found = journal.records(MESSAGE_ID=NOT_FOUND_ID, _PID=pid)
        keys = [r.get("MODGATE_REQUEST_NAME") for r in not_found]
        # A window is a minute: a slow run may span more than one, each with room for new keys, and
        # each journaling a key's first again.
        windows = 1 + len([r for r in journal.records(MESSAGE_ID=SUMMARY_ID, _PID=pid)
                           if r["MODGATE_OUTCOME"] == "not_found"])
        assert keys.count(REPEATED_KEY) <= windows and REPEATED_KEY in keys, keys[:10]
        assert len(keys) - len(set(keys)) < windows, keys
        assert len(not_found) <= FIRST_PER_PEER * windows, (len(not_found), windows)
        present = journal.records(MESSAGE_ID=PRESENT_ID, _PID=pid, MODGATE_MODULE=MODULE)
        assert len(present) == 1, present
        counts["not_found"] = FLOOD - len(not_found)
        counts["already_loaded"] = AGAIN - len(present)
        print("# journaled %d of %d not-found answers and %d of %d already-loaded ones" % (
            len(not_found), FLOOD, len(present), AGAIN), flush=True)

    def case_summary_at_exit():
        h.assert_clean_exit(d)
        rec = journal.records(MESSAGE_ID=SUMMARY_ID, _PID=pid) + journal.records(MESSAGE_ID=REFUSALS_ID, _PID=pid)
        total = {}
        for r in rec:
            total[r["MODGATE_OUTCOME"]] = total.get(r["MODGATE_OUTCOME"], 0) + int(r["MODGATE_COUNT"])
        assert total == counts, (total, counts, rec)
        first = [r for r in rec if r["MODGATE_OUTCOME"] == "not_found"][0]
        assert first["MODGATE_TOP"].startswith("admin:%s=" % REPEATED_KEY), first
        if len([r for r in rec if r["MODGATE_OUTCOME"] == "not_found"]) == 1:
            assert first["MODGATE_TOP"].startswith("admin:%s=%d " % (REPEATED_KEY, FLOOD // 2 - 1)), first
            present = [r for r in rec if r["MODGATE_OUTCOME"] == "already_loaded"][0]
            assert present["MODGATE_TOP"] == "admin:%s=%d" % (MODULE, AGAIN - 1), present
        print("# %s" % first["MESSAGE"], flush=True)

    t.case("the start is recorded with the version, the policy digest, the mode and the module tree",
           case_started)
    t.case("20,000 unmatched requests and a real load in the same window: the load's record is there, each "
           "key journaled once at most", case_flood)
    def case_refusals():
        prefix = [*h.in_unit("flood.service"), *NO_SYS_MODULE]
        start = time.monotonic()
        out = subprocess.run([*prefix, sys.executable, "-c", FLOOD_CLIENT, d.address, str(REFUSALS),
                              str(FLOOD_KEYS), "flood"], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out
        assert json.loads(out.stdout) == {M + "PermissionDenied": REFUSALS}, out.stdout
        print("# %d refused Load calls in %.1f s" % (REFUSALS, time.monotonic() - start), flush=True)
        r = h.call_as([*h.in_unit("other.service"), *NO_SYS_MODULE], d.address, M + "Load", {"name": "other1"})
        assert r.get("error") == M + "PermissionDenied", r
        flood = journal.records(MESSAGE_ID=REFUSED_ID, _PID=pid, MODGATE_PEER_UNIT="flood.service")
        counts["refused_caller"] = REFUSALS - len(flood)
        assert 1 <= len(flood) <= FIRST_PER_PEER * 2, len(flood)
        other = journal.records(MESSAGE_ID=REFUSED_ID, _PID=pid, MODGATE_PEER_UNIT="other.service")
        assert len(other) == 1 and other[0]["MODGATE_REQUEST_NAME"] == "other1", other
        print("# journaled %d of %d refusals of flood.service" % (len(flood), REFUSALS), flush=True)

    def case_denials():
        out = subprocess.run([*h.in_unit("deny.service"), sys.executable, "-c", FLOOD_CLIENT, d.address,
                              str(DENIALS), "1", DENIED], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out
        assert json.loads(out.stdout) == {M + "PolicyDenied": DENIALS}, out.stdout
        rec = journal.records(MESSAGE_ID=DENIED_ID, _PID=pid, MODGATE_MODULE=DENIED)
        assert 1 <= len(rec) <= 2 and rec[0]["MODGATE_PEER_UNIT"] == "deny.service", rec
        assert rec[0]["MODGATE_VERDICT"] == "policy", rec
        counts["denied"] = DENIALS - len(rec)

    def case_refusals_summarized():
        rec = journal.records(MESSAGE_ID=REFUSALS_ID, _PID=pid, MODGATE_OUTCOME="refused_caller")
        assert all(r["MODGATE_PEER_UNIT"] == "flood.service" and r["PRIORITY"] == "4" for r in rec), rec
        assert sum(int(r["MODGATE_COUNT"]) for r in rec) == counts["refused_caller"], rec
        assert rec[0]["MODGATE_TOP"].startswith("Load:admin:flood"), rec[0]
        print("# %s" % rec[0]["MESSAGE"][:200], flush=True)
        rec = journal.records(MESSAGE_ID=REFUSALS_ID, _PID=pid, MODGATE_OUTCOME="denied")
        assert all(r["MODGATE_PEER_UNIT"] == "deny.service" for r in rec), rec
        assert sum(int(r["MODGATE_COUNT"]) for r in rec) == counts["denied"], rec
        assert all(r["MODGATE_TOP"] == "admin:%s=%s" % (DENIED, r["MODGATE_COUNT"]) for r in rec), rec

    t.case("20,000 Load calls refused to one unit, then one to another: the other's is a record of its own",
           case_refusals)
    t.case("5,000 Load calls of a module the policy denies: one record, the rest counted", case_denials)
    t.case("what was counted is summarized when the daemon exits", case_summary_at_exit,
           needs=(case_flood, case_refusals, case_denials))
    t.case("the refusals counted add up exactly, in summaries of their own for the flooding unit",
           case_refusals_summarized, needs=(case_summary_at_exit,))
    t.run()
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
