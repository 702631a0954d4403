# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 2: the corpus (bench/corpus.py), about 10,000 requests, against a kernel that has
nothing loaded: each engine loads what the corpus resolves to, through the same shim, and answers
the rest. End to end is the wall time per request as the requester sees it, one request at a time:
a Load call on a persistent connection for modgated, one event of udev's in-process builtin, one
modprobe exec (fork, exec, index lookup, initstate, load when needed)."""

import json
import os
import subprocess

import common
import corpus
from common import Figure, pct

# modprobe runs for every MODPROBE_EVERY-th request of the corpus: ~2,000 execs stand for 10,000.
MODPROBE_EVERY = 5
PERF_CALLS = 2000


def finit_count(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if '"finit_module"' in line)


def run(b, vm=False):
    c = corpus.build(b)
    keys = c["keys"]
    n = len(keys)
    keys_path = os.path.join(b.work, "s2.keys")
    with open(keys_path, "w") as f:
        f.write("\n".join(keys) + "\n")
    eng = {}

    # Where a load's CPU goes: a fresh daemon, a kernel with nothing loaded, the first PERF_CALLS requests.
    b.forget_modules()
    d = b.daemon("s2-perf")
    meter = common.CpuMeter(d.pid)
    perf = common.perf_profile(d.pid, lambda: b.loadgen(d.address, 1, PERF_CALLS, b.calls_file(
        "s2-perf", [{"modalias": k} for k in keys[:PERF_CALLS]])), os.path.join(b.results, b.prefix + "-perf.txt"))
    perf_cpu, _ = meter.per(1)
    perf_loads = finit_count(d.shim_log)
    d.stop()

    # modgated: one persistent connection, one call at a time.
    b.forget_modules()
    d = b.daemon("s2")
    calls = b.calls_file("s2", [{"modalias": k} for k in keys])
    meter = common.CpuMeter(d.pid)
    res = b.loadgen(d.address, 1, n, calls)
    cpu, _ = meter.per(n)
    d_finit = finit_count(d.shim_log)
    loaded = [r["path"] for r in d.shim_records() if r["call"] == "finit_module"]
    # The same corpus again: everything it names is live now (a coldplug replayed, udev re-triggered).
    meter = common.CpuMeter(d.pid)
    again = b.loadgen(d.address, 1, n, calls)
    cpu_again, _ = meter.per(n)
    d.stop()
    eng["modgated"] = {"wall_ns": res["wall_ns"] / n, "server_cpu_ns": cpu, "latency": res["latency"],
                       "errors": res["errors"], "finit": d_finit, "requests": n}
    eng["modgated, again"] = {"wall_ns": again["wall_ns"] / n, "server_cpu_ns": cpu_again,
                              "latency": again["latency"], "errors": again["errors"], "requests": n}
    # What a load adds, module file by module file (bench/tools/costs.c --files).
    files = os.path.join(b.work, "s2.loaded")
    with open(files, "w") as f:
        f.write("\n".join(loaded[:: max(1, len(loaded) // 200)]) + "\n")
    load_costs = json.loads(subprocess.run([b.tool["costs"], "--files", files], check=True, capture_output=True,
                                           text=True).stdout)

    # udev's builtin, in process.
    b.forget_modules()
    log = os.path.join(b.work, "s2-udev.shim.log")
    samples = os.path.join(b.work, "s2-udev.samples")
    out = json.loads(subprocess.run([b.tool["udev-kmod"], b.trusted, "lookup", keys_path, samples], check=True,
                                    capture_output=True, text=True, env=b.shim_env(log)).stdout)
    with open(samples) as f:
        lat = [int(line.split()[0]) for line in f]
    eng["udev"] = {"wall_ns": out["wall_ns"] / n, "cpu_ns": out["cpu_ns"] / n, "latency": lat, "hits": out["hits"],
                   "finit": finit_count(log), "requests": n}

    # modprobe: one exec per request, on a sample of the corpus.
    b.forget_modules()
    sample = keys[::MODPROBE_EVERY]
    sample_path = os.path.join(b.work, "s2-modprobe.keys")
    with open(sample_path, "w") as f:
        f.write("\n".join(sample) + "\n")
    log = os.path.join(b.work, "s2-modprobe.shim.log")
    res = b.spawn(sample_path, ["/usr/sbin/modprobe", "-b", "-q", "-d", b.modprobe_root, "-S", b.kver, "{}"],
                  env=b.shim_env(log))
    eng["modprobe"] = {"wall_ns": res["wall_ns"] / len(sample), "cpu_ns": (res["user_ns"] + res["system_ns"]) /
                       len(sample), "latency": res["samples"], "failures": res["failures"], "finit": finit_count(log),
                       "requests": len(sample)}
    again = b.spawn(sample_path, ["/usr/sbin/modprobe", "-b", "-q", "-d", b.modprobe_root, "-S", b.kver, "{}"],
                    env=b.shim_env(log))
    eng["modprobe, again"] = {"wall_ns": again["wall_ns"] / len(sample), "latency": again["samples"],
                              "requests": len(sample)}
    b.forget_modules()

    hits = sum(c["hit"])
    m, u, p = eng["modgated"], eng["udev"], eng["modprobe"]
    m2, p2 = eng["modgated, again"], eng["modprobe, again"]
    per_load = (m["server_cpu_ns"] - m2["server_cpu_ns"]) * n / max(1, m["finit"])
    figures = [
        Figure(2, "corpus end to end per request (modprobe/modgated)", p["wall_ns"] / m["wall_ns"], "×",
               "target", 20.0, "≥ 20", p["wall_ns"] >= 20 * m["wall_ns"], ratio=p["wall_ns"] / m["wall_ns"] / 20,
               note="modgated %s, one modprobe exec %s" % (common.fmt(m["wall_ns"], "ns"),
                                                            common.fmt(p["wall_ns"], "ns"))),
        Figure(2, "corpus again, all live (modprobe/modgated)", p2["wall_ns"] / m2["wall_ns"], "×", "target", 20.0,
               "≥ 20", p2["wall_ns"] >= 20 * m2["wall_ns"], ratio=p2["wall_ns"] / m2["wall_ns"] / 20,
               note="modgated %s, one modprobe exec %s" % (common.fmt(m2["wall_ns"], "ns"),
                                                            common.fmt(p2["wall_ns"], "ns"))),
        Figure(2, "modgated server CPU per load", per_load, "ns", "modinfo+sha256 alone",
               load_costs["modinfo"] + load_costs["sha256"],
               note="the module's name and signature from libkmod (whole-file decompression, a fresh kmod "
                    "context) %s, SHA-256 %s, over %d of the loaded files" % (
                        common.fmt(load_costs["modinfo"], "ns"), common.fmt(load_costs["sha256"], "ns"),
                        load_costs["files"])),
        Figure(2, "where the corpus's CPU goes (perf)", perf_cpu / max(1, perf_loads), "ns",
               note="per load, over the first %d requests (%d loads): %s" % (
                   PERF_CALLS, perf_loads, common.perf_top(perf, perf_cpu / max(1, perf_loads), n=12))),
        Figure(2, "corpus end to end per request, modgated", m["wall_ns"], "ns", "udev in-process", u["wall_ns"],
               note="p50 %s p99 %s; server CPU %s per request" % (
                   common.fmt(pct(m["latency"], 50), "ns"), common.fmt(pct(m["latency"], 99), "ns"),
                   common.fmt(m["server_cpu_ns"], "ns"))),
        Figure(2, "corpus: requests, hits, finit_module calls", "%d, %d, %d" % (n, hits, m["finit"]), "",
               note="udev anchor %d finit_module, modprobe %d for its 1/%d sample; %d host and %d guest "
                    "modaliases; %d buses" % (u["finit"], p["finit"], MODPROBE_EVERY, c["n_host"], c["n_guest"],
                                              len(c["buses"]))),
    ]
    data = {"corpus": {"requests": n, "hits": hits, "buses": c["buses"], "keys": keys, "hit": c["hit"],
                       "origin": c["origin"]}, "engines": eng, "modprobe_every": MODPROBE_EVERY,
            "load_costs_ns": load_costs, "perf": perf}
    data["plot"] = lambda path: plot(path, eng, c)
    return figures, data


def plot(path, eng, c):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    for name in ("modgated", "modgated, again", "udev", "modprobe", "modprobe, again"):
        lat = sorted(eng[name]["latency"])
        ax[0].plot([x / 1e3 for x in lat], [i / len(lat) for i in range(len(lat))], label="%s (%d requests)" % (
            name, eng[name]["requests"]))
    ax[0].set(title="end-to-end time per request (CDF)", xlabel="µs", xscale="log", ylabel="fraction")
    ax[0].legend()
    ax[0].grid(alpha=0.3)
    buses = sorted(c["buses"].items(), key=lambda kv: -kv[1])[:25]
    ax[1].bar(range(len(buses)), [v for _, v in buses])
    ax[1].set_xticks(range(len(buses)), [k for k, _ in buses], rotation=70, fontsize=7)
    ax[1].set(title="corpus requests per bus (top 25 of %d)" % len(c["buses"]), yscale="log")
    fig.suptitle("Scenario 2: corpus of %d requests, %d hits" % (len(c["keys"]), sum(c["hit"])))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
