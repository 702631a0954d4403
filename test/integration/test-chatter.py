#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Decisions are never lost to chatter. 20,000 requests that match no module and one real load in
the same window, read back from a real journald whose rate limit that many records would exceed: the load's record is
there, each key that matched nothing was journaled at most once, the rest were counted, and the
counts come back as summary records, also at exit. The same for a module asked for again and again
once it is loaded."""

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
FIRST_PER_WINDOW = 64           # CHATTER_FIRST_PER_WINDOW
JOURNALD_BURST = 1000


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
        assert len(keys) == len(set(keys)) and REPEATED_KEY in keys, keys[:10]
        # A window is a minute: a slow run may span more than one, each with room for new keys.
        windows = 1 + len([r for r in journal.records(MESSAGE_ID=SUMMARY_ID, _PID=pid)
                           if r["MODGATE_OUTCOME"] == "not_found"])
        assert len(not_found) <= FIRST_PER_WINDOW * windows, (len(not_found), windows)
        present = journal.records(MESSAGE_ID=PRESENT_ID, _PID=pid, MODGATE_MODULE=MODULE)
        assert len(present) == 1, present
        counts["not_found"] = FLOOD - len(not_found)
        counts["already_loaded"] = AGAIN - len(present)
        print("# journaled %d of %d not-found answers and %d of %d already-loaded ones" % (
            len(not_found), FLOOD, len(present), AGAIN), flush=True)

    def case_summary_at_exit():
        h.assert_clean_exit(d)
        rec = journal.records(MESSAGE_ID=SUMMARY_ID, _PID=pid)
        total = {}
        for r in rec:
            total[r["MODGATE_OUTCOME"]] = total.get(r["MODGATE_OUTCOME"], 0) + int(r["MODGATE_COUNT"])
        assert total == counts, (total, counts, rec)
        first = [r for r in rec if r["MODGATE_OUTCOME"] == "not_found"][0]
        assert first["MODGATE_TOP"].startswith(REPEATED_KEY + "="), first
        if len(rec) == 2:
            assert first["MODGATE_TOP"].startswith("%s=%d " % (REPEATED_KEY, FLOOD // 2 - 1)), first
            present = [r for r in rec if r["MODGATE_OUTCOME"] == "already_loaded"][0]
            assert present["MODGATE_TOP"] == "%s=%d" % (MODULE, AGAIN - 1), present
        print("# %s" % first["MESSAGE"], flush=True)

    t.case("the start is recorded with the version, the policy digest, the mode and the module tree",
           case_started)
    t.case("20,000 unmatched requests and a real load in the same window: the load's record is there, each "
           "key journaled once at most", case_flood)
    t.case("what was counted is summarized when the daemon exits", case_summary_at_exit)
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
