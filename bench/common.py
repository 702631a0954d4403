# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every scenario shares: the integration tier's world (harness.py, imported), the servers
under socket activation, the load generator, CPU and memory readings from /proc, and the figures
that are printed, kept as JSON and plotted."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test/integration"))
import harness as h  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
MANAGER = "io.modgate.Manager."
# The NIC the VM tier hotplugs (e1000, no dependencies), by the modalias its guest announces.
E1000_MODALIAS = "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def pct(values, q):
    return float(numpy.percentile(values, q)) if len(values) else float("nan")


class Figure:
    """One printed line. met is True, False, or None for a figure reported without a target."""

    def __init__(self, scenario, what, value, unit, anchor=None, anchor_value=None, target=None, met=None,
                 ratio=None, note=None):
        self.scenario, self.what, self.value, self.unit = scenario, what, value, unit
        self.anchor, self.anchor_value, self.target, self.met, self.note = anchor, anchor_value, target, met, note
        if ratio is None and anchor_value:
            ratio = value / anchor_value
        self.ratio = ratio

    def line(self):
        verdict = {True: "met", False: "NOT MET", None: "report", "not run": "not run"}[self.met]
        a = "%s %s" % (self.anchor, fmt(self.anchor_value, self.unit)) if self.anchor else "-"
        r = "%.2f" % self.ratio if self.ratio is not None else "-"
        s = "%-3s %-44s %-14s | %-32s | ratio %-7s | target %-14s | %s" % (
            self.scenario, self.what, fmt(self.value, self.unit), a, r, self.target or "-", verdict)
        return s + ("  (%s)" % self.note if self.note else "")

    def json(self):
        return {k: getattr(self, k) for k in ("scenario", "what", "value", "unit", "anchor", "anchor_value",
                                              "ratio", "target", "met", "note")}


def fmt(v, unit):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "ns":
        return "%.1f µs" % (v / 1e3) if v < 1e6 else "%.2f ms" % (v / 1e6)
    if unit == "s":
        return "%.3f s" % v
    if unit == "ms":
        return "%.1f ms" % v
    if unit == "rps":
        return "%.0f/s" % v
    if unit == "KiB":
        return "%d KiB" % v
    return "%g %s" % (v, unit)


class Bench:
    """The world the scenarios run in, made once per run."""

    def __init__(self, src, builddir, results):
        self.src, self.builddir, self.results = src, builddir, results
        out = os.path.join(builddir, "bench")
        self.tool = {n: os.path.join(out, n) for n in os.listdir(out)}
        self.modgated = os.path.join(builddir, "src/daemon/modgated")
        self.modgate_udev = os.path.join(builddir, "src/udev/modgate-udev")
        self.modgate_modules_load = os.path.join(builddir, "src/modules-load/modgate-modules-load")
        self.shim = os.path.join(builddir, "test/modgate-test-shim.so")
        os.environ.update({"MODGATED": self.modgated, "MODGATE_SHIM": self.shim, "MODGATE_BUILD_ROOT": builddir})
        self.n_servers = 0

    def setup(self):
        h.unshare_mounts()
        self.tree = h.kernel_tree()
        self.kver = os.path.basename(self.tree)
        self.work = tempfile.mkdtemp(prefix="modgate-bench-")
        h.run("mount", "-t", "tmpfs", "tmpfs", self.work)
        self.trusted = h.mount_erofs_tree(self.tree, self.work)
        # The manifest as kernel-install writes it (version 2: each file's digest with its .modinfo), in
        # place of the harness's digests-only one: what a kernel installed with modgate has.
        manifest = os.path.join(self.work, "kernel-install.sha256")
        h.run(os.path.join(self.builddir, "src/manifest/modgate-manifest"), "--origin=kernel-install",
              "--tree=" + self.tree, "--output=" + manifest, self.kver, stderr=subprocess.DEVNULL)
        h.MANIFESTS[self.trusted] = manifest
        self.deps = h.parse_modules_dep(self.tree)
        h.mount_sys_module()
        self.journal = h.Journal()
        # modprobe -d ROOT reads ROOT/lib/modules/KVER: the same erofs tree the daemon reads.
        self.modprobe_root = os.path.join(self.work, "modprobe-root")
        for d in ("lib/modules", "usr/lib/modules"):
            os.makedirs(os.path.join(self.modprobe_root, d))
            os.symlink(self.trusted, os.path.join(self.modprobe_root, d, self.kver))

    def unique(self, name):
        """A server name not used before in this run: a socket and a notify socket are made per name,
        and a repeated scenario starts its servers again."""
        self.n_servers += 1
        return "%s-%d" % (name, self.n_servers)

    def path_of(self, module):
        return os.path.join(self.trusted, self.deps[module][0])

    # --- /sys/module ---------------------------------------------------------------------------

    def forget_modules(self):
        h.reset_sys_module()

    def make_live(self, names):
        for n in names:
            d = "/sys/module/" + n
            os.makedirs(d, exist_ok=True)
            with open(d + "/initstate", "w") as f:
                f.write("live\n")

    # --- servers -------------------------------------------------------------------------------

    def daemon(self, name, env=None, args=()):
        """modgated as the integration tier starts it, logging at its shipped level (info), not the
        tier's debug, whose every-request lines would be measured too."""
        e = {"MODGATE_LOG_LEVEL": "info"}
        e.update(env or {})
        d = h.Daemon(self.work, self.unique(name), self.trusted, extra_env=e, args=args)
        if not d.activate():
            raise RuntimeError("modgated %s did not start:\n%s" % (name, d.stderr_text()))
        return d

    def standin_udevd(self):
        """A process named systemd-udevd in its unit's cgroup, without CAP_SYS_MODULE in its bounding
        set, as udevd runs under the takeover: udev's helpers run while udevd does, and modgated looks
        for it (its start-up check) until it finds it. The caller kills it."""
        exe = os.path.join(self.work, "systemd-udevd")
        if not os.path.exists(exe):
            shutil.copy("/usr/bin/sleep", exe)
        proc = subprocess.Popen([*h.in_unit("systemd-udevd.service"), "setpriv", "--bounding-set=-sys_module",
                                 exe, "infinity"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open("/proc/%d/comm" % proc.pid) as f:
                    if f.read().strip() == "systemd-udevd":
                        return proc
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        proc.kill()
        raise RuntimeError("the stand-in systemd-udevd did not start")

    def floor(self, name, module, path):
        s = Activated(self.work, self.unique(name), [self.tool["varlink-floor"], module, path])
        s.call("org.varlink.service.GetInfo")
        return s

    # --- measurements --------------------------------------------------------------------------

    def calls_file(self, name, calls):
        path = os.path.join(self.work, name + ".calls")
        with open(path, "w") as f:
            for c in calls:
                f.write(json.dumps({"method": MANAGER + "Load", "parameters": c}) + "\n")
        return path

    def loadgen(self, address, connections, n, calls_path):
        """n calls over connections; returns the summary with "latency" (ns) and "error" lists."""
        samples = os.path.join(self.work, "loadgen.samples")
        out = subprocess.run([self.tool["loadgen"], address, str(connections), str(n), calls_path, samples],
                             check=True, capture_output=True, text=True).stdout
        res = json.loads(out)
        lat, err = numpy.loadtxt(samples, dtype=numpy.int64, ndmin=2).T
        res["latency"], res["error"] = lat.tolist(), err.tolist()
        return res

    def storm(self, address, connections, calls_path):
        samples = os.path.join(self.work, "storm.samples")
        p = subprocess.run([self.tool["loadgen"], "--storm", address, str(connections), calls_path, samples],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("loadgen --storm of %d failed (%d): %s" % (connections, p.returncode, p.stderr.strip()))
        res = json.loads(p.stdout)
        sent, answered, err = numpy.loadtxt(samples, dtype=numpy.int64, ndmin=2).T
        res["sent"], res["answered"], res["error"] = sent.tolist(), answered.tolist(), err.tolist()
        return res

    def spawn(self, n_or_keys, argv, env, prefix=()):
        samples = os.path.join(self.work, "spawn.samples")
        count = ["--keys", n_or_keys] if isinstance(n_or_keys, str) else [str(n_or_keys)]
        out = subprocess.run([*prefix, self.tool["spawn"], *count, samples, "--", *argv], env=env, check=True,
                             capture_output=True, text=True).stdout
        res = json.loads(out)
        wall, status = numpy.loadtxt(samples, dtype=numpy.int64, ndmin=2).T
        res["samples"], res["status"] = wall.tolist(), status.tolist()
        return res

    def shim_env(self, log, delay_ms=None, extra=None):
        """The environment for an anchor that makes module syscalls through the tier's shim."""
        env = dict(os.environ)
        env.update({"LD_PRELOAD": self.shim, "MODGATE_SHIM_LOG": log})
        if delay_ms is not None:
            env["MODGATE_SHIM_DELAY_MS"] = str(delay_ms)
        env.update(extra or {})
        return env


def cpu_ns(pid):
    """The process's utime+stime, in ns (tick resolution), and the sum of its threads' schedstat run
    time (ns), from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    ticks = int(rest[11]) + int(rest[12])
    sched = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                sched += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return ticks * 1e9 / CLK_TCK, sched


class CpuMeter:
    """Server CPU over a stretch of requests: utime+stime deltas from /proc/PID/stat."""

    def __init__(self, pid):
        self.pid = pid
        self.t0, self.s0 = cpu_ns(pid)

    def per(self, n):
        t1, s1 = cpu_ns(self.pid)
        return (t1 - self.t0) / n, (s1 - self.s0) / n


def rss_kib(pid):
    return int(h.read_proc_status(pid, "VmRSS").split()[0])


class Activated:
    """A server under systemd-socket-activate with FileDescriptorName=varlink, as modgated runs."""

    def __init__(self, work, name, cmd, env=None):
        self.address = "/run/modgate/%s.sock" % name
        os.makedirs("/run/modgate", exist_ok=True)
        args = ["systemd-socket-activate", "-l", self.address, "--fdname=varlink"]
        for k, v in (env or {}).items():
            args += ["-E", "%s=%s" % (k, v)]
        self.stderr_path = os.path.join(work, name + ".stderr")
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen([*args, *cmd], stdout=self.stderr, stderr=self.stderr)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.address):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("systemd-socket-activate did not listen on %s" % self.address)
            time.sleep(0.02)

    @property
    def pid(self):
        return self.proc.pid

    def call(self, method, parameters=None):
        return h.call(self.address, method, parameters)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.stderr.close()


def strace_profile(pid, run):
    """Syscall counts of pid and its threads while run() runs (strace -c -f): {syscall: calls}."""
    out = tempfile.mktemp(prefix="strace-")
    p = subprocess.Popen(["strace", "-c", "-f", "-q", "-o", out, "-p", str(pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        run()
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
    counts = {}
    with open(out) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                # % time, seconds, usecs/call, calls, [errors], syscall
                counts[parts[-1]] = int(parts[3])
    os.unlink(out)
    return counts


def perf_profile(pid, run, out):
    """Where pid's CPU goes while run() runs: perf record with DWARF call chains (cpu-clock, a
    software event, works without a PMU), reported as each function's share of the samples with what
    it calls (children) and alone (self), user-space functions with a name only. The full report is
    kept in out. None when perf is not there."""
    if not shutil.which("perf"):
        return None
    data = out + ".data"
    p = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf,16384",
                          "-o", data, "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        run()
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=120)
    report = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "symbol", "--stdio", "-g", "none",
                             "--percent-limit", "0.5"], capture_output=True, text=True).stdout
    os.unlink(data)
    with open(out, "w") as f:
        f.write(report)
    funcs = []
    for line in report.splitlines():
        w = line.split()
        if len(w) >= 4 and w[0].endswith("%") and w[2] == "[.]" and not w[3].startswith("0x"):
            funcs.append((w[3], float(w[0][:-1]), float(w[1][:-1])))
    return funcs


# The event loop and the method dispatch that every request goes through: not where its cost is.
FRAME = {"main", "manager_run", "_start", "__libc_start_main", "sd_event_loop", "sd_event_run", "sd_event_dispatch",
         "sd_varlink_process", "vl_method_load", "start_thread", "clone3", "__clone3"}


def perf_top(funcs, per_request_ns, n=10, prefixes=None):
    """The functions that cost most, as "name share (µs per request)", for a figure's note."""
    if not funcs:
        return "perf not available"
    out = []
    for name, children, _ in funcs:
        if name in FRAME or (prefixes and not name.startswith(prefixes)):
            continue
        out.append("%s %.0f%% (%s)" % (name, children, fmt(children / 100 * per_request_ns, "ns")))
        if len(out) == n:
            break
    return ", ".join(out)


# --- the run ------------------------------------------------------------------------------------

def results_dir(builddir, results):
    if results:
        os.makedirs(results, exist_ok=True)
        return os.path.abspath(results)
    base = os.path.join(builddir, "bench-results")
    d = os.path.join(base, time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(d)
    latest = os.path.join(base, "latest")
    if os.path.islink(latest):
        os.unlink(latest)
    os.symlink(os.path.basename(d), latest)
    return d


def run(src, builddir, results, wanted, repeat, vm):
    import scenarios
    results = results_dir(builddir, results)
    b = Bench(src, builddir, results)
    start = time.monotonic()
    print("bench: results in %s" % results, flush=True)
    print("bench: load average at start %s; %d CPUs; kernel module tree %s" % (
        " ".join("%.2f" % x for x in loadavg()), os.cpu_count(), os.path.basename(h.kernel_tree())), flush=True)
    b.setup()
    print("bench: set-up (erofs image of the tree, manifest, journald) took %.1f s" % (time.monotonic() - start),
          flush=True)
    summary = []
    failed = 0
    for n in wanted:
        for i in range(repeat):
            tag = str(n) if repeat == 1 else "%d.%d" % (n, i + 1)
            b.prefix = "s%s" % tag.replace(".", "-")      # names of the files a scenario writes itself
            t0, la0 = time.monotonic(), loadavg()
            try:
                figures, data = scenarios.ALL[n](b, vm=vm)
            except Exception as e:  # noqa: BLE001 - one scenario's failure is reported, the rest run
                import traceback
                traceback.print_exc()
                print("%-3s scenario failed: %s: %s" % (n, type(e).__name__, e), flush=True)
                failed += 1
                continue
            took = time.monotonic() - t0
            for f in figures:
                if repeat > 1:
                    f.scenario = tag
                print(f.line(), flush=True)
                summary.append(f.line())
            data.update({"scenario": n, "run": i + 1, "seconds": took, "loadavg_before": la0,
                         "loadavg_after": loadavg(), "figures": [f.json() for f in figures]})
            plot = data.pop("plot", None)
            name = "s%s" % tag.replace(".", "-")
            with open(os.path.join(results, name + ".json"), "w") as f:
                json.dump(data, f, indent=1)
            if plot:
                plot(os.path.join(results, name + ".png"))
            print("    (scenario %s took %.0f s; load average %s before, %s after)" % (
                tag, took, " ".join("%.2f" % x for x in la0), " ".join("%.2f" % x for x in loadavg())),
                flush=True)
    with open(os.path.join(results, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    b.journal.stop()
    print("bench: done in %.0f s; load average at end %s" % (
        time.monotonic() - start, " ".join("%.2f" % x for x in loadavg())), flush=True)
    return 1 if failed else 0
