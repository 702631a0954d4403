# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 5: the udev helper per event, for a modalias whose module is live. udevd runs a RUN
program per event (fork, exec, wait); bench/tools/spawn.c does the same from inside
systemd-udevd.service's cgroup, with the event's environment, for: /bin/true (the spawn floor),
modgate-udev (which asks modgated), modprobe -b (what udev rules ran before the kmod builtin),
and modgate-udev --version (its start alone, no request), in alternating rounds so that a change in
the machine's load falls on all of them alike."""

import os

import common
from common import Figure, pct

ROUNDS = 5
PER_ROUND = 100


def run(b, vm=False):
    b.forget_modules()
    b.make_live(["e1000"])
    # udevd runs while it runs its helpers, and modgated finds it once. Without one, modgated would
    # look for it again at every udev request, reading /proc/PID/comm of every process (about 100
    # files an event here), which no event of a real boot pays.
    udevd = b.standin_udevd()
    try:
        return measure(b)
    finally:
        udevd.kill()
        udevd.wait()


def measure(b):
    d = b.daemon("s5")
    if "systemd-udevd runs without CAP_SYS_MODULE" not in d.stderr_text():
        raise RuntimeError("modgated did not find the stand-in systemd-udevd:\n" + d.stderr_text())
    env = {"ACTION": "add", "MODALIAS": common.E1000_MODALIAS, "DEVPATH": "/devices/pci0000:00/0000:00:05.0",
           "SUBSYSTEM": "pci", "SEQNUM": "1234", "PATH": "/usr/sbin:/usr/bin"}
    cmds = {
        "/bin/true": ["/bin/true"],
        "modgate-udev": [b.modgate_udev, "--address=" + d.address],
        "modgate-udev --version": [b.modgate_udev, "--version"],
        "modprobe": ["/usr/sbin/modprobe", "-b", "-q", "-d", b.modprobe_root, "-S", b.kver, common.E1000_MODALIAS],
    }
    prefix = common.h.in_unit("systemd-udevd.service")
    runs = {k: {"samples": [], "cpu_ns": 0, "failures": 0, "server_cpu_ns": 0} for k in cmds}
    for _ in range(ROUNDS):
        for name, argv in cmds.items():
            meter = common.CpuMeter(d.pid)
            res = b.spawn(PER_ROUND, argv, env, prefix=prefix)
            runs[name]["samples"] += res["samples"]
            runs[name]["cpu_ns"] += res["user_ns"] + res["system_ns"]
            runs[name]["failures"] += res["failures"]
            runs[name]["server_cpu_ns"] += meter.per(1)[0]
    d.stop()
    n = ROUNDS * PER_ROUND
    for r in runs.values():
        r["mean_ns"] = sum(r["samples"]) / n
        r["p50_ns"] = pct(r["samples"], 50)
        r["cpu_ns"] /= n
        r["server_cpu_ns"] /= n
    t, u, p, v = runs["/bin/true"], runs["modgate-udev"], runs["modprobe"], runs["modgate-udev --version"]
    # End to end as udevd waits for it: the helper's run and, for modgate-udev, the daemon's work inside it.
    figures = [
        Figure(5, "modgate-udev per event (wall, p50)", u["p50_ns"], "ns", "/bin/true", t["p50_ns"], "≤ 1.30",
               u["p50_ns"] <= 1.30 * t["p50_ns"] and u["failures"] == 0,
               note="mean %s vs %s; %d failures" % (common.fmt(u["mean_ns"], "ns"), common.fmt(t["mean_ns"], "ns"),
                                                    u["failures"])),
        Figure(5, "modgate-udev per event vs modprobe (wall, p50)", u["p50_ns"], "ns", "modprobe", p["p50_ns"],
               "< 1.00", u["p50_ns"] < p["p50_ns"]),
        Figure(5, "modgate-udev --version, no request (wall, p50)", v["p50_ns"], "ns", "/bin/true", t["p50_ns"],
               note="what starting the helper costs before it asks: its CPU %s vs %s" % (
                   common.fmt(v["cpu_ns"], "ns"), common.fmt(t["cpu_ns"], "ns"))),
        Figure(5, "CPU per event (helper + modgated)", u["cpu_ns"] + u["server_cpu_ns"], "ns", "/bin/true", t["cpu_ns"],
               note="helper %s, modgated %s; modprobe %s" % (
                   common.fmt(u["cpu_ns"], "ns"), common.fmt(u["server_cpu_ns"], "ns"), common.fmt(p["cpu_ns"], "ns"))),
    ]
    data = {"rounds": ROUNDS, "per_round": PER_ROUND, "env": env, "runs": runs}
    data["plot"] = lambda path: plot(path, runs)
    return figures, data


def plot(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 5))
    for name, r in runs.items():
        s = sorted(x / 1e3 for x in r["samples"])
        ax[0].plot(s, [i / len(s) for i in range(len(s))], label=name)
    ax[0].axvline(1.3 * runs["/bin/true"]["p50_ns"] / 1e3, color="grey", ls=":", lw=1,
                  label="target: 1.3 × /bin/true p50")
    ax[0].set(title="wall time per event, spawn to reaped (CDF)", xlabel="µs", xscale="log", ylabel="fraction")
    ax[0].legend(fontsize=8)
    ax[0].grid(alpha=0.3)
    names = list(runs)
    ax[1].bar(range(len(names)), [runs[n]["cpu_ns"] / 1e3 for n in names], label="helper")
    ax[1].bar(range(len(names)), [runs[n]["server_cpu_ns"] / 1e3 for n in names],
              bottom=[runs[n]["cpu_ns"] / 1e3 for n in names], label="modgated")
    ax[1].set_xticks(range(len(names)), names)
    ax[1].set(title="CPU per event (µs)")
    ax[1].legend()
    fig.suptitle("Scenario 5: udev helper per event, module already live")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
