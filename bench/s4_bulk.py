# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 4: bulk loading of a boot list with real dependencies (the Debian tree's modules.dep),
each module's init taking a time drawn from a fixed, seeded distribution (the tier's shim:
$MODGATE_SHIM_DELAY_MS with each module's time, and $MODGATE_SHIM_DEPS, with which a finit_module()
waits for the modules it needs as the kernel's resolve_symbol_wait() does). modgated, fed by modgate-modules-load, against the critical-path bound
(the longest chain of init times through the dependency graph: no loader can finish sooner), and
against systemd-modules-load before v259 (sequential), v259 (parallel threads without dependency
order) and Android's dependency waves (bench/anchors/bulk-load.c)."""

import json
import os
import random
import subprocess
import time

import common
from common import Figure

SEED = 14
LIST_MIN, LIST_MAX = 90, 120
THREADS = 16            # v259 clamps the online CPUs to 1..16; a machine with 16 or more
SWEEP = (2, 4, 8, 16, 32)   # Workers= swept, against the critical path
REPEATS = 3             # modgated's runs are a few seconds: the median of three, with the spread


def blacklisted_or_soft(b):
    """Modules a boot list should not name here: softdeps (loaders differ in honouring them) and
    modprobe.d blacklists (the list would lose them)."""
    out = set(h_softdeps(b.tree))
    for d in ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d", "/run/modprobe.d"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            with open(os.path.join(d, name), errors="replace") as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 2 and w[0] in ("blacklist", "install", "softdep", "options"):
                        out.add(w[1].replace("-", "_"))
    return out


def h_softdeps(tree):
    return common.h.parse_modules_softdep(tree)


def boot_list(b):
    """(listed names, {module: (delay ms, [dependencies])}) of LIST_MIN to LIST_MAX modules."""
    rng = random.Random(SEED)
    bad = blacklisted_or_soft(b)
    deps = {n: d for n, (_, d) in b.deps.items()}
    ok = [n for n, d in sorted(deps.items()) if 1 <= len(d) <= 8 and n not in bad and not (set(d) & bad)]
    listed, closure = [], set()
    for n in rng.sample(ok, len(ok)):
        new = closure | {n} | set(deps[n])
        if len(new) > LIST_MAX:
            continue
        listed.append(n)
        closure = new
        if len(closure) >= LIST_MIN:
            break
    graph = {}
    for n in sorted(closure):
        u = rng.random()
        ms = rng.randint(1, 5) if u < 0.70 else rng.randint(10, 60) if u < 0.95 else rng.randint(100, 300)
        graph[n] = (ms, deps[n])
    return listed, graph


def bounds(graph, workers):
    finish = {}
    for n in sorted(graph, key=lambda n: len(graph[n][1])):   # a dependency has fewer dependencies
        ms, d = graph[n]
        finish[n] = ms + max((finish[x] for x in d), default=0)
    cp = max(finish.values())
    total = sum(ms for ms, _ in graph.values())
    return cp, total, max(cp, total / workers)


def live_count(names):
    return sum(1 for n in names if common.h.module_state(n) == "live")


def spawn_floor(b):
    """What starting a program in the boot list unit's cgroup costs here (/bin/sh moving itself into
    the cgroup, then exec), without the program: the median of five /bin/true. The anchors time
    themselves from inside; modgate-modules-load is timed from outside, so this is taken off."""
    ts = []
    for _ in range(5):
        t0 = time.monotonic()
        subprocess.run([*common.h.in_unit("modgate-modules-load.service"), "/bin/true"], check=True)
        ts.append(time.monotonic() - t0)
    return sorted(ts)[len(ts) // 2]


def median_of_runs(fn, *args, **kwargs):
    runs = sorted((fn(*args, **kwargs) for _ in range(REPEATS)), key=lambda r: r["wall_s"])
    m = dict(runs[len(runs) // 2])
    m["walls_s"] = [r["wall_s"] for r in runs]
    return m


def default_workers(b):
    """Workers= as the daemon takes it on this machine when nothing sets it (modgated -n)."""
    out = subprocess.run([b.modgated, "-n"], check=True, capture_output=True, text=True).stdout
    return int(next(line for line in out.splitlines() if line.startswith("Workers=")).split("=", 1)[1])


def run_modgated(b, listed, graph, delays, workers, all_at_once=False, floor_s=0.0):
    """Through modgate-modules-load (the whole list in flight at once, up to 256 calls), or with every
    listed module's call sent at once, each on its own connection (bench/tools/loadgen.c --storm).
    floor_s, the spawn floor, is taken off modgate-modules-load's wall time."""
    b.forget_modules()
    env = dict(delays)
    d = b.daemon("s4-w%d%s" % (workers, "-storm" if all_at_once else ""), env=env, args=("--workers=%d" % workers,))
    if all_at_once:
        calls = b.calls_file("s4", [{"name": n} for n in listed])
        res = b.storm(d.address, len(listed), calls)
        wall = (max(res["answered"]) - res["released_ns"]) / 1e9
        failed = res["errors"]
    else:
        conf = os.path.join(b.work, "s4-boot.conf")
        with open(conf, "w") as f:
            f.write("\n".join(listed) + "\n")
        t0 = time.monotonic()
        p = subprocess.run([*common.h.in_unit("modgate-modules-load.service"), b.modgate_modules_load,
                            "--address=" + d.address, conf], capture_output=True, text=True)
        wall = time.monotonic() - t0 - floor_s
        failed = p.returncode != 0 and p.stderr
    recs = [r for r in d.shim_records() if r["call"] == "finit_module"]
    d.stop()
    if failed:
        raise RuntimeError("boot list through modgated failed: %s" % failed)
    return {"wall_s": wall, "finit": len(recs), "live": live_count(graph),
            "loads": [(r["name"], r["end"]) for r in recs]}


DRIVER = "i915"          # a large module (1.5 MB of xz, 7 MB to decompress for its name) with a chain below it
DRIVER_INIT_MS = 30


def run_driver(b):
    """One large driver and its dependencies, each init DRIVER_INIT_MS: the boot's GPU driver. Its
    file is checked (decompressed, for its name and signature) while what it needs loads; the bound
    is the longest chain of inits below it."""
    deps = {n: d for n, (_, d) in b.deps.items()}
    closure, todo = set(), [DRIVER]
    while todo:
        n = todo.pop()
        if n not in closure:
            closure.add(n)
            todo.extend(deps[n])
    def chain(n):
        return 1 + max((chain(x) for x in deps[n]), default=0)

    deps_path = os.path.join(b.work, "s4-driver.deps")
    with open(deps_path, "w") as f:
        for n in sorted(closure):
            f.write("%s: %s\n" % (n, " ".join(deps[n])))
    walls = []
    for i in range(5):
        b.forget_modules()
        d = b.daemon("s4-driver%d" % i, env={"MODGATE_SHIM_DELAY_MS": str(DRIVER_INIT_MS),
                                               "MODGATE_SHIM_DEPS": deps_path})
        t0 = time.monotonic()
        reply = common.h.call(d.address, common.MANAGER + "Load", {"name": DRIVER})
        walls.append(time.monotonic() - t0)
        d.stop()
        if "error" in reply or len(reply["parameters"]["modules"]) != len(closure):
            raise RuntimeError("loading %s failed: %s" % (DRIVER, reply))
    walls.sort()
    # What modprobe does (libkmod's kmod_module_probe_insert_module(): the dependencies one by one,
    # then the driver; the kernel reads each file), through the same shim.
    b.forget_modules()
    listing = os.path.join(b.work, "s4-driver.list")
    with open(listing, "w") as f:
        f.write(DRIVER + "\n")
    env = b.shim_env(os.path.join(b.work, "s4-driver.shim.log"),
                     extra={"MODGATE_SHIM_DELAY_MS": str(DRIVER_INIT_MS), "MODGATE_SHIM_DEPS": deps_path})
    seq = json.loads(subprocess.run([b.tool["bulk-load"], b.trusted, "sequential", "1", listing], check=True,
                                    capture_output=True, text=True, env=env).stdout)
    return {"wall_s": walls[len(walls) // 2], "walls_s": walls, "modules": len(closure),
            "bound_s": chain(DRIVER) * DRIVER_INIT_MS / 1e3, "modprobe_s": seq["wall_ns"] / 1e9}


def run_anchor(b, mode, threads, listed, graph, delays):
    b.forget_modules()
    path = os.path.join(b.work, "s4-list")
    with open(path, "w") as f:
        f.write("\n".join(listed) + "\n")
    log = os.path.join(b.work, "s4-%s.shim.log" % mode)
    env = b.shim_env(log, extra=delays)
    out = json.loads(subprocess.run([b.tool["bulk-load"], b.trusted, mode, str(threads), path], check=True,
                                    capture_output=True, text=True, env=env).stdout)
    with open(log) as f:
        recs = [json.loads(line) for line in f if '"finit_module"' in line]
    return {"wall_s": out["wall_ns"] / 1e9, "finit": len(recs), "live": live_count(graph),
            "loads": [(r["name"], r["end"]) for r in recs]}


def run(b, vm=False):
    listed, graph = boot_list(b)
    # The shim's knobs: each module's init time, and what each waits for (the kernel's
    # resolve_symbol_wait()): an environment for every loader of this scenario.
    deps_path = os.path.join(b.work, "s4.deps")
    with open(deps_path, "w") as f:
        for n, (ms, d) in sorted(graph.items()):
            f.write("%s: %s\n" % (n, " ".join(d)))
    delays = {"MODGATE_SHIM_DELAY_MS": ",".join(["0"] + ["%s:%d" % (n, ms) for n, (ms, _) in sorted(graph.items())]),
              "MODGATE_SHIM_DEPS": deps_path}
    dw = default_workers(b)
    cp, total, lb4 = bounds(graph, dw)
    floor = spawn_floor(b)
    res = {
        "modgated Workers=64": median_of_runs(run_modgated, b, listed, graph, delays, 64, floor_s=floor),
        "modgated default Workers=": median_of_runs(run_modgated, b, listed, graph, delays, dw, floor_s=floor),
        "modgated Workers=64, every call at once": median_of_runs(run_modgated, b, listed, graph, delays, 64,
                                                                  all_at_once=True),
        "sequential (modules-load < v259)": run_anchor(b, "sequential", 1, listed, graph, delays),
        "parallel %d threads (v259)" % THREADS: run_anchor(b, "parallel", THREADS, listed, graph, delays),
        "dependency waves %d threads (Android)" % THREADS: run_anchor(b, "waves", THREADS, listed, graph, delays),
    }
    # Workers= swept, for its default: each against its own bound.
    sweep = {w: median_of_runs(run_modgated, b, listed, graph, delays, w, floor_s=floor) for w in SWEEP}
    drv = run_driver(b)
    b.forget_modules()
    m64, m4 = res["modgated Workers=64"], res["modgated default Workers="]
    n = len(graph)
    figures = [
        Figure(4, "boot list, modgated Workers=64", m64["wall_s"], "s", "critical path", cp / 1e3, "≤ 1.10",
               m64["wall_s"] <= 1.10 * cp / 1e3 and m64["live"] == n,
               note="%d listed, %d modules, %d finit_module, %d live; median of %s; spawn floor %s taken off"
               % (len(listed), n, m64["finit"], m64["live"], spread(m64), common.fmt(floor, "s"))),
        Figure(4, "boot list, modgated Workers=%d (default)" % dw, m4["wall_s"], "s", "max(path, sum/%d)" % dw,
               lb4 / 1e3,
               "≤ 1.10", m4["wall_s"] <= 1.10 * lb4 / 1e3 and m4["live"] == n,
               note="sum of init times %s; median of %s" % (common.fmt(total / 1e3, "s"), spread(m4))),
    ]
    for w, r in sweep.items():
        figures.append(Figure(4, "boot list, modgated Workers=%d" % w, r["wall_s"], "s", "critical path", cp / 1e3,
                              note="max(path, sum/%d) %s; median of %s" % (
                                  w, common.fmt(bounds(graph, w)[2] / 1e3, "s"), spread(r))))
    s = res["modgated Workers=64, every call at once"]
    figures.append(Figure(4, "boot list, modgated W=64, every call at once", s["wall_s"], "s", "critical path",
                          cp / 1e3, note="loadgen --storm, without modgate-modules-load; %d finit_module, %d live; "
                          "median of %s" % (s["finit"], s["live"], spread(s))))
    figures.append(Figure(4, "%s and its dependencies, Workers=%d" % (DRIVER, dw), drv["wall_s"], "s", "critical path",
                          drv["bound_s"], note="%d modules, each init %d ms; median of %s; the driver's file is "
                          "checked while its dependencies load; modprobe (one by one) %s" % (
                              drv["modules"], DRIVER_INIT_MS, spread(drv), common.fmt(drv["modprobe_s"], "s"))))
    for name, r in res.items():
        if name.startswith("modgated"):
            continue
        figures.append(Figure(4, "boot list, " + name, r["wall_s"], "s", "modgated W=64", m64["wall_s"],
                              note="%d finit_module, %d live" % (r["finit"], r["live"])))
    data = {"driver": drv, "spawn_floor_s": floor, "listed": listed, "graph": {k: list(v) for k, v in graph.items()}, "critical_path_ms": cp,
            "sum_ms": total, "default_workers": dw, "bound_default_ms": lb4, "results": res,
            "shim": delays}
    data["plot"] = lambda path: plot(path, res, graph, cp, lb4, dw)
    return figures, data


def spread(r):
    return "/".join("%.3f" % w for w in r["walls_s"]) + " s"


def plot(path, res, graph, cp, lb4, dw):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(14, 6), gridspec_kw={"width_ratios": [1, 1.4]})
    names = list(res)
    ax[0].barh(range(len(names)), [res[k]["wall_s"] for k in names], color="C0")
    ax[0].axvline(cp / 1e3, color="k", ls="--", lw=1, label="critical path %.3f s" % (cp / 1e3))
    ax[0].axvline(1.1 * cp / 1e3, color="grey", ls=":", lw=1, label="target 1.10 × critical path")
    ax[0].axvline(lb4 / 1e3, color="C1", ls="--", lw=1, label="bound for %d workers %.3f s" % (dw, lb4 / 1e3))
    ax[0].set_yticks(range(len(names)), names, fontsize=8)
    ax[0].set(title="time to load the boot list", xlabel="s")
    ax[0].legend(fontsize=7)
    loads = res["modgated Workers=64"]["loads"]
    t0 = min(end - graph[n][0] * 1e6 for n, end in loads)
    order = sorted(loads, key=lambda x: x[1])
    for i, (n, end) in enumerate(order):
        start = end - graph[n][0] * 1e6
        ax[1].barh(i, (end - start) / 1e9, left=(start - t0) / 1e9, height=0.8, color="C0")
    ax[1].axvline(cp / 1e3, color="k", ls="--", lw=1)
    ax[1].set(title="modgated Workers=64: each module's init (ordered by end)", xlabel="s", ylabel="module")
    fig.suptitle("Scenario 4: bulk loading, %d modules" % len(graph))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
