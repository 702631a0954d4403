# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 7: in the VM tier's guest (test/vm), one image and one run, modgate against stock udev:
coldplug until `udevadm settle` returns, hotplug latency from QMP device_add to the network interface
appearing (e1000, then virtio-net), and the finit_module and init_module calls of the whole boot.

Boots alternate, modgate first: modgate as installed (its takeovers on), then the same image with
modgate_vm.stock_udev on the kernel command line, which a generator of the guest reads to give module
loading back to udevd, /sbin/modprobe and systemd-modules-load before any unit starts
(test/vm/guest/rootfs/etc/systemd/system-generators/modgate-vm-stock-udev). Each boot is a fresh
overlay of the image. systemd.wants=systemd-udev-settle.service makes `udevadm settle` part of every
boot: coldplug is from systemd-udev-trigger.service's start to systemd-udev-settle.service's exit
(systemd's monotonic timestamps). The module syscalls are counted by ftrace from the kernel's start
(trace_event= on the command line), by the process that made them, and so is the time each loader
spent inside finit_module(). For modgate's boots the stages of every load its records carry are
summed (MODGATE_WAIT_USEC: from the job's making to a worker's start, the modules it needs and a free
worker; MODGATE_CHECK_USEC: the checks of the load, and its parts OPEN, ORIGIN, PROBE, HASH and NAME;
MODGATE_INIT_USEC: finit_module()); stock udev's builtin records nothing of the kind, its part before
finit_module() is the rest of its coldplug. The trace also has every exec and exit (trace_clock=mono):
modgate-udev's runs, exec to exit, are what udev's workers waited for. And the guest's CPU time until
the boot finished, whole and for udevd, modgated and the prober (cgroup cpu.stat): under TCG the
loads' inits, udev's workers and modgate's own work share two virtual CPUs, so what modgate adds to
them is what delays the rest.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

from common import Figure

BOOTS_PER_MODE = 3     # the "at least three boots each way, alternating, medians"
MODES = ("modgate", "stock udev")
# Where the guest's module tree is: its own image's erofs on dm-verity (the guest names no root hash,
# so read-only evidence vouches there, which does not bind a name to bytes: the .modinfo is read
# before each load), and the same tree as plain files on the writable ext4 root, as a Debian install
# has it (the kernel-install manifest vouches, and the name comes from the path).
LAYOUTS = (("verity tree", ""), ("writable root", "modgate_vm.modules=writable"))
# QEMU devices hotplugged in turn: neither driver is loaded before (the guest has no NIC at boot).
NICS = (("e1000", "e1000"), ("virtio-net-pci", "virtio_net"))
TRACE_EVENTS = ("syscalls:sys_enter_finit_module,syscalls:sys_exit_finit_module,"
                "syscalls:sys_enter_init_module,syscalls:sys_enter_delete_module,"
                "sched:sched_process_exec,sched:sched_process_exit")
APPEND = "systemd.wants=systemd-udev-settle.service trace_clock=mono trace_event=" + TRACE_EVENTS
HOTPLUG_TIMEOUT = 60
TRACE_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\].*?\s(sys_finit_module|sys_init_module|sys_delete_module)(\(| -> (0x[0-9a-f]+))")
PROC_EVENT = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+(sched_process_exec|sched_process_exit): (.*)")
FINIT_TIME = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+sys_finit_module(\(| -> )")
STAGES = ("WAIT", "CHECK", "INIT")
# MODGATE_CHECK_USEC divided (docs/journal.md).
CHECK_PARTS = ("OPEN", "ORIGIN", "PROBE", "HASH", "NAME")
# The guest's CPU time until the boot finished, whole and by unit (cgroup v2 cpu.stat): under TCG
# the loads' inits, udev's workers and modgate's own work share two virtual CPUs.
CPU_UNITS = ("systemd-udevd.service", "modgated.service", "modgate-probe.service")

# Waits for one more entry in /sys/class/net than at its start and prints it; builtins only, but sleep.
WAITER = r"""
set -- /sys/class/net/*; n=$#; before=" $* "
end=$((SECONDS + %d))
while [ $SECONDS -lt $end ]; do
        set -- /sys/class/net/*
        if [ $# -gt $n ]; then
                for i; do case $before in *" $i "*) ;; *) echo "${i##*/}" ;; esac; done
                exit 0
        fi
        sleep 0.01
done
exit 1
"""


def vm_modules(src):
    sys.path.insert(0, os.path.join(src, "test/vm"))
    import image
    import machine
    return image, machine


def vm_prepare(b, subdir):
    """This build installed in the guest image, and where QEMU can run it: (machine module, image
    manifest, work directory, accelerator, why that one), or a string that says why no guest can run."""
    image, machine = vm_modules(b.src)
    why = machine.unavailable()
    if why:
        return why
    # The guest gets modgate by `meson install` of this build, which wants every target built.
    subprocess.run(["ninja", "-C", b.builddir], check=True, stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    manifest = image.build(b.builddir)
    print("    (guest image ready in %.0f s)" % (time.monotonic() - t0), flush=True)
    workdir = os.path.join(b.results, subdir)
    os.makedirs(workdir, exist_ok=True)
    accel, accel_why = machine.probe_accel(manifest, workdir)
    return machine, manifest, workdir, accel, accel_why


def count_trace(text):
    """finit_module, init_module and delete_module calls by process name, and finit_module's failures
    by errno."""
    calls, inits, deletes, failures = {}, {}, {}, {}
    for line in text.splitlines():
        m = TRACE_LINE.match(line)
        if not m:
            continue
        comm, what, ret = m.group(1).strip(), m.group(3), m.group(5)
        if ret is not None:
            v = int(ret, 16)
            if v >= 1 << 63:
                errno = (1 << 64) - v
                failures[errno] = failures.get(errno, 0) + 1
        elif what == "sys_finit_module":
            calls[comm] = calls.get(comm, 0) + 1
        elif what == "sys_init_module":
            inits[comm] = inits.get(comm, 0) + 1
        else:
            deletes[comm] = deletes.get(comm, 0) + 1
    return calls, inits, deletes, failures


def finit_seconds(text):
    """The time inside finit_module() by process name, summed over its calls (seconds), from the trace's
    entries and exits (a thread's pid pairs them)."""
    entered, total = {}, {}
    for line in text.splitlines():
        m = FINIT_TIME.match(line)
        if not m:
            continue
        comm, tid, ts = m.group(1).strip(), m.group(2), float(m.group(3))
        if m.group(4) == "(":
            entered[tid] = ts
        elif tid in entered:
            total[comm] = total.get(comm, 0.0) + ts - entered.pop(tid)
    return total


def helper_lives(text):
    """modgate-udev's runs this boot from the trace: how many, and their lifetimes summed (exec to exit,
    seconds): what udev's workers waited for, start, call and answer included."""
    execs, total, n = {}, 0.0, 0
    for line in text.splitlines():
        m = PROC_EVENT.match(line)
        if not m:
            continue
        comm, pid, ts, what, rest = m.group(1).strip(), m.group(2), float(m.group(3)), m.group(4), m.group(5)
        if what == "sched_process_exec" and rest.startswith("filename=") and \
                rest.split()[0].endswith("/modgate-udev"):
            execs[pid] = ts
        elif what == "sched_process_exit" and pid in execs:
            total += ts - execs.pop(pid)
            n += 1
    return n, total


def cpu_seconds(m):
    """The guest's CPU time since the kernel started (the root cgroup), and each of CPU_UNITS' (seconds)."""
    out = {}
    for name, path in (("guest", "/sys/fs/cgroup/cpu.stat"),
                       *((u, "/sys/fs/cgroup/system.slice/%s/cpu.stat" % u) for u in CPU_UNITS)):
        line = m.sh("grep ^usage_usec %s || true" % path).out.split()
        out[name] = int(line[1]) / 1e6 if len(line) == 2 else 0.0
    return out


def stage_sums(m):
    """modgated's loads this boot: how many, the sum of each stage its records carry (seconds), and how
    many loads each evidence and name check had ("read-only/modinfo": 30)."""
    out = m.sh("journalctl -b -o json --no-pager _SYSTEMD_UNIT=modgated.service MODGATE_OUTCOME=loaded",
               timeout=120, check=False).out
    sums = {s.lower(): 0.0 for s in STAGES}
    evidence = {}
    n = 0
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        n += 1
        for s in STAGES + CHECK_PARTS:
            sums[s.lower()] = sums.get(s.lower(), 0.0) + int(r.get("MODGATE_%s_USEC" % s, 0) or 0) / 1e6
        key = "%s/%s" % (r.get("MODGATE_EVIDENCE", "-"), r.get("MODGATE_NAME_CHECK", "-"))
        evidence[key] = evidence.get(key, 0) + 1
    return n, sums, evidence


def hotplug(m, driver, nic_id):
    """Seconds from QMP device_add to the new interface in the guest's /sys/class/net, as the host
    sees it (the agent's answer comes back over virtio-serial, a few ms under TCG)."""
    result = {}

    def wait():
        try:
            result["r"] = m.sh(WAITER % HOTPLUG_TIMEOUT, timeout=HOTPLUG_TIMEOUT + 10, check=False)
        except Exception as e:  # noqa: BLE001 - reported below
            result["e"] = e
        result["t"] = time.monotonic()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(2)               # the waiter has counted the interfaces (bash starts in well under 1 s)
    t0 = time.monotonic()
    m.qmp("device_add", driver=driver, id=nic_id)
    t.join()
    if "e" in result:
        raise result["e"]
    if result["r"].rc != 0:
        raise RuntimeError("no interface appeared within %d s of device_add %s" % (HOTPLUG_TIMEOUT, driver))
    return result["t"] - t0, result["r"].out.strip()


def one_boot(machine, manifest, workdir, accel, mode, layout):
    append = " ".join(w for w in (APPEND, dict(LAYOUTS)[layout], "modgate_vm.stock_udev" if mode != "modgate" else "")
                      if w)
    m = machine.Machine(manifest, workdir, accel, append=append)
    try:
        took = m.boot(machine.BOOT_TIMEOUT[accel])
        ts = {}
        for unit, prop in (("systemd-udev-trigger.service", "ExecMainStartTimestampMonotonic"),
                           ("systemd-udev-settle.service", "ExecMainExitTimestampMonotonic"),
                           ("systemd-udev-settle.service", "ExecMainStatus")):
            ts[unit + " " + prop] = int(m.sh("systemctl show -P %s %s" % (prop, unit)).out.strip() or 0)
        trigger = ts["systemd-udev-trigger.service ExecMainStartTimestampMonotonic"]
        settled = ts["systemd-udev-settle.service ExecMainExitTimestampMonotonic"]
        if not trigger or not settled or ts["systemd-udev-settle.service ExecMainStatus"] != 0:
            raise RuntimeError("no coldplug timestamps (%s)" % ts)
        # Which way the boot ran, checked rather than assumed.
        cap = m.sh("grep ^CapBnd: /proc/$(systemctl show -P MainPID systemd-udevd.service)/status").out.split()[1]
        udevd_has_cap = bool(int(cap, 16) & (1 << 16))
        override = m.sh("test -s /etc/udev/rules.d/80-drivers.rules", check=False).rc == 0
        modprobe = m.sh("sysctl -n kernel.modprobe").out.strip()
        if udevd_has_cap != (mode != "modgate") or override != (mode == "modgate") or \
                (modprobe == "/sbin/modprobe") != (mode != "modgate"):
            raise RuntimeError("%s boot, but udevd %s CAP_SYS_MODULE, modgate's 80-drivers.rules is %s, "
                               "kernel.modprobe is %s" % (mode, "has" if udevd_has_cap else "lacks",
                                                          "there" if override else "gone", modprobe))
        # What the coldplug asked for: events with a modalias (each runs modgate-udev under modgate, the
        # kmod builtin in udevd otherwise).
        modaliases = int(m.sh("udevadm info --export-db | grep -c '^E: MODALIAS=' || true").out.strip() or 0)
        cpu = cpu_seconds(m)
        hot = {}
        for i, (driver, module) in enumerate(NICS):
            # Whether modgated was running (it exits when idle, 30 s by default) or is socket-activated.
            active = m.sh("systemctl is-active modgated.service", check=False).out.strip()
            secs, iface = hotplug(m, driver, "nic%d" % i)
            state = m.sh("cat /sys/module/%s/initstate 2>/dev/null || echo absent" % module).out.strip()
            hot[driver] = {"seconds": secs, "interface": iface, "initstate": state, "modgated_before": active}
        starts = m.sh("journalctl -b -u modgated.service -o cat --no-pager | grep -c '^Started modgated' || true")
        with open(os.path.join(workdir, "journal.txt"), "w") as f:
            f.write(m.sh("journalctl -b -o short-monotonic --no-pager", timeout=120).out)
        trace = m.sh("mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing; "
                     "cat /sys/kernel/tracing/trace", timeout=120).out
        calls, inits, deletes, failures = count_trace(trace)
        finit_time = finit_seconds(trace)
        helpers, helper_s = helper_lives(trace)
        recorded, stages, evidence = stage_sums(m) if mode == "modgate" else (0, {}, {})
        with open(os.path.join(workdir, "trace.txt"), "w") as f:
            f.write(trace)
        initrd = set(m.sh("cat /run/modgate-vm/initrd-modules").out.split())
        live = len(m.sh("cat /proc/modules").out.splitlines())
        return {"mode": mode, "layout": layout, "boot_seconds": took, "coldplug_s": (settled - trigger) / 1e6,
                "settled_since_kernel_s": settled / 1e6, "hotplug": hot, "finit_by_comm": calls,
                "finit_calls": sum(calls.values()), "init_module_calls": sum(inits.values()),
                "init_by_comm": inits, "delete_by_comm": deletes, "finit_failures_by_errno": failures, "initrd_modules": len(initrd),
                "live_modules": live, "modalias_events": modaliases,
                "modgated_starts": int(starts.out.strip() or 0), "finit_seconds_by_comm": finit_time,
                "loader_finit_s": finit_time.get("modgated" if mode == "modgate" else "(udev-worker)", 0.0),
                "recorded_loads": recorded, "stages_s": stages, "evidence": evidence, "cpu_s": cpu, "helper_runs": helpers,
                "helper_s": helper_s, "workdir": workdir}
    finally:
        m.close()


def not_run(why):
    return [Figure(7, "VM coldplug and hotplug against stock udev", "not run", "", target="≤ 1.00",
                   met="not run", note=why)], {"not_run": why}


def run(b, vm=False):
    if not vm:
        return not_run("needs --vm")
    prepared = vm_prepare(b, "s7-vm")
    if isinstance(prepared, str):
        return not_run(prepared)
    machine, manifest, base, accel, accel_why = prepared
    boots = []
    for layout, _ in LAYOUTS:
        for i in range(BOOTS_PER_MODE):
            for mode in MODES:
                workdir = os.path.join(base, "boot-%d-%s-%s" % (len(boots) + 1, layout.split()[0],
                                                               mode.replace(" ", "-")))
                r = one_boot(machine, manifest, workdir, accel, mode, layout)
                boots.append(r)
                report(len(boots), r)
    return [f for layout, _ in LAYOUTS for f in figures(boots, accel, layout)], {
        "accel": accel, "accel_why": accel_why, "append": APPEND, "layouts": dict(LAYOUTS), "boots": boots,
        "plot": lambda path: plot(path, boots)}


def report(n, r):
    print("    boot %d (%s, %s): coldplug %.2f s (%d events with a modalias), settled %.2f s after the kernel "
          "started, hotplug %s, finit_module %s (failed: %s), init_module %d, delete_module %s, %d modules live, "
          "modgated started %d times; inside finit_module() %s; modgated's %d loads (%s), stages %s; "
          "modgate-udev ran %d times, %.3f s summed; CPU until booted %s" % (
              n, r["layout"], r["mode"], r["coldplug_s"], r["modalias_events"], r["settled_since_kernel_s"],
              ", ".join("%s %.3f s (modgated %s)" % (k, v["seconds"], v["modgated_before"])
                        for k, v in r["hotplug"].items()),
              r["finit_by_comm"], r["finit_failures_by_errno"] or "none", r["init_module_calls"],
              r["delete_by_comm"] or 0, r["live_modules"], r["modgated_starts"],
              ", ".join("%s %.3f s" % kv for kv in sorted(r["finit_seconds_by_comm"].items())),
              r["recorded_loads"], ", ".join("%s %d" % kv for kv in sorted(r["evidence"].items())) or "-",
              ", ".join("%s %.3f s" % kv for kv in r["stages_s"].items()) or "-",
              r["helper_runs"], r["helper_s"], ", ".join("%s %.2f s" % kv for kv in r["cpu_s"].items())),
          flush=True)


def median_of(boots, mode, get):
    return statistics.median(get(r) for r in boots if r["mode"] == mode)


def figures(boots, accel, layout):
    boots = [r for r in boots if r["layout"] == layout]

    def pair(what, get, unit, target, better):
        mg, st = median_of(boots, "modgate", get), median_of(boots, "stock udev", get)
        met = better(mg, st) if target else None
        return Figure(7, "%s: %s" % (layout, what), mg, unit, anchor="stock udev", anchor_value=st, target=target,
                      met=met, ratio=mg / st if st else None,
                      note="median of %d boots each way, %s" % (BOOTS_PER_MODE, accel))

    out = [pair("coldplug, udev-trigger start to settle", lambda r: r["coldplug_s"], "s", "≤ 1.00",
                lambda a, s: a <= s),
           pair("udev settled, since the kernel started", lambda r: r["settled_since_kernel_s"], "s", None, None)]
    for driver, _ in NICS:
        out.append(pair("hotplug %s, device_add to interface" % driver,
                        lambda r, d=driver: r["hotplug"][d]["seconds"], "s", "≤ 1.00", lambda a, s: a <= s))
    out.append(pair("finit_module calls in the boot", lambda r: r["finit_calls"], "calls", "fewer",
                    lambda a, s: a < s))
    out.append(pair("finit_module calls that failed", lambda r: sum(r["finit_failures_by_errno"].values()),
                    "calls", None, None))
    out.append(pair("init_module calls in the boot", lambda r: r["init_module_calls"], "calls", None, None))
    # Where the time goes: the loader's time inside finit_module() (modgated's workers; udev's workers),
    # and modgate's stages before it, summed over the boot's loads.
    out.append(pair("loader's time inside finit_module(), summed", lambda r: r["loader_finit_s"], "s", None, None))
    n = median_of(boots, "modgate", lambda r: r["recorded_loads"])
    for s in STAGES + CHECK_PARTS:
        v = median_of(boots, "modgate", lambda r, s=s: r["stages_s"].get(s.lower(), 0.0))
        out.append(Figure(7, "%s: modgated's loads, MODGATE_%s_USEC summed" % (layout, s), v, "s", target=None, met=None,
                          note="median of %d boots, %d loads each (median)" % (BOOTS_PER_MODE, n)))
    out.append(Figure(7, "%s: modgate-udev's runs, exec to exit summed" % layout, median_of(
        boots, "modgate", lambda r: r["helper_s"]), "s", target=None, met=None, note="median of %d boots, %d runs "
        "(median)" % (BOOTS_PER_MODE, median_of(boots, "modgate", lambda r: r["helper_runs"]))))
    evidence = sorted({e for r in boots for e in r["evidence"]})
    out.append(Figure(7, "%s: modgated's loads by evidence and name check" % layout, ", ".join(
        "%s %g" % (e, median_of(boots, "modgate", lambda r, e=e: r["evidence"].get(e, 0))) for e in evidence),
        "", target=None, met=None, note="median of %d boots" % BOOTS_PER_MODE))
    # The guest's CPU time until the boot finished: what modgate adds to the two virtual CPUs.
    out.append(pair("guest CPU time until booted", lambda r: r["cpu_s"]["guest"], "s", None, None))
    for u in CPU_UNITS:
        out.append(pair("%s CPU time until booted" % u, lambda r, u=u: r["cpu_s"][u], "s", None, None))
    return out


def plot(path, boots):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(24, 6))
    colors = {"modgate": "tab:blue", "stock udev": "tab:orange"}
    labels = ["%d\n%s\n%s" % (i + 1, r["layout"].split()[0], r["mode"]) for i, r in enumerate(boots)]
    c = [colors[r["mode"]] for r in boots]
    ax[0].bar(labels, [r["coldplug_s"] for r in boots], color=c)
    ax[0].set(title="coldplug: udev-trigger start to settle", ylabel="s")
    width = 0.4
    for j, (driver, _) in enumerate(NICS):
        xs = [i + (j - 0.5) * width for i in range(len(boots))]
        ax[1].bar(xs, [r["hotplug"][driver]["seconds"] for r in boots], width, color=c,
                  hatch="//" if j else None, edgecolor="black", label=driver)
    ax[1].set_xticks(range(len(boots)), labels)
    ax[1].set(title="hotplug: device_add to interface (plain e1000, hatched virtio-net)", ylabel="s")
    comms = sorted({k for r in boots for k in r["finit_by_comm"]})
    bottom = [0] * len(boots)
    for k in comms:
        v = [r["finit_by_comm"].get(k, 0) for r in boots]
        ax[2].bar(labels, v, bottom=bottom, label=k)
        bottom = [a + b for a, b in zip(bottom, v)]
    ax[2].set(title="finit_module calls in the boot, by process", ylabel="calls")
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
