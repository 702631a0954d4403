# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 6: footprint and activation. modgated's RSS idle, after a warm-up of three passes over the
corpus (every key three times) and then up to 100,000 requests (no growth after warm-up); the first
request after socket activation (exec, configuration, pinning the root, the module index) against a
warm request and the spawn floor; and the first answer after depmod rewrites the index, against a
warm answer and what a fresh libkmod context costs (udevd's reload of its builtin)."""

import json
import os
import shutil
import subprocess
import time

import common
import corpus
from common import Figure, pct

TOTAL = 100000
STEP = 10000
WARMUP_PASSES = 3
ACTIVATIONS = 5
FRESH_MODULE = "eql"    # taken out of the copy and its index, then added back before depmod runs


def rss_run(b, churn):
    """RSS after each STEP requests, each STEP on 64 new connections (churn), or over one run on the
    same 64 connections, sampled as it goes (requests counted from the elapsed time)."""
    c = corpus.build(b)
    b.forget_modules()
    b.make_live(b.deps)
    d = b.daemon("s6-%s" % ("churn" if churn else "steady"))
    calls = b.calls_file("s6", [{"modalias": k} for k in c["keys"]])
    points = [(0, common.rss_kib(d.pid))]
    warm = WARMUP_PASSES * len(c["keys"])
    b.loadgen(d.address, 64, warm, calls)
    points.append((warm, common.rss_kib(d.pid)))
    if churn:
        done = warm
        while done < TOTAL:
            n = min(STEP, TOTAL - done)
            b.loadgen(d.address, 64, n, calls)
            done += n
            points.append((done, common.rss_kib(d.pid)))
    else:
        n = TOTAL - warm
        p = subprocess.Popen([b.tool["loadgen"], d.address, "64", str(n), calls], stdout=subprocess.DEVNULL)
        t0, samples = time.monotonic(), []
        while p.poll() is None:
            samples.append((time.monotonic() - t0, common.rss_kib(d.pid)))
            time.sleep(0.25)
        took = time.monotonic() - t0
        points += [(warm + int(n * t / took), kib) for t, kib in samples[1:]]
        points.append((TOTAL, common.rss_kib(d.pid)))
    d.stop()
    return points, warm


def activation_run(b):
    """Fresh socket-activated instances: the first Load's time, then a warm one's, on each."""
    firsts, warms = [], []
    b.forget_modules()
    b.make_live(["e1000"])
    for i in range(ACTIVATIONS):
        d = common.h.Daemon(b.work, b.unique("s6-act"), b.trusted, extra_env={"MODGATE_LOG_LEVEL": "info"})
        t0 = time.monotonic_ns()
        r = d.call(common.MANAGER + "Load", {"modalias": common.E1000_MODALIAS})
        firsts.append(time.monotonic_ns() - t0)
        assert "error" not in r, r
        for _ in range(20):
            t0 = time.monotonic_ns()
            d.call(common.MANAGER + "Load", {"modalias": common.E1000_MODALIAS})
            warms.append(time.monotonic_ns() - t0)
        d.stop()
    spawn = b.spawn(200, ["/bin/true"], {"PATH": "/usr/bin"})
    return firsts, warms, spawn["samples"]


def depmod_run(b):
    """A writable copy of the tree, as test-requests.py's index case makes it; the time from
    depmod's exit to the answer that needs its new index, against a warm answer."""
    base = os.path.join(b.work, b.unique("fresh"))
    os.makedirs(base)
    common.h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", base)
    root = os.path.join(base, "lib/modules", b.kver)
    common.h.copy_tree(b.tree, root)
    manifest = common.h.write_manifest(root, os.path.join(b.work, "fresh.sha256"))
    module = os.path.join(root, b.deps[FRESH_MODULE][0])
    keep = os.path.join(b.work, "fresh-module")
    shutil.move(module, keep)
    common.h.run("depmod", "-b", base, b.kver)
    b.forget_modules()
    d = common.h.Daemon(b.work, b.unique("s6-depmod"), root, extra_env={"MODGATE_LOG_LEVEL": "info"},
                        args=("--manifest=" + manifest,))
    assert d.activate()
    warm = []
    for _ in range(20):
        t0 = time.monotonic_ns()
        r = d.call(common.MANAGER + "Load", {"name": "e1000"})
        warm.append(time.monotonic_ns() - t0)
    assert d.call(common.MANAGER + "Load", {"name": FRESH_MODULE}).get("error") == common.MANAGER + "ModuleNotFound"
    shutil.copy2(keep, module)
    t0 = time.monotonic_ns()
    common.h.run("depmod", "-b", base, b.kver)
    t1 = time.monotonic_ns()
    r = d.call(common.MANAGER + "Load", {"name": FRESH_MODULE})
    first = time.monotonic_ns() - t1
    assert "error" not in r, r
    d.stop()
    common.h.run("umount", base)
    costs = json.loads(subprocess.run([b.tool["costs"], b.tree, "e1000", "e1000", "2000"], check=True,
                                      capture_output=True, text=True).stdout)
    return {"depmod_ns": t1 - t0, "first_ns": first, "warm_ns": warm, "context_load_ns": costs["context_load"]}


def run(b, vm=False):
    points, warm = rss_run(b, churn=False)
    churn, _ = rss_run(b, churn=True)
    firsts, warms, spawn = activation_run(b)
    dep = depmod_run(b)
    after_warm = points[1][1]
    growth = points[-1][1] - after_warm
    figures = [
        Figure(6, "RSS after %d requests, same connections" % TOTAL, points[-1][1], "KiB", "after warm-up",
               after_warm, "no growth", growth <= max(64, after_warm // 100),
               note="idle after activation %d KiB; growth %+d KiB after the %d-request warm-up" % (
                   points[0][1], growth, warm)),
        Figure(6, "RSS after %d requests, 64 new connections each %d" % (TOTAL, STEP), churn[-1][1], "KiB",
               "after warm-up", churn[1][1], "no growth", churn[-1][1] - churn[1][1] <= max(64, churn[1][1] // 100),
               note="growth %+d KiB; largest %d KiB" % (churn[-1][1] - churn[1][1], max(k for _, k in churn))),
        Figure(6, "first request after socket activation", pct(firsts, 50), "ns", "warm request", pct(warms, 50),
               note="vs the spawn floor (/bin/true) %s: %.1f×; %d activations" % (
                   common.fmt(pct(spawn, 50), "ns"), pct(firsts, 50) / pct(spawn, 50), len(firsts))),
        Figure(6, "first answer after depmod rewrote the index", dep["first_ns"], "ns", "warm answer",
               pct(dep["warm_ns"], 50), note="a fresh libkmod context costs %s CPU; depmod took %s" % (
                   common.fmt(dep["context_load_ns"], "ns"), common.fmt(dep["depmod_ns"], "ns"))),
    ]
    data = {"rss_kib": points, "rss_kib_churn": churn, "warmup_requests": warm, "activation_first_ns": firsts,
            "activation_warm_ns": warms,
            "spawn_floor_ns": spawn, "depmod": dep}
    data["plot"] = lambda path: plot(path, points, churn, firsts, warms, spawn, dep)
    return figures, data


def plot(path, points, churn, firsts, warms, spawn, dep):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 5))
    ax[0].plot([p[0] for p in points], [p[1] / 1024 for p in points], ".-", label="same 64 connections")
    ax[0].plot([p[0] for p in churn], [p[1] / 1024 for p in churn], "o--", label="64 new connections each 10,000")
    ax[0].axvline(points[1][0], color="grey", ls=":", lw=1, label="end of warm-up")
    ax[0].set(title="modgated RSS", xlabel="requests", ylabel="MiB")
    ax[0].set_ylim(bottom=0)
    ax[0].legend()
    ax[0].grid(alpha=0.3)
    bars = [("spawn floor\n/bin/true", pct(spawn, 50)), ("warm\nrequest", pct(warms, 50)),
            ("first after\nactivation", pct(firsts, 50)), ("warm answer\n(depmod tree)", pct(dep["warm_ns"], 50)),
            ("first after\ndepmod", dep["first_ns"])]
    ax[1].bar(range(len(bars)), [v / 1e3 for _, v in bars])
    ax[1].set_xticks(range(len(bars)), [n for n, _ in bars], fontsize=8)
    ax[1].set(title="time to answer (µs, p50)", yscale="log")
    fig.suptitle("Scenario 6: footprint and activation")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
