# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 3: duplicate storms. N requests at once (64, 448, and 1,536, the CPU count of
systemd#19439) for one key, each on its own connection, against a kernel where each module's init
takes DELAY_MS: how many finit_module() calls, and how late the last waiter hears after the load is
done, against the time the same N-way storm takes for a module that is already live (one round
trip at that load). The anchor is udev: N workers each handling one event for the key
(bench/anchors/udev-kmod.c storm), counted by the same shim."""

import json
import os
import subprocess

import common
from common import Figure

SIZES = (64, 448, 1536)
DELAY_MS = 1000


def cpu_modalias():
    with open("/sys/devices/system/cpu/modalias") as f:
        return f.read().strip()


def finit_records(log, since=0):
    with open(log) as f:
        recs = [json.loads(line) for line in f if line.strip()][since:]
    return [r for r in recs if r["call"] == "finit_module"]


def storm_once(b, d, key, n):
    """One storm against modgated; returns its numbers."""
    b.forget_modules()
    with open(d.shim_log) as f:
        since = sum(1 for _ in f)
    calls = b.calls_file("s3", [{"modalias": key}])
    res = b.storm(d.address, n, calls)
    recs = finit_records(d.shim_log, since)
    per_module = {}
    for r in recs:
        per_module[r["name"]] = per_module.get(r["name"], 0) + 1
    done = max(r["end"] for r in recs)
    late = [a - done for a in res["answered"]]
    # The same storm once everything is live: what answering N at once takes.
    ref = b.storm(d.address, n, calls)
    round_trip = max(ref["answered"]) - ref["released_ns"]
    return {"n": n, "finit": len(recs), "modules": len(per_module), "per_module": per_module,
            "errors": res["errors"], "last_sent_before_done_ns": done - max(res["sent"]),
            "late_ns": late, "late_max_ns": max(late), "round_trip_ns": round_trip,
            "ref_errors": ref["errors"]}


def anchor_once(b, label, key, n):
    b.forget_modules()
    log = os.path.join(b.work, "s3-udev-%s-%d.shim.log" % (label.replace(" ", "-"), n))
    out = subprocess.run([b.tool["udev-kmod"], b.trusted, "storm", str(n), key], check=True, capture_output=True,
                         text=True, env=b.shim_env(log, delay_ms=DELAY_MS)).stdout
    recs = finit_records(log)
    return {"n": n, "finit": len(recs), "attempts_ok": sum(1 for r in recs if r["result"] == 0),
            "wall_ns": json.loads(out)["wall_ns"]}


# Every storm connection is root's, as every udev worker's modgate-udev is: the default
# MaxConnectionsPerUser= (1024) hangs up on the rest of a storm of 1,536, so the machine the storm
# stands for needs it raised, and this daemon has it so (read at start; the file goes after).
STORM_CONF = "/run/modgate/modgate.conf.d/bench-storm.conf"


def storm_daemon(b):
    os.makedirs(os.path.dirname(STORM_CONF), exist_ok=True)
    with open(STORM_CONF, "w") as f:
        f.write("[Manager]\nMaxConnections=4096\nMaxConnectionsPerUser=%d\n" % (max(SIZES) + 64))
    try:
        return b.daemon("s3", env={"MODGATE_SHIM_DELAY_MS": str(DELAY_MS)})
    finally:
        os.unlink(STORM_CONF)


def run(b, vm=False):
    d = storm_daemon(b)
    keys = {"cpu": cpu_modalias(), "pci e1000": common.E1000_MODALIAS}
    results, figures = {}, []
    for label, key in keys.items():
        for n in SIZES:
            m = storm_once(b, d, key, n)
            a = anchor_once(b, label, key, n)
            results["%s/%d" % (label, n)] = {"modgated": m, "udev": a}
            ok_count = m["finit"] == m["modules"] and m["errors"] == 0
            ok_late = m["late_max_ns"] <= m["round_trip_ns"]
            figures.append(Figure(
                3, "%s storm of %d: last waiter after load done" % (label, n), m["late_max_ns"], "ns",
                "N-way round trip", m["round_trip_ns"], "≤ 1 round trip", ok_late and ok_count,
                note="finit_module %d for %d modules (udev anchor: %d); %d error replies; last call sent %s "
                     "before the load ended" % (m["finit"], m["modules"], a["finit"], m["errors"],
                                                common.fmt(m["last_sent_before_done_ns"], "ns"))))
    b.forget_modules()
    d.stop()
    data = {"delay_ms": DELAY_MS, "keys": keys, "results": results}
    data["plot"] = lambda path: plot(path, results)
    return figures, data


def plot(path, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    labels = list(results)
    x = range(len(labels))
    ax[0].bar([i - 0.2 for i in x], [results[k]["modgated"]["finit"] for k in labels], 0.4, label="modgated")
    ax[0].bar([i + 0.2 for i in x], [results[k]["udev"]["finit"] for k in labels], 0.4, label="udev (one per event)")
    ax[0].plot(list(x), [results[k]["modgated"]["modules"] for k in labels], "k_", ms=20, label="modules")
    ax[0].set_xticks(list(x), labels, rotation=30, fontsize=8)
    ax[0].set(title="finit_module() calls per storm", yscale="log")
    ax[0].legend()
    for i, k in enumerate(labels):
        late = sorted(v / 1e6 for v in results[k]["modgated"]["late_ns"])
        ax[1].plot(late, [j / len(late) for j in range(len(late))], label=k)
    ax[1].set(title="waiter answered after the load was done (CDF)", xlabel="ms", xscale="log", ylabel="fraction")
    ax[1].legend(fontsize=7)
    ax[1].grid(alpha=0.3)
    fig.suptitle("Scenario 3: duplicate storms")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
