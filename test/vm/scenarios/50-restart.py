# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgated killed in the middle of a load: the socket starts it again for the next request, and
no module is loaded twice."""

import time

import guest

MODULE = "btrfs"        # its dependency raid6_pq benchmarks for a while in its init


def test_killed_during_load(vm):
    """SIGKILL to modgated.service while it loads a module"""
    _, deps = guest.dependencies(vm, MODULE)
    live = guest.live_modules(vm)
    new = [m for m in deps + [MODULE] if live[m] == 0]
    assert MODULE in new and len(new) > 1, "loaded before the test: %s" % live
    pattern = "|".join(new)
    out = vm.sh("""
        varlinkctl call %(sock)s io.modgate.Manager.Load '{"name":"%(mod)s"}' >/tmp/first.out 2>&1 &
        first=$!
        # Until the first new module shows up in /proc/modules (it does while its init runs).
        for i in $(seq 250); do grep -qE '^(%(pattern)s) ' /proc/modules && break; sleep 0.02; done
        systemctl show -P MainPID modgated.service
        grep -E '^(%(pattern)s) ' /proc/modules | cut -d' ' -f1,5 | tr '\\n' ' '; echo
        cut -d' ' -f1 /proc/uptime
        systemctl kill -s KILL modgated.service
        wait $first
        echo "first call: exit $?"
        """ % {"sock": guest.SOCKET, "mod": MODULE, "pattern": pattern}).out.splitlines()
    vm.killed_pid = out[0]
    present = parse_states(out[1])
    killed_at = int(float(out[2]) * 1e6)
    vm.present_at_kill = present
    print("# killed pid %s with these in /proc/modules: %s" % (out[0], out[1]))
    assert out[0] != "0", "modgated.service was not running during the load"
    # systemd's record of that very process's end (the unit's Result is no witness: a queued
    # request may start it again at once, and an idle exit later resets it).
    deadline = time.monotonic() + 60
    while not [e for e in vm.journal("UNIT=modgated.service", "EXIT_CODE=killed", "EXIT_STATUS=9")
               if e.get("MESSAGE", "").startswith("modgated.service: Main process exited")
               and int(e.get("__MONOTONIC_TIMESTAMP", 0)) >= killed_at]:
        assert time.monotonic() < deadline, "no record that pid %s was killed" % out[0]
        time.sleep(1)
    # The kill landed during the load: the request was never answered, and the requested module
    # was not yet live in the kernel when the signal was sent.
    assert out[3] != "first call: exit 0", "the Load finished before the kill: %s" % vm.sh("cat /tmp/first.out").out
    assert present, "no module of the load was in /proc/modules at the kill"
    assert present.get(MODULE) != "Live", "the requested module was already live at the kill: %s" % present


def parse_states(line):
    """{name: state} from "name state name state ..." (the 1st and 5th columns of /proc/modules)."""
    words = line.split()
    return dict(zip(words[0::2], words[1::2]))


def test_reactivated(vm):
    """the next request starts modgated again through the socket and is served"""
    assert vm.sh("systemctl is-active modgated.socket").out.strip() == "active"
    reply, error = guest.load(vm, MODULE)
    assert error is None, (error, reply)
    assert all(m["outcome"] in ("loaded", "already_loaded") for m in reply["modules"]), reply
    vm.reactivated_outcomes = {m["name"]: m["outcome"] for m in reply["modules"]}
    pid = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    assert pid not in ("0", getattr(vm, "killed_pid", "0")), pid
    assert guest.initstate(vm, MODULE) == "live"


def test_no_module_twice(vm):
    """no module is loaded twice: what was in the kernel at the kill is not loaded again"""
    present = getattr(vm, "present_at_kill", None)
    assert present, "the kill did not happen during a load (see the first case)"
    outcomes = getattr(vm, "reactivated_outcomes", None)
    assert outcomes, "the new instance did not answer (see the case before)"
    # The new instance found every module of the killed load in the kernel: none is loaded anew.
    assert all(outcomes.get(m) == "already_loaded" for m in present), (present, outcomes)
    # And the journal holds at most one loaded record per module over both instances.
    _, deps = guest.dependencies(vm, MODULE)
    for m in deps + [MODULE]:
        n = len(guest.records(vm, m, "loaded"))
        assert n <= 1, "%s has %d loaded records" % (m, n)
    new_pid = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    for m in present:
        recs = [r for r in guest.records(vm, m, "loaded") if r.get("_PID") == new_pid]
        assert not recs, "%s, in the kernel at the kill, was loaded again by pid %s" % (m, new_pid)
