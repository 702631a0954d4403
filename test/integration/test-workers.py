#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Never stuck behind a blocked worker: a module whose init asks for another module and waits for
it (as request_module() from an init does) is served with Workers=1, once every worker has been
inside a load for the stall bound, instead of waiting for the caller's timeout; a LoadAlone= module
that waits for the others to finish never holds up the requests behind it; and EEXIST from
finit_module() is "already loaded" only when the kernel has the module live."""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
STUCK_S = 2.0                   # scheduler.c's STUCK_USEC
OUTER, INNER = "eql", "dummy"
ALONE = "nlmon"
EEXIST = 17


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-workers-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    daemons = []

    def daemon(name, env=None, args=()):
        address = "/run/modgate/%s.sock" % name
        env = dict(env or {}, MODGATE_SHIM_VARLINK=address)
        d = h.Daemon(work, name, root, extra_env=env, args=args)
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        return d

    def case_nested_one_worker():
        h.reset_sys_module()
        d = daemon("nested", env={"MODGATE_SHIM_NESTED": "%s:%s" % (OUTER, INNER)}, args=("--workers=1",))
        begin = time.monotonic()
        r = h.ok(d.load(OUTER))
        took = time.monotonic() - begin
        assert [(m["name"], m["outcome"]) for m in r["modules"]] == [(OUTER, "loaded")], r
        [nested] = [x for x in d.shim_records() if x["call"] == "nested_request"]
        assert nested["name"] == OUTER and nested["params"] == INNER and nested["result"] == 0, nested
        waited = (nested["end"] - nested["start"]) / 1e9
        # Served once the one worker had been stuck for the bound; never the 60 s the shim allows.
        assert STUCK_S - 0.2 <= waited < STUCK_S + 5, waited
        assert took < STUCK_S + 6, took
        assert h.module_state(INNER) == "live" and h.module_state(OUTER) == "live"
        assert "adding a worker (1 beyond Workers=)" in d.stderr_text(), d.stderr_text()[-2000:]
        finit = {x["name"]: x for x in h.finit_records(d.shim_records())}
        # The inner load ran while the outer was still inside its init.
        assert finit[OUTER]["start"] < finit[INNER]["start"] < finit[INNER]["end"] <= finit[OUTER]["end"], finit
        print("# the nested request waited %.2f s with Workers=1" % waited, flush=True)

    def case_alone_does_not_block():
        h.reset_sys_module()
        d = daemon("alone", env={"MODGATE_SHIM_DELAY_MS": "600"}, args=("--workers=2", "--load-alone=" + ALONE))
        first = h.AsyncVarlink(d.address)
        first.send(M + "Load", {"name": OUTER})
        deadline = time.monotonic() + 10
        while h.module_state(OUTER) != "coming" and time.monotonic() < deadline:
            time.sleep(0.01)
        alone = h.AsyncVarlink(d.address)
        alone.send(M + "Load", {"name": ALONE})
        time.sleep(0.1)
        behind = h.AsyncVarlink(d.address)
        behind.send(M + "Load", {"name": INNER})
        for c in (first, alone, behind):
            h.ok(c.receive())
            c.close()
        f = {x["name"]: x for x in h.finit_records(d.shim_records())}
        # The request behind the waiting LoadAlone= module ran beside the first; the LoadAlone=
        # module ran with nothing else.
        assert f[INNER]["start"] < f[OUTER]["end"], f
        assert f[ALONE]["start"] >= max(f[OUTER]["end"], f[INNER]["end"]), f

    def case_eexist_not_live():
        # A finit_module() that says EEXIST while the module is not live is a failure, with the
        # reason; one that is live is "already loaded".
        h.reset_sys_module()
        d = daemon("eexist", env={"MODGATE_SHIM_FAIL": "%s:%d" % (INNER, EEXIST)})
        p = h.error_of(d.load(INNER), "LoadFailed")
        assert p["module"] == INNER and p["errnoName"] == "EEXIST" and "not live" in p["reason"], p
        assert h.module_state(INNER) is None or h.module_state(INNER) != "live"
        h.set_module_state(INNER, "live")
        r = h.ok(d.load(INNER))
        assert [m["outcome"] for m in r["modules"]] == ["already_loaded"], r

    deps = h.parse_modules_dep(tree)
    soft = h.parse_modules_softdep(tree)

    def closure(n):
        out = {n}
        for d in deps[n][1]:
            out |= closure(d)
        return out

    # A module two dependencies deep, with nothing softdep'd on the way.
    chain = next(n for n in sorted(deps) if deps[n][0].startswith("kernel/drivers/")
                 and any(deps[d][1] for d in deps[n][1]) and not closure(n) & soft and len(closure(n)) <= 6)

    def case_kernel_dependency_wait():
        # The shim as the kernel's resolve_symbol_wait(): a finit_module() waits for the modules it
        # needs while they are coming, and fails with ENOENT when one is absent. modgated's order,
        # with files checked while their dependencies load, never makes such a call.
        h.reset_sys_module()
        deps_file = os.path.join(work, "modules.deps")
        with open(deps_file, "w") as f:
            for n, (_, d) in sorted(deps.items()):
                f.write("%s: %s\n" % (n, " ".join(d)))
        d = daemon("kdeps", env={"MODGATE_SHIM_DEPS": deps_file, "MODGATE_SHIM_DELAY_MS": "300"})
        c = h.AsyncVarlink(d.address)
        c.send(M + "Load", {"name": chain})
        # What waits for its dependencies has its file checked meanwhile.
        h.wait_for("a check ahead", lambda: h.ok(d.call(M + "Status"))["checkedAheadJobs"] >= 1)
        r = h.ok(c.receive())
        c.close()
        assert {m["name"] for m in r["modules"]} == closure(chain), r
        assert all(m["outcome"] == "loaded" for m in r["modules"]), r
        finit = h.finit_records(d.shim_records())
        assert sorted(x["name"] for x in finit) == sorted(closure(chain)), finit
        assert all(x["result"] == 0 for x in finit), finit
        ends = {x["name"]: x["end"] for x in finit}
        for x in finit:
            assert all(ends[dep] <= x["start"] for dep in deps[x["name"]][1]), (x, ends)
        # A dependency the kernel wants that the index does not know (a module built against another
        # tree): the load fails as the kernel's does, with ENOENT, after what the index knows loaded.
        h.reset_sys_module()
        with open(deps_file, "a") as f:
            f.write("%s: %s no_such_module\n" % (chain, " ".join(deps[chain][1])))
        with open(deps_file) as f:
            lines = [line for line in f if not (line.startswith(chain + ":") and "no_such_module" not in line)]
        with open(deps_file, "w") as f:
            f.writelines(lines)
        p = h.error_of(d.load(chain), "LoadFailed")
        assert p["module"] == chain and p["errnoName"] == "ENOENT", p
        assert {m["name"]: m["outcome"] for m in p["modules"]} == dict(
            {n: "loaded" for n in closure(chain) - {chain}}, **{chain: "failed"}), p
        print("# %s and its %d dependencies loaded in dependency order, no call failed" % (chain, len(closure(chain)) - 1),
              flush=True)

    try:
        t.case("a module's init that asks for another is served with Workers=1 once the worker has been stuck "
               "for the bound", case_nested_one_worker)
        t.case("a LoadAlone= module waiting for the others never holds up the requests behind it",
               case_alone_does_not_block)
        t.case("EEXIST is already loaded only when the module is live", case_eexist_not_live)
        t.case("with the kernel's wait for dependencies in the shim, a module two deep loads in order with no "
               "failed call", case_kernel_dependency_wait)
        t.case("every daemon exits cleanly", lambda: h.assert_clean_exit(*daemons), always=True)
        t.run()
    finally:
        if t.failed:
            h.dump_stderr(daemons)
        journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
