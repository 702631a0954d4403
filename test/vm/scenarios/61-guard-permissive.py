# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guard in permissive mode (modgate.guard=permissive): root's insmod loads, with the record of the
refusal it would have been; Status, modgatectl status and modgated -n say what the guard is. Then a
boot whose LSM list has no bpf: the guard is unavailable, they say why, and modules load as before."""

import guest

APPEND = "modgate.guard=permissive"
# It reboots once, with another lsm= (a boot takes over 2 minutes under TCG on a busy machine).
TIMEOUT = 480
GUARD = "45a3b6475ec4408a9ce9692356845553"
# Leaf modules that nothing in the guest loads by itself.
CANDIDATES = ["dummy", "ifb", "nlmon", "veth", "vcan", "vxcan"]
# Debian 13's list without bpf.
LSM_WITHOUT_BPF = "lsm=lockdown,capability,landlock,yama,apparmor,tomoyo,ipe,ima,evm"


def mark(vm):
    return guest.monotonic_usec(vm)


def guard_records(vm, start, *matches, timeout=30):
    return guest.records_since(vm, start, "MESSAGE_ID=" + GUARD, *matches, timeout=timeout)


def fresh_module(vm):
    return guest.fresh_leaf_module(vm, CANDIDATES)


def status_guard(vm):
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Status")
    assert error is None, (error, reply)
    return reply["guard"]


def test_insmod_loads(vm):
    """root's insmod loads, and the guard records that it would have refused it"""
    start = mark(vm)
    name, path = fresh_module(vm)
    vm.sh("insmod %s" % guest.quote(path))
    assert guest.initstate(vm, name) == "live"
    recs = guard_records(vm, start, "MODGATE_CALLER_COMM=insmod")
    assert len(recs) == 1, recs
    r = recs[0]
    print("# %s" % r["MESSAGE"])
    assert r["MODGATE_OUTCOME"] == "would_refuse_guard" and r["MODGATE_GUARD_MODE"] == "permissive", r
    assert r["MODGATE_GUARD_REASON"] == "caller" and r["PRIORITY"] == "5", r
    assert r["MESSAGE"].startswith("The guard would have refused (permissive mode) "), r


def test_status(vm):
    """Status, modgatectl status and modgated -n say the guard is attached in permissive mode"""
    g = status_guard(vm)
    assert g["mode"] == "permissive" and g["configured"] == "permissive" and g["configuredBy"] == "cmdline", g
    assert g["attached"] and g["bpfLsm"] and g["kept"] and g["attachedAt"] > 0, g
    assert g["refusals"] >= 1 and "unavailable" not in g, g
    out = vm.sh("modgatectl status --no-pager").out
    line = [l for l in out.splitlines() if l.strip().startswith("Guard:")]
    assert line and "permissive (modgate.guard=permissive), attached since" in line[0], out
    out = vm.sh("%s -n" % guest.MODGATED).out
    assert "\nGuard: permissive (modgate.guard= of the kernel command line); the kernel runs the BPF LSM\n" in out, out
    assert "\n[Guard]\nMode=permissive\n" in out, out


def test_no_bpf_lsm(vm):
    """with bpf not in lsm=, the guard is unavailable, Status and -n say why, and modules load as before"""
    vm.append = (vm.append + " modgate.guard=enforce " + LSM_WITHOUT_BPF).strip()
    vm.reboot(300)
    assert "bpf" not in vm.sh("cat /sys/kernel/security/lsm").out.split(",")
    name, path = fresh_module(vm)
    reply, error = guest.load(vm, name)
    assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
    g = status_guard(vm)
    assert g["mode"] == "off" and g["configured"] == "enforce" and not g["attached"] and not g["bpfLsm"], g
    assert "add it to lsm= on the kernel command line" in g["unavailable"], g
    out = vm.sh("%s -n" % guest.MODGATED).out
    assert "\nGuard: enforce (modgate.guard= of the kernel command line); unavailable: the kernel runs no BPF LSM " \
           "(add bpf to lsm= on the kernel command line)\n" in out, out
    logs = vm.journal("_SYSTEMD_UNIT=modgated.service", "_BOOT_ID=" + vm.boot_id)
    assert [e for e in logs if e.get("MESSAGE", "").startswith("The guard is not attached: the kernel runs no BPF LSM")]
    # insmod works as without modgate's guard: the kernel has none.
    other, path = fresh_module(vm)
    vm.sh("insmod %s" % guest.quote(path))
    assert guest.initstate(vm, other) == "live"
