# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 8: the guard's cost per load (issue #23), in the VM tier's guest (test/vm), one boot.

The guard (docs/guard.md) adds to each of modgated's loads an approval (a map update before
finit_module(), its removal after) and, in the kernel, the checks of its kernel_read_file program:
the caller, the file's identity and the kernel's own SHA-256 of the file (bpf_ima_file_hash()),
taken while the kernel reads it. All of that falls inside the record's MODGATE_INIT_USEC, the
daemon's time from its approval to finit_module()'s return.

One boot, no modgate.guard= on its command line: rounds with [Guard] Mode=off, permissive and
enforce, set by a drop-in and a restart of modgated.service (off detaches a guard an earlier instance
attached; the rounds check which way each one ran), in a rotating order, each loading the same
leaf modules one at a time over one varlink connection, timed by the client in the guest
(CLOCK_MONOTONIC around each call), then unloading them (rmmod). Each off round also has the
anchors: finit_module() of the same files by root from the same process (the kernel's part, which
any loader pays) and insmod of each (an exec, libkmod, the same call).
"""

import os
import statistics
import subprocess
import time

import numpy

from common import Figure, fmt
from s7_vm import vm_prepare

MODES = ("off", "permissive", "enforce")
CYCLES = 8                      # rounds per mode; cycle i starts with MODES[i % 3]
GUARD_RECORD = "45a3b6475ec4408a9ce9692356845553"
READ_PROGRAM = "modgate_read_file"
DROPIN = "/etc/modgate/modgate.conf.d/80-bench-guard.conf"
# Leaf modules (no dependencies) that nothing in the guest loads by itself, that load without
# hardware and unload again, and that make no device (no udev event during a round): small ones (1.7
# to 18 KiB compressed), and file systems and code pages of 35 to 147 KiB, for the hash's cost per byte.
MODULES = ["tcp_bbr", "tcp_bic", "tcp_cdg", "tcp_dctcp", "tcp_westwood", "tcp_highspeed", "tcp_hybla",
           "tcp_htcp", "tcp_vegas", "tcp_nv", "tcp_veno", "tcp_scalable", "tcp_lp", "tcp_illinois",
           "sch_htb", "sch_hfsc", "sch_red", "sch_sfq", "sch_tbf", "sch_prio", "sch_multiq", "sch_netem",
           "sch_drr", "sch_plug", "sch_skbprio", "sch_choke", "crc7", "crc8", "crc_itu_t", "ts_kmp",
           "ts_bm", "ts_fsm",
           "ntfs3", "reiserfs", "nilfs2", "hpfs", "exfat", "ufs", "affs", "nls_cp936", "nls_cp950", "nls_cp949"]
# A restart that attaches the guard anew loads its programs (the kernel's BTF, the verifier): 21 s
# under TCG on a busy machine (docs/guard.md).
RESTART_TIMEOUT = 300
DETACH_TIMEOUT = 120

# Runs in the guest as root: "READ_PROGRAM gate WARM NAME...", "READ_PROGRAM finit PATH..." or
# "READ_PROGRAM insmod PATH...". Prints JSON: the start (CLOCK_MONOTONIC, µs: the journal's records
# after it are this round's), per module [what, ns, result, program]: the reply's outcome (or error),
# finit_module()'s errno or insmod's exit status, and for gate the read program's runs and time
# during the call (null without the guard); and for gate each guard program's runs and time in all.
DRIVER = r'''
import ctypes, json, os, socket, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
NR_FINIT_MODULE, MODULE_INIT_COMPRESSED_FILE, NR_BPF = 313, 4, 321
BPF_PROG_GET_NEXT_ID, BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 11, 13, 15
# struct bpf_prog_info (Linux 6.12): name at 64, run_time_ns and run_cnt at 192 and 200.
PROG_INFO_SIZE = 232
READ_PROGRAM = sys.argv[1]
now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)
start = now() // 1000
out, progs = [], {}

def call(s, buf, method, parameters):
    s.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(1 << 16)
        if not chunk:
            sys.exit("modgated closed the connection")
        buf += chunk
    reply, _, buf = buf.partition(b"\0")
    return json.loads(reply), buf

def bpf(cmd, attr):
    return libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))

def program_fds():
    """{name: fd} of the guard's programs, by their ids as bpftool gets them, but without its look at
    their maps, which the guard refuses and records. The kernel keeps 15 characters of a name."""
    fds, next_id = {}, 0
    while True:
        attr = (ctypes.c_uint32 * 36)(next_id)
        if bpf(BPF_PROG_GET_NEXT_ID, attr) < 0:
            return fds
        next_id = attr[1]
        fd = bpf(BPF_PROG_GET_FD_BY_ID, (ctypes.c_uint32 * 36)(next_id))
        if fd < 0:
            continue
        name = info(fd)[64:80].split(b"\0")[0].decode()
        if name.startswith("modgate_"):
            fds[name] = fd
        else:
            os.close(fd)

def info(fd):
    buf = ctypes.create_string_buffer(PROG_INFO_SIZE)
    attr = (ctypes.c_uint32 * 36)(fd, PROG_INFO_SIZE)
    ctypes.c_uint64.from_buffer(attr, 8).value = ctypes.addressof(buf)
    if bpf(BPF_OBJ_GET_INFO_BY_FD, attr) < 0:
        sys.exit("BPF_OBJ_GET_INFO_BY_FD: errno %d" % ctypes.get_errno())
    return buf.raw

def stats(fd):
    """[run_cnt, run_time_ns] of a program (kernel.bpf_stats_enabled=1)."""
    run_time_ns, run_cnt = struct.unpack_from("QQ", info(fd), 192)
    return [run_cnt, run_time_ns]

def minus(a, b):
    return [a[0] - b[0], a[1] - b[1]]

what, args = sys.argv[2], sys.argv[3:]
if what == "gate":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.connect("/run/modgate/io.modgate")
    # Not timed: the connection's first call (the peer's identity) and the instance's first lookup.
    r, buf = call(s, b"", "io.modgate.Manager.Load", {"name": args[0]})
    fds = program_fds()
    read = fds.get(READ_PROGRAM)
    before = {n: stats(fd) for n, fd in fds.items()}
    for name in args[1:]:
        p0 = stats(read) if read else None
        t0 = now()
        r, buf = call(s, buf, "io.modgate.Manager.Load", {"name": name})
        t1 = now()
        out.append([name, t1 - t0, r["error"] if "error" in r else r["parameters"]["modules"][-1]["outcome"],
                    minus(stats(read), p0) if read else None])
    progs = {n: minus(stats(fd), before[n]) for n, fd in fds.items()}
elif what == "finit":
    for path in args:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        flags = MODULE_INIT_COMPRESSED_FILE if path.endswith((".xz", ".zst", ".gz")) else 0
        t0 = now()
        r = libc.syscall(NR_FINIT_MODULE, fd, b"", flags)
        t1 = now()
        out.append([path, t1 - t0, ctypes.get_errno() if r != 0 else 0])
        os.close(fd)
else:
    for path in args:
        t0 = now()
        r = subprocess.run(["insmod", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        t1 = now()
        out.append([path, t1 - t0, r.returncode])
print(json.dumps({"start": start, "samples": out, "programs": progs}))
'''


def not_run(why):
    return [Figure(8, "guard's cost per load (VM)", "not run", "", met="not run", note=why)], {"not_run": why}


def run(b, vm=False):
    if not vm:
        return not_run("needs --vm")
    prepared = vm_prepare(b, "s8-guard")
    if isinstance(prepared, str):
        return not_run(prepared)
    machine, manifest, workdir, accel, accel_why = prepared
    m = machine.Machine(manifest, workdir, accel)
    try:
        m.boot(machine.BOOT_TIMEOUT[accel])
        lsm = m.sh("cat /sys/kernel/security/lsm").out.strip()
        if "bpf" not in lsm.split(","):
            return not_run("the guest's kernel runs no BPF LSM (%s)" % lsm)
        got = measure(m)
        m.collect()
    finally:
        m.close()
    got.update({"accel": accel, "accel_why": accel_why, "plot": lambda path: plot(path, got)})
    return figures(got, accel), got


def driver(m, args, timeout=300):
    """DRIVER in the guest, given the name of the guard's read program as the kernel keeps it."""
    return m.sh("python3 - %s %s" % (READ_PROGRAM[:15], args), timeout=timeout, stdin=DRIVER).json()


def status_guard(m):
    out = m.sh("varlinkctl call /run/modgate/io.modgate io.modgate.Manager.Status '{}'").json()
    return out["guard"]


def switch(m, mode):
    """modgated restarted with [Guard] Mode=mode, and never idle during the rounds; checked through
    Status, and for off through the kernel's list of BPF programs (a guard left attached would count)."""
    m.sh("mkdir -p %s && printf '[Guard]\\nMode=%s\\n[Manager]\\nIdleExitSec=infinity\\n' >%s && "
         "systemctl restart modgated.service" % (os.path.dirname(DROPIN), mode, DROPIN), timeout=RESTART_TIMEOUT)
    g = status_guard(m)
    if g["mode"] != mode or g["configured"] != mode or g["attached"] != (mode != "off"):
        raise RuntimeError("[Guard] Mode=%s, but Status says %s" % (mode, g))
    # The kernel frees a detached program after its link's last fd is closed, in the background (RCU):
    # under TCG that takes seconds.
    t0 = time.monotonic()
    while True:
        programs = guard_programs(m)
        if (mode == "off") == (not programs) or time.monotonic() - t0 > DETACH_TIMEOUT:
            break
        time.sleep(1)
    if (mode == "off") != (not programs):
        raise RuntimeError("[Guard] Mode=%s, but after %.0f s the kernel has the programs %s" % (
            mode, time.monotonic() - t0, programs))
    return time.monotonic() - t0


def guard_programs(m):
    return sorted(p["name"] for p in m.sh("bpftool -j prog show").json() if p.get("name", "").startswith("modgate_"))


def load_refusals(m, start):
    """The guard's records of module loads since start (bpftool's look at its maps, in switch(), makes
    records of its own)."""
    return [e for e in m.journal("MESSAGE_ID=" + GUARD_RECORD, "_BOOT_ID=" + m.boot_id)
            if int(e["__MONOTONIC_TIMESTAMP"]) >= start
            and e.get("MODGATE_SYSCALL") in ("finit_module", "init_module")]


def unload(m, names):
    m.sh("rmmod %s" % " ".join(names))
    live = set(m.sh("cut -d' ' -f1 /proc/modules").out.split())
    if live & set(names):
        raise RuntimeError("still live after rmmod: %s" % sorted(live & set(names)))


def gate_round(m, mode, names, warm):
    res = driver(m, "gate %s %s" % (warm, " ".join(names)), timeout=600)
    bad = [s for s in res["samples"] if s[2] != "loaded"]
    if bad:
        raise RuntimeError("%s round: not loaded: %s" % (mode, bad))
    recs = {e["MODGATE_MODULE"]: e for e in m.journal("MODGATE_OUTCOME=loaded", "_SYSTEMD_UNIT=modgated.service",
                                                     "_BOOT_ID=" + m.boot_id)
            if int(e["__MONOTONIC_TIMESTAMP"]) >= res["start"] and e["MODGATE_MODULE"] in names}
    if sorted(recs) != sorted(names):
        raise RuntimeError("%s round: records for %d of %d loads" % (mode, len(recs), len(names)))
    # Every load was modgated's, of the file it approved: the guard refused (or would have) none.
    refused = load_refusals(m, res["start"])
    if refused:
        raise RuntimeError("%s round: guard records %s" % (mode, [e.get("MESSAGE") for e in refused]))
    r = {"mode": mode, "wall_ns": [s[1] for s in res["samples"]],
         "check_ns": [int(recs[n]["MODGATE_CHECK_USEC"]) * 1000 for n in names],
         "init_ns": [int(recs[n]["MODGATE_INIT_USEC"]) * 1000 for n in names],
         "programs": res["programs"]}
    if mode != "off":
        # The guard's program on finit_module()'s read ran for each load, and its time (the kernel's
        # bpf_stats, around each run) is the in-kernel part of the guard's cost.
        each = [s[3] for s in res["samples"]]
        if any(p is None or p[0] != 1 for p in each):
            raise RuntimeError("%s round: %s's runs during each load: %s (all: %s)" % (
                mode, READ_PROGRAM, [p and p[0] for p in each], res["programs"]))
        runs, ns = res["programs"][READ_PROGRAM[:15]]
        r["program_ns"] = ns / runs
        r["program_runs"] = runs
        r["program_ns_each"] = [p[1] for p in each]
    unload(m, names)
    return r


def anchor_round(m, what, names, paths):
    res = driver(m, "%s %s" % (what, " ".join(paths)), timeout=600)
    bad = [s for s in res["samples"] if s[2] != 0]
    if bad:
        raise RuntimeError("%s: failed: %s" % (what, bad))
    unload(m, names)
    return {"mode": what, "wall_ns": [s[1] for s in res["samples"]]}


def enforce_refuses(m, path):
    """The guard in enforce refuses root's own finit_module() of a file of the set."""
    res = driver(m, "finit %s" % path)
    if res["samples"][0][2] != 1:
        raise RuntimeError("enforce: root's finit_module() of %s gave errno %s, not EPERM" % (
            path, res["samples"][0][2]))


def measure(m):
    """The rounds, in order: [{"mode", "cycle", "wall_ns", and for modgated's rounds "check_ns", "init_ns",
    "programs", and with the guard "program_ns" (its read program's time per run)}]."""
    release = m.sh("uname -r").out.strip()
    dep = {}
    for line in m.sh("cat /usr/lib/modules/%s/modules.dep" % release).out.splitlines():
        path, _, rest = line.partition(":")
        base = path.rsplit("/", 1)[-1]
        dep[base[:base.index(".ko")].replace("-", "_")] = (path, rest.split())
    live = m.sh("cut -d' ' -f1 /proc/modules").out.split()
    names = [n for n in MODULES if n in dep and not dep[n][1] and n not in live]
    if len(names) < 20:
        raise RuntimeError("only %d of the leaf modules are there and not loaded: %s" % (len(names), names))
    paths = ["/usr/lib/modules/%s/%s" % (release, dep[n][0]) for n in names]
    # What the kernel hashes: the file as it is, compressed.
    sizes = [int(x) for x in m.sh("stat -L -c %%s %s" % " ".join(paths)).out.split()]
    warm = live[0]              # a live module: the warm-up call is answered without a load
    # Each BPF program's run count and time (two clock reads around each run, in every mode alike).
    m.sh("sysctl -q -w kernel.bpf_stats_enabled=1")
    rounds = []
    for cycle in range(CYCLES):
        for i in range(len(MODES)):
            mode = MODES[(cycle + i) % len(MODES)]
            gone = switch(m, mode)
            r = gate_round(m, mode, names, warm)
            r["cycle"] = cycle + 1
            rounds.append(r)
            line = "    cycle %d, guard %-10s: per load %s client, %s init, %s checks" % (
                cycle + 1, mode, ms(statistics.median(r["wall_ns"])), ms(statistics.median(r["init_ns"])),
                ms(statistics.median(r["check_ns"])))
            if mode == "off":
                r["detached_after_s"] = gone
                line += "; programs gone %.1f s after the restart" % gone
                for what in ("finit", "insmod"):
                    a = anchor_round(m, what, names, paths)
                    a["cycle"] = cycle + 1
                    rounds.append(a)
                    line += "; %s %s" % (what, ms(statistics.median(a["wall_ns"])))
            else:
                line += "; %s %s a run (%d runs)" % (READ_PROGRAM, ms(r["program_ns"]), r["program_runs"])
                if mode == "enforce":
                    enforce_refuses(m, paths[0])
            print(line + " (medians of %d loads)" % len(names), flush=True)
    m.sh("sysctl -q -w kernel.bpf_stats_enabled=0; rm -f %s && systemctl restart modgated.service" % DROPIN,
         timeout=RESTART_TIMEOUT)
    return {"modules": names, "sizes": sizes, "rounds": rounds}


def ms(ns):
    return "%.2f ms" % (ns / 1e6)


def pooled(rounds, mode, key):
    return [v for r in rounds if r["mode"] == mode for v in r.get(key, ())]


def of_cycle(rounds, cycle, mode):
    return next(r for r in rounds if r["cycle"] == cycle and r["mode"] == mode)


def figures(got, accel):
    rounds = got["rounds"]
    med = {(mode, key): statistics.median(pooled(rounds, mode, key))
           for mode in MODES for key in ("wall_ns", "check_ns", "init_ns")}
    for what in ("finit", "insmod"):
        med[(what, "wall_ns")] = statistics.median(pooled(rounds, what, "wall_ns"))
    n = len(rounds[0]["wall_ns"])
    note = "medians of %d loads, %d rounds each, %s" % (n * CYCLES, CYCLES, accel)

    def fig(what, mode, key, anchor, anchor_mode, anchor_key, extra=None):
        v, a = med[(mode, key)], med[(anchor_mode, anchor_key)]
        # The same ratio within each cycle, whose rounds are a minute apart at most: the machine's
        # load moves the absolute times between cycles by more than the guard costs.
        per = sorted(statistics.median(of_cycle(rounds, c, mode)[key]) /
                     statistics.median(of_cycle(rounds, c, anchor_mode)[anchor_key]) for c in range(1, CYCLES + 1))
        return Figure(8, what, v, "ns", anchor=anchor, anchor_value=a,
                      note="%s; %+.2f ms; per cycle %s, median %.2f%s" % (
                          note, (v - a) / 1e6, "/".join("%.2f" % x for x in per), statistics.median(per),
                          "; " + extra if extra else ""))

    def program(mode):
        per = [statistics.median(r["program_ns_each"]) for r in rounds if r["mode"] == mode]
        v, a = statistics.median(pooled(rounds, mode, "program_ns_each")), med[("off", "init_ns")]
        return Figure(8, "%s per load, in the kernel, %s" % (READ_PROGRAM, mode), v, "ns",
                      anchor="init, guard off", anchor_value=a,
                      note="kernel.bpf_stats_enabled, one run per load; per round %s; the caller, the file and "
                      "the SHA-256 (bpf_ima_file_hash) of its %.1f KiB (median)" % (
                          "/".join(ms(x) for x in per), statistics.median(got["sizes"]) / 1024))

    def per_kib(mode):
        # The hash reads the whole file: a line through (size, time) of every load says what a KiB costs
        # and what the rest of the program does (the intercept).
        xs = [size / 1024 for r in rounds if r["mode"] == mode for size in got["sizes"]]
        ys = pooled(rounds, mode, "program_ns_each")
        slope, intercept = numpy.polyfit(xs, ys, 1)
        big = [y for x, y in zip(xs, ys) if x == max(xs)]
        return Figure(8, "%s per KiB of the file, %s" % (READ_PROGRAM, mode), slope, "ns",
                      note="least squares over %d loads of %.1f to %.1f KiB: %s + %s a KiB; the largest file, "
                      "%.0f KiB, %s (median)" % (len(ys), min(xs), max(xs), fmt(intercept, "ns"), fmt(slope, "ns"),
                                                 max(xs), fmt(statistics.median(big), "ns")))

    return [
        fig("per load, client wall, guard enforce", "enforce", "wall_ns", "guard off", "off", "wall_ns"),
        fig("per load, client wall, guard permissive", "permissive", "wall_ns", "guard off", "off", "wall_ns"),
        fig("per load, daemon init, guard enforce", "enforce", "init_ns", "guard off", "off", "init_ns",
            "approval, finit_module() with the guard's program, withdrawal"),
        fig("per load, daemon init, guard permissive", "permissive", "init_ns", "guard off", "off", "init_ns"),
        fig("per load, daemon checks, guard enforce", "enforce", "check_ns", "guard off", "off", "check_ns",
            "the guard has no part in them: the noise"),
        program("enforce"),
        program("permissive"),
        per_kib("enforce"),
        fig("per load, client wall, guard off", "off", "wall_ns", "finit_module()", "finit", "wall_ns"),
        fig("per load, client wall, enforce, vs the floor", "enforce", "wall_ns", "finit_module()", "finit",
            "wall_ns"),
        fig("per load, insmod (an exec), guard off", "insmod", "wall_ns", "finit_module()", "finit", "wall_ns"),
    ]


def plot(path, got):
    rounds = got["rounds"]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(18, 5))
    kinds = list(MODES) + ["finit", "insmod"]
    ax[0].boxplot([[v / 1e6 for v in pooled(rounds, k, "wall_ns")] for k in kinds], showfliers=False)
    ax[0].set_xticks(range(1, len(kinds) + 1), ["modgated\nguard " + k for k in MODES] +
                     ["finit_module()\nguard off", "insmod\nguard off"])
    ax[0].set(title="per load, wall time in the guest's client", ylabel="ms")
    data, labels = [], []
    for key in ("init_ns", "check_ns"):
        for mode in MODES:
            data.append([v / 1e6 for v in pooled(rounds, mode, key)])
            labels.append("%s\n%s" % (key[:-3], mode))
    ax[1].boxplot(data, showfliers=False)
    ax[1].set_xticks(range(1, len(labels) + 1), labels)
    ax[1].set(title="per load, modgated's record: init (approval + finit_module) and checks", ylabel="ms")
    for mode, color in (("permissive", "tab:orange"), ("enforce", "tab:red")):
        xs = [size / 1024 for r in rounds if r["mode"] == mode for size in got["sizes"]]
        ax[2].scatter(xs, [v / 1e6 for v in pooled(rounds, mode, "program_ns_each")], s=8, color=color, label=mode)
    ax[2].set(title="%s per load (bpf_stats), by the file's size" % READ_PROGRAM, xlabel="KiB (compressed)",
              ylabel="ms")
    ax[2].set_ylim(bottom=0)
    ax[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
