#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The fault matrix of issue 13 that the other suites leave open (docs/architecture.md lists where
each case of the matrix is tested): a module file replaced by rename while requests run, a writer
holding it open (ETXTBSY, as the kernel's deny_write_access()), a module index that goes missing or
corrupt under a running daemon, every errno finit_module() can return, 5,000 connections from one
uid, a daemon short of file descriptors, a client that sends one byte a second, a module whose init
hangs, SIGKILL during a load, and a file written in place after it was checked ahead of its load
(while its dependency loaded). Each case asserts the reply, the journal record where a decision
is made, and that nothing was loaded or lost: the shim's record of finit_module() calls, and a
daemon that still serves root afterwards.

Only the module syscalls are faked (test/shim), over a private /sys/module; the shim records the
SHA-256 of the bytes it read from the fd it was handed, and answers ETXTBSY as deny_write_access()
does, from the kernel's own count of writers (a read lease on the fd fails while there is one)."""

import errno
import hashlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
LOAD = M + "Load"
GETINFO = "org.varlink.service.GetInfo"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
CONF = "/etc/modgate/modgate.conf"
VIRTIO_NET_MODALIAS = "virtio:d00000001v00001AF4"
OUTSIDE_ID = "768173c3df9f4d60887b5916985cefb3"

# Every errno finit_module() can give that test-requests.py (case 13) does not inject, with the class
# the record must give it (docs/journal.md, MODGATE_ERRNO_CLASS). Where each comes from in Linux
# 6.12: EACCES a security module's kernel_read_file hook (IMA appraisal, SELinux); EINVAL flags,
# parameters, a bad compressed stream, an ELF check; EBADF an fd that is not open or not readable;
# EFAULT a bad parameter pointer; EFBIG a file over the size kernel_read_file() takes; ENOMEM and
# ENOSPC the module's memory; EOPNOTSUPP no in-kernel decompression; ENOSYS no module support;
# EBUSY a concurrent load of the name that failed, or a module going; ETIMEDOUT a symbol's module
# that never finished its init; EINTR a signal while waiting for a concurrent load; EKEYEXPIRED and
# ENOPKG the signature check; EAGAIN and ENXIO, like any errno, the module's own init.
ERRNO_CLASSES = [
    (errno.EACCES, "refused"), (errno.EINVAL, "format"), (errno.EBADF, "internal"), (errno.EFAULT, "internal"),
    (errno.EFBIG, "format"), (errno.ENOMEM, "resource"), (errno.ENOSPC, "resource"), (errno.EOPNOTSUPP, "format"),
    (errno.ENOSYS, "refused"), (errno.EBUSY, "busy"), (errno.ETIMEDOUT, "busy"), (errno.EINTR, "busy"),
    (errno.EKEYEXPIRED, "signature"), (errno.ENOPKG, "signature"), (errno.EAGAIN, "init"), (errno.ENXIO, "init"),
]
GENERIC_REASON = "the module's init failed"


def ERRNO_NAME(e):
    """The name strerrorname_np() gives, which the daemon uses: Python calls 95 ENOTSUP."""
    return "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode[e]

CROWD = 5000
PER_USER_DEFAULT = 16           # MaxConnectionsPerUser='s default (config.h)
LOW_NOFILE = 32
ROOT_WAIT_MAX_S = 5.0           # the longest root may wait for an answer while the crowd connects
CPU_BUDGET_S = 0.3              # the most CPU time a daemon may use in CPU_WINDOW_S while it waits
CPU_WINDOW_S = 3.0
SLOW_CALL = b'{"method":"io.modgate.Manager.Status"}\0'
IDLE_SEC = 3                    # IdleConnectionSec= of the main daemon


wait_for = h.wait_for


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hung_up(sock, timeout):
    """Whether the daemon closed the connection within timeout seconds, with nothing sent."""
    r, _, _ = select.select([sock], [], [], timeout)
    if not r:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def serves_root(d):
    """The daemon lives and answers a new root connection."""
    assert d.proc.poll() is None, d.stderr_text()[-2000:]
    assert h.ok(d.call(GETINFO))["vendor"] == "modgate"


FLOOD = r"""
import socket, sys, time, select
address, n = sys.argv[1], int(sys.argv[2])
socks = []
start = time.monotonic()
while len(socks) < n:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    while True:
        try:
            s.connect(address)
            break
        except BlockingIOError:
            time.sleep(0.001)           # the listen backlog is full: the daemon is behind
    socks.append(s)
took = time.monotonic() - start

def alive():
    n = 0
    for s in socks:
        p = select.poll()
        p.register(s, select.POLLIN)
        if not p.poll(0):
            n += 1
            continue
        try:
            if s.recv(1, socket.MSG_DONTWAIT) != b"":
                n += 1
        except (BlockingIOError, ConnectionResetError):
            pass
    return n

prev = -1
for _ in range(100):
    time.sleep(0.3)
    cur = alive()
    if cur == prev:
        break
    prev = cur
print(cur, "%.2f" % took, flush=True)
sys.stdin.read()
"""


class SlowClient(threading.Thread):
    """A valid call sent one byte every interval seconds; keeps the reply, or None when hung up."""

    def __init__(self, address, message, interval):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(address)
        self.message = message
        self.interval = interval
        self.reply = None
        self.error = None
        self.sent = 0
        self.took = None

    def run(self):
        start = time.monotonic()
        try:
            for i in range(len(self.message)):
                self.sock.sendall(self.message[i:i + 1])
                self.sent += 1
                if i + 1 < len(self.message):
                    time.sleep(self.interval)
            self.sock.settimeout(30)
            buf = b""
            while not buf.endswith(b"\0"):
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
            self.reply = json.loads(buf[:-1]) if buf.endswith(b"\0") else None
        except OSError as e:
            self.error = e
        self.took = time.monotonic() - start
        self.sock.close()


def main():
    h.require_root()
    h.unshare_mounts()
    started = time.monotonic()

    tree = h.kernel_tree()
    deps = h.parse_modules_dep(tree)
    work = tempfile.mkdtemp(prefix="modgate-faults-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    trusted = h.mount_trusted_tree(tree, work)
    daemons = []

    pool = h.independent_modules(tree, "kernel/drivers/net/", exclude={"virtio_net", "net_failover", "failover"})
    race_mod, writer_mod, index_mod, hang_mod, *rest = pool
    errno_mods = dict(zip([e for e, _ in ERRNO_CLASSES], rest))
    rest = rest[len(ERRNO_CLASSES):]
    others, (before_kill, killed, crowd_mod, fd_mod) = rest[:3], rest[3:7]
    term_mods = rest[7:10]
    assert len(errno_mods) == len(ERRNO_CLASSES) and len(term_mods) == 3, \
        "not enough independent modules in the tree"

    def daemon(name, root=trusted, env=None, args=(), conf="", wrapper=(), store=None):
        os.makedirs("/run/modgate", exist_ok=True)
        with open(CONF, "w") as f:
            f.write(conf)
        d = h.Daemon(work, name, root, extra_env=env, args=args, wrapper=wrapper, store=store)
        daemons.append(d)
        assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        return d

    def finits(d, name):
        return h.finit_records(d.shim_records(), {name})

    def records(d, name):
        return journal.records(MODGATE_MODULE=name, _PID=str(d.pid))

    # A writable tree that the cases may change, vouched for by its manifest (tmpfs is never
    # read-only evidence).
    rw = os.path.join(work, "rw")
    os.makedirs(rw)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", rw)
    rw_tree = os.path.join(rw, "tree")
    h.copy_tree(tree, rw_tree)
    rw_manifest = h.write_manifest(rw_tree, os.path.join(work, "rw.sha256"))

    main_d = daemon("main", conf="[Manager]\nIdleConnectionSec=%d\n" % IDLE_SEC)
    rw_d = daemon("rw", rw_tree, args=("--manifest=" + rw_manifest, "--evidence=manifest"))
    # The slow client talks to the main daemon while every other case runs against it and the others.
    slow = SlowClient(main_d.address, SLOW_CALL, 1.0)
    slow.start()
    print("# set-up took %.1f s" % (time.monotonic() - started), flush=True)

    # --- bad input that the other suites leave out ------------------------------------------------

    def case_bad_input():
        n = len(main_d.shim_records())
        for name in (".", "..", "$(reboot)", "a;b", "--force", "a\tb", "\x01x", "x\x7f", " x"):
            assert h.error_of(main_d.load(name), "InvalidName") == {"name": name}, name
        # Quotes in a modalias are a literal key like any other: nothing matches.
        for alias in ('pci:"x"', "pci:'x'"):
            assert h.error_of(main_d.call(LOAD, {"modalias": alias}), "ModuleNotFound") == {"modalias": alias}
        # Not UTF-8, trailing garbage, one brace too many: hung up on, no reply.
        for raw in (b'{"method":"io.modgate.Manager.Load","parameters":{"name":"\xff\xfe"}}',
                    b'{"method":"org.varlink.service.GetInfo"} trailing',
                    b'{"method":"org.varlink.service.GetInfo","parameters":{}}}'):
            c = h.Varlink(main_d.address, timeout=10)
            try:
                c.sock.sendall(raw + b"\0")
                assert c.sock.recv(65536) == b"", raw
            finally:
                c.close()
        assert main_d.shim_records()[n:] == []
        serves_root(main_d)

    t.case("names with '.', '..', shell and option characters, whitespace and control characters: InvalidName; "
           "quotes in a modalias match nothing; non-UTF-8 and trailing garbage are hung up on", case_bad_input)

    # --- a: a module file replaced by rename while requests run ----------------------------------

    def case_rename_race():
        rel = deps[race_mod][0]
        path = os.path.join(rw_tree, rel)
        with open(path, "rb") as f:
            good = f.read()
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0xff                 # the shim does not decompress: still loadable bytes
        bad = bytes(bad)
        good_sha, bad_sha = hashlib.sha256(good).hexdigest(), hashlib.sha256(bad).hexdigest()
        stop = threading.Event()
        swaps = [0]

        def racer():
            # As a package manager replaces a file: a new inode written aside, renamed over the path.
            tmp = path + ".new"
            while not stop.is_set():
                for data in (bad, good):
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.chmod(tmp, 0o644)
                    os.rename(tmp, path)
                    swaps[0] += 1
                    time.sleep(0.002)

        th = threading.Thread(target=racer)
        th.start()
        outcomes = []
        try:
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and (len(outcomes) < 40 or len(set(outcomes)) < 2):
                reply = rw_d.load(race_mod)
                if "error" in reply:
                    p = h.error_of(reply, "UntrustedOrigin")
                    assert "manifest: the file's SHA-256 is not the manifest's" in p["reason"], p
                    outcomes.append("denied")
                    # A denial is remembered per path until the policy or the index changes.
                    h.ok(rw_d.call(M + "Reload"))
                    # Read as the service manager would: its datagrams would fill the socket's queue.
                    assert rw_d.wait_notify("READY=1", timeout=10)
                else:
                    assert [m["outcome"] for m in h.modules_of(reply)] == ["loaded"], reply
                    outcomes.append("loaded")
                    h.ok(rw_d.call(M + "Unload", {"name": race_mod}))
        finally:
            stop.set()
            th.join()
            with open(path, "wb") as f:
                f.write(good)
        loaded, denied = outcomes.count("loaded"), outcomes.count("denied")
        print("# %d loads while the file was replaced %d times: %d loaded, %d refused"
              % (len(outcomes), swaps[0], loaded, denied), flush=True)
        assert loaded and denied, "the race was not exercised: %s" % outcomes

        calls = finits(rw_d, race_mod)
        assert len(calls) == loaded and all(c["result"] == 0 for c in calls), calls
        recs = [r for r in records(rw_d, race_mod) if r.get("MODGATE_OUTCOME") in ("loaded", "denied")]
        by_inode = {}
        for r in recs:
            if r["MODGATE_OUTCOME"] == "loaded":
                by_inode.setdefault(int(r["MODGATE_INODE"]), []).append(r)
            elif r.get("MODGATE_CACHED") != "1":
                # Refused on the bytes it read: the other ones.
                assert r["MODGATE_SHA256"] == bad_sha, r
        assert sum(len(v) for v in by_inode.values()) == loaded, recs
        for c in calls:
            # What the kernel got is what was verified: the shim's hash of the fd it was handed is
            # the record's, and the manifest's.
            assert c["sha256"] == good_sha, c
            [r] = [r for r in by_inode.get(c["ino"], []) if r["MODGATE_SHA256"] == c["sha256"]][:1] or [None]
            assert r is not None, (c, by_inode.get(c["ino"]))
        serves_root(rw_d)

    t.case("a: a module file replaced by rename during loads: each is refused or loads the verified bytes (the "
           "shim's SHA-256 of the fd is the record's)", case_rename_race)

    # --- b: a writer holding the file open -------------------------------------------------------

    def case_writer():
        path = os.path.join(rw_tree, deps[writer_mod][0])
        # Opened by root, held by a process of another uid: the kernel counts writers, not owners.
        with open(path, "ab") as f:
            writer = subprocess.Popen([*NOBODY, "sleep", "60"], stdout=f)
        try:
            p = h.error_of(rw_d.load(writer_mod), "LoadFailed")
            assert p["module"] == writer_mod and p["errnoName"] == "ETXTBSY", p
            assert p["reason"] == "the file is open for writing", p
            [r] = records(rw_d, writer_mod)
            assert (r["MODGATE_OUTCOME"], r["MODGATE_ERRNO_NAME"], r["MODGATE_ERRNO_CLASS"]) == \
                ("failed", "ETXTBSY", "busy"), r
            [c] = finits(rw_d, writer_mod)
            assert c["result"] == -errno.ETXTBSY and h.module_state(writer_mod) is None, c
        finally:
            writer.kill()
            writer.wait()
        # The writer gone, the same file loads.
        mods = h.modules_of(rw_d.load(writer_mod))
        assert [m["outcome"] for m in mods] == ["loaded"], mods
        assert [c["result"] for c in finits(rw_d, writer_mod)] == [-errno.ETXTBSY, 0]
        serves_root(rw_d)

    t.case("b: a writer holding the module file open: LoadFailed ETXTBSY (class busy), nothing loaded; loads "
           "once it is gone", case_writer)

    # --- c: the module index, missing or corrupt under a running daemon ---------------------------

    def replace_file(path, data):
        """As depmod writes an index: aside, then renamed into place (a new inode, a new mtime)."""
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.chmod(path + ".tmp", 0o644)
        os.rename(path + ".tmp", path)

    def case_index():
        alias_bin = os.path.join(rw_tree, "modules.alias.bin")
        with open(alias_bin, "rb") as f:
            orig = f.read()
        n = len(rw_d.shim_records())
        bad_cases = [
            ("alias.bin garbage after its header", orig[:12] + bytes((b * 7 + 13) & 0xff for b in range(len(orig) - 12))),
            ("alias.bin cut in half", orig[:len(orig) // 2]),
            ("alias.bin empty", b""),
            ("alias.bin of zeros", b"\0" * len(orig)),
        ]
        seen = {}
        for what, data in bad_cases:
            replace_file(alias_bin, data)
            reply = rw_d.call(LOAD, {"modalias": VIRTIO_NET_MODALIAS})
            seen[what] = reply
            p = h.error_of(reply, "LoadFailed")
            assert p["module"] == VIRTIO_NET_MODALIAS and "module index" in p["reason"], (what, p)
            serves_root(rw_d)
            assert h.ok(rw_d.call(M + "Status"))["version"]
        replace_file(alias_bin, orig)
        # Restored: resolved and loaded again.
        mods = h.modules_of(rw_d.call(LOAD, {"modalias": VIRTIO_NET_MODALIAS}))
        assert "virtio_net" in [m["name"] for m in mods if m["outcome"] == "loaded"], mods

        # modules.dep and modules.dep.bin gone, as after a depmod that died.
        for f in ("modules.dep", "modules.dep.bin"):
            os.rename(os.path.join(rw_tree, f), os.path.join(rw_tree, f + ".away"))
        try:
            p = h.error_of(rw_d.load(index_mod), "LoadFailed")
            assert p["module"] == index_mod and "module index" in p["reason"] and p["errnoName"] == "ENOENT", p
            serves_root(rw_d)
        finally:
            for f in ("modules.dep", "modules.dep.bin"):
                os.rename(os.path.join(rw_tree, f + ".away"), os.path.join(rw_tree, f))
        # The daemon's log (its standard error here; the journal under systemd) names the file.
        logged = [line for line in rw_d.stderr_text().splitlines() if "Module index" in line or
                  "Failed to reload the module index" in line]
        for what in ("modules.alias.bin is corrupt or truncated", "Failed to reload the module index"):
            assert any(what in line for line in logged), (what, logged)
        for line in logged:
            print("# " + line, flush=True)
        assert [c for c in rw_d.shim_records()[n:] if c.get("name") != "virtio_net" and
                c.get("name") not in ("net_failover", "failover")] == [], rw_d.shim_records()[n:]
        mods = h.modules_of(rw_d.load(index_mod))
        assert [m["outcome"] for m in mods] == ["loaded"], mods

    t.case("c: a corrupt, truncated or empty modules.alias.bin and a missing modules.dep: LoadFailed naming the "
           "index, logged, nothing loaded, served afterwards", case_index)

    # --- d: every errno of finit_module() --------------------------------------------------------

    fail_env = ",".join("%s:%d" % (n, e) for e, n in errno_mods.items())
    fail_d = h.Lazy(lambda: daemon("errno", env={"MODGATE_SHIM_FAIL": fail_env}))

    def case_errnos():
        bad = []
        for e, cls in ERRNO_CLASSES:
            name = errno_mods[e]
            p = h.error_of(fail_d.load(name), "LoadFailed")
            got = (p.get("errno"), p.get("errnoName"))
            if got != (e, ERRNO_NAME(e)) or p["module"] != name:
                bad.append("%s: reply %s" % (errno.errorcode[e], p))
            if cls != "init" and p.get("reason") == GENERIC_REASON:
                bad.append("%s: the generic reason %r" % (errno.errorcode[e], p.get("reason")))
            recs = records(fail_d, name)
            got = [(r["MODGATE_OUTCOME"], r["MODGATE_ERRNO_NAME"], r.get("MODGATE_ERRNO_CLASS")) for r in recs]
            if got != [("failed", ERRNO_NAME(e), cls)]:
                bad.append("%s: record %s, expected class %s" % (errno.errorcode[e], got, cls))
            if h.module_state(name) is not None:
                bad.append("%s: %s is %s" % (errno.errorcode[e], name, h.module_state(name)))
            print("# %-11s %-9s %s" % (ERRNO_NAME(e), cls, p.get("reason")), flush=True)
        results = {c["name"]: c["result"] for c in h.finit_records(fail_d.shim_records())}
        assert results == {n: -e for e, n in errno_mods.items()}, results
        assert not bad, "\n".join(bad)
        serves_root(fail_d)

    t.case("d: every other errno of finit_module() is a named LoadFailed with its reason and "
           "MODGATE_ERRNO_CLASS, nothing loaded", case_errnos)

    # --- e: 5,000 connections from one uid -------------------------------------------------------

    def case_crowd():
        # The default MaxConnectionsPerUser= and IdleConnectionSec=: the crowd is silent, and held.
        d = daemon("crowd")
        os.chmod(d.address, 0o666)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < CROWD + 256:
            raise AssertionError("cannot test: RLIMIT_NOFILE's hard limit %d is below %d" % (hard, CROWD + 256))
        resource.setrlimit(resource.RLIMIT_NOFILE, (CROWD + 256, hard))
        fds_before = len(d.fds())
        flood = subprocess.Popen([*NOBODY, sys.executable, "-c", FLOOD, d.address, str(CROWD)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            # Root is served while the crowd connects.
            latencies = []
            while flood.poll() is None and not select.select([flood.stdout], [], [], 0)[0]:
                begin = time.monotonic()
                serves_root(d)
                latencies.append(time.monotonic() - begin)
                time.sleep(0.05)
            held, took = flood.stdout.readline().split()
            held = int(held)
            begin = time.monotonic()
            mods = h.modules_of(d.load(crowd_mod))
            load_s = time.monotonic() - begin
            assert [m["outcome"] for m in mods] == ["loaded"], mods
            status = h.ok(d.call(M + "Status"))
            cpu0 = cpu_seconds(d.pid)
            time.sleep(CPU_WINDOW_S)
            cpu = cpu_seconds(d.pid) - cpu0
            print("# %d connections from uid 65534 in %s s: %d held, the rest hung up; root's GetInfo at most "
                  "%.0f ms (%d calls), its Load %.0f ms; %d connections in Status; %.2f s CPU in %.0f s held"
                  % (CROWD, took, held, 1000 * max(latencies or [0]), len(latencies), 1000 * load_s,
                     status["connections"], cpu, CPU_WINDOW_S), flush=True)
            assert held == PER_USER_DEFAULT, "uid 65534 holds %d connections" % held
            # Root's connection waits in the listen backlog behind the crowd's, each accepted and
            # hung up on in turn: served, within a bound.
            assert latencies and max(latencies) < ROOT_WAIT_MAX_S and load_s < ROOT_WAIT_MAX_S, (latencies, load_s)
            assert cpu < CPU_BUDGET_S, "%.2f s of CPU while connections were held" % cpu
        finally:
            flood.stdin.close()
            flood.wait(timeout=60)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        # They went away: all is as before.
        wait_for("the crowd's connections to go", lambda: h.ok(d.call(M + "Status"))["connections"] <= 3)
        r = h.call_as(NOBODY, d.address, GETINFO, {})
        assert h.ok(r)["vendor"] == "modgate", r
        assert len(d.fds()) <= fds_before + 2, (fds_before, d.fds())
        assert [c["result"] for c in finits(d, crowd_mod)] == [0]

    t.case("e: %d connections from one uid: MaxConnectionsPerUser= of them held, root served meanwhile, all "
           "normal once they go" % CROWD, case_crowd)

    # --- f: a daemon short of file descriptors ---------------------------------------------------

    def case_descriptors():
        d = daemon("nofile", wrapper=("prlimit", "--nofile=%d:%d" % (LOW_NOFILE, LOW_NOFILE), "--"))
        with open("/proc/%d/limits" % d.pid) as f:
            assert any(line.startswith("Max open files") and line.split()[3] == str(LOW_NOFILE) for line in f)
        conns = []
        try:
            for _ in range(4 * LOW_NOFILE):
                conns.append(h.Varlink(d.address, timeout=5))
            time.sleep(0.5)
            cpu0 = cpu_seconds(d.pid)
            time.sleep(CPU_WINDOW_S)
            cpu = cpu_seconds(d.pid) - cpu0
            nfds = len(os.listdir("/proc/%d/fd" % d.pid))
            answered = 0
            for c in conns:
                try:
                    c.sock.settimeout(2)
                    answered += "error" not in c.call(GETINFO)
                except (OSError, ConnectionError):
                    pass
            print("# %d connections to a daemon with %d fds: %d fds open, %d answered, %.2f s CPU in %.0f s"
                  % (len(conns), LOW_NOFILE, nfds, answered, cpu, CPU_WINDOW_S), flush=True)
            assert cpu < CPU_BUDGET_S, "%.2f s of CPU: a busy loop" % cpu
            assert nfds <= LOW_NOFILE and answered > 0, (nfds, answered)
        finally:
            for c in conns:
                c.close()
        # Recovered: new connections are served (hung up on until the daemon has seen the others
        # go), and a load opens its file.
        closed = time.monotonic()

        def serves():
            assert d.proc.poll() is None, d.stderr_text()[-2000:]
            try:
                return "error" not in d.call(GETINFO)
            except (ConnectionError, OSError):
                return False
        wait_for("the daemon to serve again", serves, timeout=15)
        print("# served again %.0f ms after the connections closed" % (1000 * (time.monotonic() - closed)),
              flush=True)
        mods = h.modules_of(d.load(fd_mod))
        assert [m["outcome"] for m in mods] == ["loaded"], mods
        assert [c["result"] for c in finits(d, fd_mod)] == [0]
        assert records(d, fd_mod)[0]["MODGATE_OUTCOME"] == "loaded"

    t.case("f: RLIMIT_NOFILE=%d and four times as many connections: no busy loop, served again once they close"
           % LOW_NOFILE, case_descriptors)

    # --- h: a module whose init hangs ------------------------------------------------------------

    release = os.path.join(work, "release-hang")

    def case_hang():
        d = daemon("hang", env={"MODGATE_SHIM_HANG": hang_mod, "MODGATE_SHIM_HANG_RELEASE": release},
                   args=("--workers=1",))
        stuck = h.AsyncVarlink(d.address)
        stuck.send(LOAD, {"name": hang_mod})
        try:
            wait_for("the init to start", lambda: h.module_state(hang_mod) == "coming")
            begin = time.monotonic()
            for name in others:
                mods = h.modules_of(d.load(name))
                assert [m["outcome"] for m in mods] == ["loaded"], mods
            took = time.monotonic() - begin
            status = h.ok(d.call(M + "Status"))
            loading = {x["module"]: x for x in status.get("loading", [])}
            assert hang_mod in loading and loading[hang_mod]["forUSec"] > 1000000, status
            assert not stuck.answered(0), "answered while its init hangs"
            out = subprocess.run([os.environ["MODGATECTL"], "--address=" + d.address, "status"], capture_output=True,
                                 text=True, timeout=30, env={"PATH": os.environ["PATH"]})
            assert out.returncode == 0 and [x for x in out.stdout.splitlines() if "Loading: " + hang_mod + " (for "
                                                in x], (out.stdout, out.stderr)
            notice = [line for line in d.stderr_text().splitlines() if "adding a worker" in line]
            assert notice and hang_mod in notice[0], notice
            print("# with Workers=1 and %s hanging, %d others loaded in %.1f s; Status: %s; %s"
                  % (hang_mod, len(others), took, loading[hang_mod], notice[0]), flush=True)
        finally:
            open(release, "w").close()
        mods = h.modules_of(stuck.receive())
        stuck.close()
        assert [m["outcome"] for m in mods] == ["loaded"], mods
        assert [c["result"] for c in finits(d, hang_mod)] == [0]
        assert [r["MODGATE_OUTCOME"] for r in records(d, hang_mod)] == ["loaded"]
        assert "loading" not in h.ok(d.call(M + "Status")) or not h.ok(d.call(M + "Status"))["loading"]

    t.case("h: a module whose init hangs: the others load, Status and the journal name it; it loads once it "
           "returns", case_hang)

    # --- i: SIGKILL during a load ----------------------------------------------------------------

    def case_sigkill():
        runtime = os.path.join(work, "runtime")
        os.makedirs(runtime, mode=0o700)
        env = {"RUNTIME_DIRECTORY": runtime}
        store = h.FdStore()     # the history outlives the process there, as in PID 1's
        first = daemon("killed", env=dict(env, MODGATE_SHIM_HANG=killed, MODGATE_SHIM_HANG_RELEASE=release + "-never"),
                       store=store)
        assert [m["outcome"] for m in h.modules_of(first.load(before_kill))] == ["loaded"]
        c = h.AsyncVarlink(first.address)
        c.send(LOAD, {"name": killed})
        wait_for("the init to start", lambda: h.module_state(killed) == "coming")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
        with raises(ConnectionError):
            c.receive()
        c.close()
        # The kernel goes on with an init whatever happens to its caller: the module is still coming.
        second = daemon("after-kill", env=env, store=store)
        c = h.AsyncVarlink(second.address)
        c.send(LOAD, {"name": killed})
        assert not c.answered(0.5), "answered while the module is still coming"
        h.set_module_state(killed, "live")
        mods = h.modules_of(c.receive())
        c.close()
        assert [m["outcome"] for m in mods] == ["already_loaded"], mods
        # Nothing loaded twice: the second instance never called finit_module() for either.
        assert finits(second, killed) == [] and finits(second, before_kill) == [], second.shim_records()
        assert [m["outcome"] for m in h.modules_of(second.load(before_kill))] == ["already_loaded"]
        assert finits(second, before_kill) == []
        # The history is intact: the first instance's load, and the interrupted one found live.
        listed = {e["module"]: e for e in h.ok(second.call(M + "List"))["modules"]}
        assert listed[before_kill]["outcome"] == "loaded" and listed[before_kill]["peerPid"] > 0, listed
        assert listed[killed]["outcome"] == "loaded_outside", listed
        assert "Skipped" not in second.stderr_text(), second.stderr_text()
        outside = journal.records(MESSAGE_ID=OUTSIDE_ID, _PID=str(second.pid), MODGATE_MODULE=killed)
        assert len(outside) == 1, outside
        print("# after SIGKILL: %s %s (%s), %s %s" % (before_kill, listed[before_kill]["outcome"],
              "history", killed, listed[killed]["outcome"]), flush=True)
        serves_root(second)

    t.case("i: SIGKILL during a load: the next instance waits for the coming module, loads nothing twice, and "
           "keeps the history", case_sigkill)

    # --- k: SIGTERM while loads are in flight -----------------------------------------------------

    def case_sigterm():
        # One worker: the first load is in its init when the signal comes, the other two wait for it.
        d = daemon("term", env={"MODGATE_SHIM_DELAY_MS": "800"}, args=("--workers=1",))
        conns = []
        for name in term_mods:
            c = h.AsyncVarlink(d.address)
            c.send(LOAD, {"name": name})
            conns.append(c)
        wait_for("the first init to start", lambda: h.module_state(term_mods[0]) == "coming")
        d.proc.send_signal(signal.SIGTERM)
        # Every caller is answered, the queued ones too, and each module is loaded once; then it exits 0.
        for name, c in zip(term_mods, conns):
            mods = h.modules_of(c.receive())
            c.close()
            assert [m["outcome"] for m in mods] == ["loaded"], (name, mods)
            assert len(finits(d, name)) == 1, d.shim_records()
        assert d.proc.wait(timeout=10) == 0, d.stderr_text()
        assert "Stopping once the 3 requests" in d.stderr_text(), d.stderr_text()

    t.case("k: SIGTERM while a load is in its init and two more wait for the worker: all three are "
           "answered, each loaded once, then the daemon exits 0", case_sigterm)

    # --- j: a module file checked while its dependency loads, changed before its own load --------

    soft = h.parse_modules_softdep(tree)
    used = set(pool)
    ahead = []
    for n, (rel, d) in sorted(deps.items()):
        if (len(d) == 1 and not deps[d[0]][1] and not {n, d[0]} & (used | soft) and
                rel.startswith("kernel/drivers/") and len(ahead) < 2):
            ahead.append((n, d[0]))
            used |= {n, d[0]}
    assert len(ahead) == 2, "no two modules with one dependency of their own in the tree"

    def case_checked_ahead():
        # While what a module needs loads, its own file is checked on an idle worker (Status counts
        # it); at its load the path is opened again and every check made on what is there then. A
        # file replaced by a copy of itself (a package manager's rename) loads, from the new inode;
        # bytes written in place meanwhile are refused and never reach the kernel.
        d = daemon("ahead", rw_tree, env={"MODGATE_SHIM_DELAY_MS": "2500"},
                   args=("--manifest=" + rw_manifest, "--evidence=manifest"))
        for (mod, dep), change in zip(ahead, (False, True)):
            path = os.path.join(rw_tree, deps[mod][0])
            with open(path, "rb") as f:
                good = f.read()
            c = h.AsyncVarlink(d.address)
            try:
                c.send(LOAD, {"name": mod})
                h.wait_for("%s to be checked ahead" % mod,
                           lambda: h.ok(d.call(M + "Status"))["checkedAheadJobs"] == 1)
                # Before the dependency is live: it may still be in its own checks (absent) or coming.
                assert h.module_state(dep) != "live", "checked only after %s was live" % dep
                if change:
                    with open(path, "r+b") as f:
                        f.seek(len(good) // 2)
                        f.write(bytes([good[len(good) // 2] ^ 0xff]))
                else:
                    with open(path + ".new", "wb") as f:
                        f.write(good)
                    os.rename(path + ".new", path)
                ino = os.stat(path).st_ino
                reply = c.receive()
            finally:
                c.close()
                with open(path, "wb") as f:
                    f.write(good)
            finit = finits(d, mod)
            [rec] = [r for r in records(d, mod) if r.get("MODGATE_OUTCOME") in ("loaded", "denied")]
            if change:
                p = h.error_of(reply, "UntrustedOrigin")
                assert p["module"] == mod and "manifest: the file's SHA-256 is not the manifest's" in p["reason"], p
                assert finit == [] and rec["MODGATE_OUTCOME"] == "denied", (finit, rec)
                assert rec["MODGATE_SHA256"] != hashlib.sha256(good).hexdigest(), rec
            else:
                assert [(m["name"], m["outcome"]) for m in h.modules_of(reply)] == [(dep, "loaded"), (mod, "loaded")], reply
                [call] = finit
                assert call["ino"] == ino and int(rec["MODGATE_INODE"]) == ino, (ino, call, rec)
                assert call["sha256"] == rec["MODGATE_SHA256"] == hashlib.sha256(good).hexdigest(), (call, rec)
            assert h.module_state(dep) == "live"
            assert h.ok(d.call(M + "Status"))["checkedAheadJobs"] == 0
        print("# checked while %s and %s loaded: %s replaced by rename loaded from its new inode, %s refused "
              "after its bytes changed" % (ahead[0][1], ahead[1][1], ahead[0][0], ahead[1][0]), flush=True)
        serves_root(d)

    t.case("j: a module file is checked while its dependency loads, and opened and checked again at its load: "
           "replaced by rename it loads the new inode, changed in place it is refused", case_checked_ahead)

    # --- g: a client that sends one byte a second ------------------------------------------------

    def case_chunks():
        # 1-byte and odd-sized chunks, quickly: one message all the same.
        msg = json.dumps({"method": LOAD, "parameters": {"name": "dummy"}}).encode() + b"\0"
        for size in (1, 7, 13):
            c = h.Varlink(main_d.address)
            try:
                for i in range(0, len(msg), size):
                    c.sock.sendall(msg[i:i + size])
                    time.sleep(0.001)
                buf = b""
                while not buf.endswith(b"\0"):
                    chunk = c.sock.recv(65536)
                    assert chunk, "hung up after %d-byte chunks" % size
                    buf += chunk
                reply = json.loads(buf[:-1])
            finally:
                c.close()
            assert [m["outcome"] for m in h.modules_of(reply)] in (["loaded"], ["already_loaded"]), reply
        assert [c["result"] for c in finits(main_d, "dummy")] == [0]

    def case_slow():
        # One byte a second, never silent for IdleConnectionSec=: answered at the end, while every
        # case above was served meanwhile.
        slow.join(timeout=len(SLOW_CALL) + 30)
        assert not slow.is_alive(), "the slow client is still sending"
        assert slow.error is None and slow.reply is not None, (slow.error, slow.sent)
        assert "version" in h.ok(slow.reply), slow.reply
        print("# a %d-byte call sent one byte a second was answered after %.0f s" % (len(SLOW_CALL), slow.took),
              flush=True)
        # Slower than IdleConnectionSec= between two bytes: dropped, as the design says.
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(main_d.address)
        try:
            c.sendall(SLOW_CALL[:1])
            begin = time.monotonic()
            assert hung_up(c, IDLE_SEC + 3), "not dropped"
            took = time.monotonic() - begin
            assert IDLE_SEC - 0.5 <= took <= IDLE_SEC + 2, took
        finally:
            c.close()
        serves_root(main_d)

    t.case("g: a call in 1-, 7- and 13-byte chunks is answered", case_chunks)
    t.case("g: a call sent one byte a second is answered and the others were served meanwhile; a pause longer "
           "than IdleConnectionSec= is dropped", case_slow)

    def case_clean():
        for d in daemons:
            if d.proc.poll() is not None and d.proc.returncode == -signal.SIGKILL:
                continue
            assert all(r["call"] != "init_module" for r in d.shim_records()), d.shim_records()
        killed_ones = [d for d in daemons if d.proc.returncode == -signal.SIGKILL]
        for d in killed_ones:
            d.stop()
        h.assert_clean_exit(*[d for d in daemons if d not in killed_ones])

    t.case("every daemon but the killed one exits cleanly, none called init_module", case_clean, always=True)
    t.run()
    if t.failed:
        h.dump_stderr(daemons)
    journal.stop()
    print("# the suite took %.1f s" % (time.monotonic() - started), flush=True)
    return t.done()


class raises:
    """with raises(E): the block must raise E."""

    def __init__(self, exc):
        self.exc = exc

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        assert typ is not None and issubclass(typ, self.exc), "expected %s, got %r" % (self.exc.__name__, value)
        return True


if __name__ == "__main__":
    sys.exit(main())
