# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgated killed in the middle of a load: the socket starts it again for the next request, and
no module is loaded twice."""

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
        # Until the first new module shows up in /proc/modules (it does while its init runs).
        for i in $(seq 250); do grep -qE '^(%(pattern)s) ' /proc/modules && break; sleep 0.02; done
        systemctl show -P MainPID modgated.service
        grep -E '^(%(pattern)s) ' /proc/modules | cut -d' ' -f1,5 | tr '\\n' ' '; echo
        systemctl kill -s KILL modgated.service
        wait
        systemctl show -P Result modgated.service
        """ % {"sock": guest.SOCKET, "mod": MODULE, "pattern": pattern}).out.splitlines()
    vm.killed_pid = out[0]
    assert out[0] != "0", "modgated.service was not running during the load"
    assert out[-1] == "signal", out
    print("# killed pid %s with these in /proc/modules: %s" % (out[0], out[1]))


def test_reactivated(vm):
    """the next request starts modgated again through the socket and is served"""
    assert vm.sh("systemctl is-active modgated.socket").out.strip() == "active"
    reply, error = guest.load(vm, MODULE)
    assert error is None, (error, reply)
    assert all(m["outcome"] in ("loaded", "already_loaded") for m in reply["modules"]), reply
    pid = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    assert pid not in ("0", getattr(vm, "killed_pid", "0")), pid
    assert guest.initstate(vm, MODULE) == "live"


def test_no_module_twice(vm):
    """no module is live twice or recorded as loaded twice"""
    _, deps = guest.dependencies(vm, MODULE)
    live = guest.live_modules(vm)
    assert all(n == 1 for n in live.values()), live
    for m in deps + [MODULE]:
        assert len(guest.records(vm, m, "loaded")) <= 1, m
