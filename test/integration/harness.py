# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared parts of the integration tier.

Everything here is real except the module syscalls: the daemon runs under real socket activation
(systemd-socket-activate, or with an FdStore the activator below, which acts as PID 1 does for the
file descriptor store), in a private mount namespace, with real libkmod over a real Debian
kernel's module tree on real read-only and writable mounts, and a real systemd-journald. The
LD_PRELOAD shim (test/shim/module-shim.c) stands in for finit_module/delete_module and keeps a
private /sys/module.
"""

import array
import atexit
import ctypes
import fcntl
import fnmatch
import glob
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

CLONE_NEWNS = 0x00020000

# Every daemon, journald and container this run started. A run of chosen cases can leave running
# what a later case would have stopped; they are killed at exit, so that nothing holds this mount
# namespace (and its tmpfs copies of the module tree) once the test has ended.
_STARTED = []


@atexit.register
def _kill_leftovers():
    for x in _STARTED:
        proc = getattr(x, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
MODULE_INIT_COMPRESSED_FILE = 4


def run(*args, check=True, **kwargs):
    return subprocess.run(list(args), check=check, **kwargs)


def unshare_mounts():
    """Moves this process into a private mount namespace, so that nothing mounted here is seen
    outside and everything goes away with the process. /etc/modgate is then a tmpfs of its own."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    run("mount", "--make-rprivate", "/")
    private_etc_modgate()


ETC_OVERLAY = "/tmp/modgate-etc-overlay"


def private_etc_modgate():
    """An empty /etc/modgate, a tmpfs of this mount namespace: modgated reads its configuration from
    /etc and /usr only, never /run. Where the build root has no /etc/modgate to mount on, /etc first
    gets an overlay whose writes stay in this namespace (the build root is shared)."""
    if not os.path.isdir("/etc/modgate"):
        os.makedirs(ETC_OVERLAY, exist_ok=True)
        run("mount", "-t", "tmpfs", "-o", "mode=700", "tmpfs", ETC_OVERLAY)
        for d in ("upper", "work"):
            os.mkdir(os.path.join(ETC_OVERLAY, d))
        os.chmod(os.path.join(ETC_OVERLAY, "upper"), os.stat("/etc").st_mode & 0o7777)
        run("mount", "-t", "overlay", "overlay", "-o", "lowerdir=/etc,upperdir=%s/upper,workdir=%s/work"
            % (ETC_OVERLAY, ETC_OVERLAY), "/etc")
        os.mkdir("/etc/modgate", 0o755)
    run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/etc/modgate")


def reload(d):
    """A reload as an administrator asks for it here: the varlink Reload, as root with CAP_SYS_MODULE
    (a SIGHUP reloads only when PID 1 sends it, and PID 1 is not the service manager in this tier)."""
    return ok(d.call("io.modgate.Manager.Reload"))


def kernel_tree():
    """The newest Debian kernel module tree with depmod indexes (tools/devroot installs one)."""
    trees = sorted(os.path.dirname(p) for p in glob.glob("/usr/lib/modules/*/modules.dep.bin"))
    if not trees:
        raise RuntimeError("no kernel module tree with depmod indexes under /usr/lib/modules; "
                           "run the tests through tools/check, which provides one")
    return trees[-1]


def parse_modules_dep(tree):
    """modules.dep as {canonical name: (relpath, [dependency names])}, read independently of
    libkmod so that the daemon's resolution can be checked against it."""
    deps = {}
    with open(os.path.join(tree, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[module_name(path)] = (path, [module_name(p) for p in rest.split()])
    return deps


def module_name(path):
    base = os.path.basename(path)
    return base[:base.index(".ko")].replace("-", "_")


class Varlink:
    """A minimal varlink client: one JSON object per message, NUL-terminated."""

    def __init__(self, address, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        # With a timeout the socket is non-blocking, and connect() to a listening AF_UNIX socket whose
        # backlog is full fails with EAGAIN where a blocking connect() waits for room: wait so.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock.connect(address)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.sock.close()
                    raise
                time.sleep(0.005)
        self.buf = b""

    def call(self, method, parameters=None, raw=None):
        msg = raw if raw is not None else json.dumps({"method": method, "parameters": parameters or {}}).encode()
        self.sock.sendall(msg + b"\0")
        while b"\0" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the daemon")
            self.buf += chunk
        reply, _, self.buf = self.buf.partition(b"\0")
        return json.loads(reply)

    def close(self):
        self.sock.close()


MANAGER = "io.modgate.Manager."


def error_of(reply, name):
    """The parameters of a reply that must be the error io.modgate.Manager.NAME."""
    assert reply.get("error") == MANAGER + name, "expected %s, got %s" % (name, reply)
    return reply.get("parameters", {})


def ok(reply):
    """The parameters of a reply that must not be an error."""
    assert "error" not in reply, reply
    return reply["parameters"]


def modules_of(reply):
    return reply.get("parameters", {}).get("modules", [])


def call(address, method, parameters=None):
    c = Varlink(address)
    try:
        return c.call(method, parameters)
    finally:
        c.close()


# Every Daemon made, for Journal.records() to wait for their records.
_daemons = []


def settle_records():
    """Waits for the records every running daemon owes: a load whose name the evidence binds is
    answered before its file's .modinfo is read, and recorded after (Status says how many wait)."""
    for d in list(_daemons):
        d.settle_records()


class Journal:
    """A real systemd-journald, private to this mount namespace."""

    def __init__(self, rate_limit_burst=None):
        """rate_limit_burst: journald's RateLimitBurst= (per 30 s and service, scaled up by the free
        space, about 4x on these machines); its default of 10000 is rarely reached in a test."""
        run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run")
        os.makedirs("/run/systemd/journal")
        os.makedirs("/run/log/journal")
        if rate_limit_burst:
            os.makedirs("/run/systemd/journald.conf.d")
            with open("/run/systemd/journald.conf.d/50-test.conf", "w") as f:
                f.write("[Journal]\nRateLimitIntervalSec=30s\nRateLimitBurst=%d\n" % rate_limit_burst)
        _STARTED.append(self)
        self.proc = subprocess.Popen(["/usr/lib/systemd/systemd-journald"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists("/run/systemd/journal/socket"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("systemd-journald did not start")
            time.sleep(0.05)

    def records(self, **match):
        """Journal entries matching FIELD=value pairs, as dicts, after a sync."""
        settle_records()
        run("journalctl", "--sync", check=False, stderr=subprocess.DEVNULL)
        args = ["journalctl", "-D", "/run/log/journal", "-o", "json", "--no-pager"]
        args += ["%s=%s" % kv for kv in match.items()]
        out = run(*args, capture_output=True, text=True, check=False).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def valgrind_prefix(workdir, name):
    """With MODGATE_VALGRIND=DIR (tools/valgrind), the daemon runs under valgrind's memcheck, its
    report in DIR/NAME.PID.log: errors and definite leaks make the exit status 66 and are counted
    there. Otherwise nothing."""
    logdir = os.environ.get("MODGATE_VALGRIND")
    if not logdir:
        return []
    os.makedirs(logdir, exist_ok=True)
    supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "valgrind.supp")
    return ["valgrind", "--tool=memcheck", "--error-exitcode=66", "--leak-check=full",
            "--show-leak-kinds=definite", "--errors-for-leak-kinds=definite", "--num-callers=30",
            "--suppressions=" + os.path.normpath(supp), "--child-silent-after-fork=yes",
            "--log-file=%s/%s.%%p.log" % (logdir, name)]


class FdStore:
    """PID 1's file descriptor store of one service (FileDescriptorStoreMax=), kept by the test
    across the daemons it starts: what they store (sd_notify FDSTORE=1 with FDNAME=, and
    FDSTOREREMOVE=1) is passed to the next one in $LISTEN_FDS with its name in $LISTEN_FDNAMES, as
    systemd does with FileDescriptorStorePreserve=yes."""

    MAX = 8

    def __init__(self):
        self._lock = threading.Lock()
        self.entries = []       # (name, fd), in the order stored
        self._daemons = []      # whose notify messages fill the store

    def settle(self):
        """Handles what the daemons sent and the store did not take yet: PID 1 reads a service's
        notify messages before its exit, and so before it starts the next instance."""
        for d in list(self._daemons):
            d.drain_notify()

    @staticmethod
    def _same(a, b):
        sa, sb = os.fstat(a), os.fstat(b)
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)

    def handle(self, text, fds):
        """A notify message and the fds it carried; the fds are the store's or closed. As PID 1 does,
        an fd already stored (under any name) is not stored again."""
        lines = text.split("\n")
        name = next((l[len("FDNAME="):] for l in lines if l.startswith("FDNAME=")), "stored")
        with self._lock:
            if "FDSTOREREMOVE=1" in lines:
                for n, fd in [e for e in self.entries if e[0] == name]:
                    os.close(fd)
                self.entries = [e for e in self.entries if e[0] != name]
            if "FDSTORE=1" in lines:
                for fd in fds:
                    if len(self.entries) < self.MAX and not any(self._same(fd, e[1]) for e in self.entries):
                        self.entries.append((name, fd))
                    else:
                        os.close(fd)
                return
        for fd in fds:
            os.close(fd)

    def _generations(self, name):
        return sorted((int(n[len(name) + 1:]), fd) for n, fd in self.entries
                      if n.startswith(name + ".") and n[len(name) + 1:].isdigit())

    def count(self, name):
        """How many generations of name are stored (modgated stores NAME.GENERATION)."""
        self.settle()
        with self._lock:
            return len(self._generations(name))

    def find(self, name):
        """The fd of name's newest generation."""
        self.settle()
        with self._lock:
            return self._generations(name)[-1][1]

    def names(self):
        self.settle()
        with self._lock:
            return [n for n, _ in self.entries]

    def passed(self):
        self.settle()
        with self._lock:
            return list(self.entries)

    def clear(self):
        """systemctl clean --what=fdstore."""
        with self._lock:
            for _, fd in self.entries:
                os.close(fd)
            self.entries = []


def _place_fds(fds):
    """In the child before exec: fds at 3, 4, ... in order, inherited (sd_listen_fds()' layout)."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in fds]
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i)


class Daemon:
    """modgated started through real socket activation, with the syscall shim preloaded. With
    trusted_root None no --trusted-root= is given (TrustedRoot= in modgate.conf counts); wrapper is
    a command the daemon runs under, such as chroot. With store (an FdStore), the daemon has a file
    descriptor store, and this object acts as PID 1 does for a socket unit: it listens, and a
    connection that waits while no daemon runs starts one, with the socket and what the store holds;
    after an idle exit the next connection starts the next one (proc is then the new process).
    Without, systemd-socket-activate starts it once and there is no store."""

    def __init__(self, workdir, name, trusted_root, extra_env=None, args=(), wrapper=(), store=None):
        self.store = store
        self.proc = None
        _STARTED.append(self)
        self._handling = threading.Lock()
        self.address = "/run/modgate/%s.sock" % name
        self.shim_log = os.path.join(workdir, name + ".shim.log")
        self.stderr_path = os.path.join(workdir, name + ".stderr")
        self.notify_path = "/run/modgate/%s.notify" % name
        self._settled_finits = 0
        os.makedirs("/run/modgate", exist_ok=True)
        open(self.shim_log, "w").close()
        _daemons.append(self)

        # Read as the service manager reads it, always: a daemon whose notify messages are not read
        # blocks in sd_notify() once the socket's queue is full (after a few reloads).
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.settimeout(0.2)
        self._notes = []
        self._notes_cv = threading.Condition()
        self._notes_stop = False
        self._notes_thread = threading.Thread(target=self._read_notify, daemon=True)
        self._notes_thread.start()

        env = {
            "LD_PRELOAD": os.environ["MODGATE_SHIM"],
            "MODGATE_SHIM_LOG": self.shim_log,
            "NOTIFY_SOCKET": self.notify_path,
            "MODGATE_LOG_LEVEL": "debug",
        }
        # A sanitizer build needs its settings in the daemon too.
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(extra_env or {})
        if os.environ.get("MODGATE_VALGRIND"):
            env["LD_PRELOAD"] += ":" + os.environ["MODGATE_VALGRIND_PRELOAD"]
        if store is None:
            cmd = ["systemd-socket-activate", "-l", self.address, "--fdname=varlink"]
            for k, v in env.items():
                cmd += ["-E", "%s=%s" % (k, v)]
        else:
            cmd = ["sh", "-c", 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"', "sh"]
        # Tests talk to one instance for their whole run: no idle exit unless a test asks for it.
        if not any(a.startswith("--idle-exit-sec=") for a in args):
            args = ("--idle-exit-sec=0", *args)
        if trusted_root in MANIFESTS and not any(a.startswith("--manifest=") for a in args):
            args = ("--manifest=" + MANIFESTS[trusted_root], *args)
        if trusted_root is not None:
            args = ("--trusted-root=" + trusted_root, *args)
        cmd += [*wrapper, *valgrind_prefix(workdir, name), os.environ["MODGATED"], *args]

        self.stderr = open(self.stderr_path, "w")
        if store is None:
            self.proc = subprocess.Popen(cmd, stdout=self.stderr, stderr=self.stderr)
        else:
            if os.path.exists(self.address):
                os.unlink(self.address)
            self._listen = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listen.bind(self.address)
            self._listen.listen(128)
            self._spawn_cmd, self._spawn_env = cmd, env
            self._activator_stop = False
            store._daemons.append(self)
            self._activator = threading.Thread(target=self._activate_loop, daemon=True)
            self._activator.start()
            return
        deadline = time.monotonic() + 10
        # The file appears at bind(), before listen(): a connect in between is refused. The tool says
        # "Listening on" once it listens.
        while not os.path.exists(self.address) or "Listening on" not in self.stderr_text():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("systemd-socket-activate did not listen on %s" % self.address)
            time.sleep(0.02)

    def _spawn(self):
        passed = [("varlink", self._listen.fileno())] + self.store.passed()
        env = dict(os.environ, **self._spawn_env, FDSTORE=str(FdStore.MAX), LISTEN_FDS=str(len(passed)),
                   LISTEN_FDNAMES=":".join(n for n, _ in passed))
        self.proc = subprocess.Popen(self._spawn_cmd, stdout=self.stderr, stderr=self.stderr, env=env,
                                     close_fds=False,     # Python's own fds are not inherited (PEP 446)
                                     preexec_fn=lambda: _place_fds([fd for _, fd in passed]))

    def _activate_loop(self):
        while not self._activator_stop:
            if self.proc is not None and self.proc.poll() is None:
                time.sleep(0.02)
                continue
            try:
                readable, _, _ = select.select([self._listen], [], [], 0.1)
            except (OSError, ValueError):
                return
            if readable and not self._activator_stop:
                self._spawn()

    def drain_notify(self):
        """Returns once every notify message sent so far has been handled."""
        while True:
            with self._handling:
                try:
                    pending, _, _ = select.select([self.notify], [], [], 0)
                except (OSError, ValueError):
                    return
                if not pending:
                    return
            time.sleep(0.005)

    def activate(self):
        """The first connection starts the daemon (systemd-socket-activate waits for it, as
        systemd does for a socket unit). Returns whether it then sent READY=1."""
        c = Varlink(self.address)
        try:
            reply = c.call("org.varlink.service.GetInfo")
        finally:
            c.close()
        return "error" not in reply and self.wait_ready()

    def _read_notify(self):
        while not self._notes_stop:
            with self._handling:
                try:
                    data, anc, _, _ = self.notify.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
                except socket.timeout:
                    continue
                except OSError:
                    return
                msg = data.decode()
                fds = array.array("i")
                for level, kind, payload in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                if self.store is not None:
                    self.store.handle(msg, list(fds))
                else:
                    for fd in fds:
                        os.close(fd)
            with self._notes_cv:
                self._notes.append(msg)
                self._notes_cv.notify_all()

    def notify_messages(self):
        """The notify messages that came and that no wait_notify() took yet."""
        with self._notes_cv:
            return list(self._notes)

    def wait_notify(self, word, timeout=30):
        """Waits for a sd_notify() message containing word (READY=1, RELOADING=1, ...), as the service
        manager would; returns the message or None. Messages are taken in the order they came; the
        ones before the match are dropped."""
        deadline = time.monotonic() + timeout
        with self._notes_cv:
            while True:
                while self._notes:
                    msg = self._notes.pop(0)
                    if word in msg.split("\n"):
                        return msg
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc is not None and self.proc.poll() is not None):
                    return None
                self._notes_cv.wait(min(left, 0.2))

    def wait_ready(self):
        return self.wait_notify("READY=1") is not None

    @property
    def pid(self):
        return self.proc.pid

    def call(self, method, parameters=None):
        return call(self.address, method, parameters)

    def load(self, name):
        return self.call("io.modgate.Manager.Load", {"name": name})

    def settle_records(self, timeout=60):
        """Once the daemon has made a finit_module() call since the last look, waits until no load's
        record waits for its file's .modinfo (Status's unrecordedLoads), so that the journal and the
        history have it. A daemon that is not running, or does not answer, is not waited for."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            n = sum(1 for r in self.shim_records() if r.get("call") == "finit_module")
        except (OSError, ValueError):
            return
        if n == self._settled_finits:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                c = Varlink(self.address, timeout=10)
                try:
                    reply = c.call("io.modgate.Manager.Status")
                finally:
                    c.close()
            except OSError:
                return
            if reply.get("parameters", {}).get("unrecordedLoads", 0) == 0:
                break
            time.sleep(0.01)
        self._settled_finits = n

    def shim_records(self):
        with open(self.shim_log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stderr_text(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def fds(self):
        """The daemon's open fds, once it has finished with the connections just closed."""
        def sample():
            d = "/proc/%d/fd" % self.pid
            fds = []
            for fd in os.listdir(d):
                try:
                    fds.append("%s->%s" % (fd, os.readlink(os.path.join(d, fd))))
                except FileNotFoundError:
                    pass    # closed while we looked: the next sample decides
            return sorted(fds)
        prev = sample()
        for _ in range(50):
            time.sleep(0.1)
            cur = sample()
            if cur == prev:
                return cur
            prev = cur
        return prev

    def status(self, key):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
        return None

    def stop(self):
        if self.store is not None and not self._activator_stop:
            self._activator_stop = True
            self._activator.join()
            self._listen.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.store is not None:
            self.drain_notify()
            if self in self.store._daemons:
                self.store._daemons.remove(self)
        self.stderr.close()
        self._notes_stop = True
        self._notes_thread.join()
        self.notify.close()


def dump_stderr(daemons, lines=40):
    """The last lines each daemon wrote, as TAP comments: for a run that failed."""
    for d in daemons:
        print("# --- %s stderr (last lines) ---" % d.address)
        for line in d.stderr_text().splitlines()[-lines:]:
            print("# " + line)


def assert_clean_exit(*daemons):
    """Stops each daemon with SIGTERM and asserts exit status 0: in the sanitizer build, a leak or an
    error report at exit makes it non-zero."""
    bad = []
    for d in daemons:
        d.stop()
        if d.proc.returncode != 0:
            bad.append("%s exited with %s:\n%s" % (d.address, d.proc.returncode, d.stderr_text()[-3000:]))
    assert not bad, "\n".join(bad)


class Tap:
    """TAP output, which meson counts case by case. When skip_all is set, every case is reported as
    skipped with that reason (tools/check fails on it unless told otherwise); when not_run is set,
    every case fails with that reason, unrun.

    Cases are registered with case() and run by run(), in the order registered. The command line
    chooses which (test-roots.py [--list] [CASE...], or meson test NAME --test-args='CASE...'): a CASE
    is a case's number, the first word of its name when that word is an identifier such as 6a, or a
    glob over its name or that word ('5*'). Cases not chosen are not run and not reported; the plan
    counts what runs. A case declares the cases whose state it needs with needs= (their functions,
    or numbers or identifiers as above); those run first, reported as prerequisites. A case with
    always=True (the check that every daemon started exits cleanly) runs with any chosen case."""

    def __init__(self, argv=None):
        self.n = 0
        self.failed = 0
        self.skip_all = None
        self.not_run = None
        self.cases = []
        self.ran = 0            # the cases registered by the last run()
        self.done_numbers = set()
        args = list(sys.argv[1:] if argv is None else argv)
        self.listing = "--list" in args
        self.chosen = [a for a in args if a != "--list"]
        for a in self.chosen:
            if a.startswith("-"):
                raise SystemExit("unknown option %s; usage: %s [--list] [CASE...]" %
                                 (a, os.path.basename(sys.argv[0])))

    def case(self, name, fn, needs=(), always=False):
        self.cases.append(dict(number=len(self.cases) + 1, name=name, fn=fn, needs=tuple(needs),
                               always=always))

    @staticmethod
    def _ident(c):
        word = c["name"].split(" ", 1)[0]
        return word if re.fullmatch(r"[0-9]+[a-z]?", word) else None

    def _find(self, selector, strict):
        if callable(selector):
            return [c for c in self.cases if c["fn"] is selector]
        by_ident = [c for c in self.cases if self._ident(c) == selector]
        if by_ident:
            return by_ident
        if selector.isdigit():
            return [c for c in self.cases if c["number"] == int(selector)]
        if strict:
            return []
        return [c for c in self.cases
                if fnmatch.fnmatchcase(c["name"], selector)
                or fnmatch.fnmatchcase(self._ident(c) or "", selector)]

    def _selection(self):
        """The cases registered so far that the command line asks for, each with the case it is a
        prerequisite of when it was not asked for itself, in the order registered."""
        if not self.chosen:
            return [(c, None) for c in self.cases]
        why = {}
        for selector in self.chosen:
            for c in self._find(selector, strict=False):
                why[c["number"]] = None

        def need(c, of):
            for selector in c["needs"]:
                found = self._find(selector, strict=True)
                assert len(found) == 1, "case %d needs %r, which names %d cases" % (
                    c["number"], selector, len(found))
                p = found[0]
                assert p["number"] < c["number"], "case %d needs a later one, %d" % (c["number"], p["number"])
                if p["number"] not in why:
                    why[p["number"]] = of
                    need(p, of)

        if why:
            for c in self.cases:
                if c["always"]:
                    why.setdefault(c["number"], None)
        for c in [c for c in self.cases if c["number"] in why and why[c["number"]] is None]:
            need(c, c)
        return [(c, why[c["number"]]) for c in self.cases if c["number"] in why]

    def list(self):
        for c in self.cases:
            extra = ""
            if c["needs"]:
                numbers = (str(self._find(n, strict=True)[0]["number"]) for n in c["needs"])
                extra += "  (needs %s)" % ", ".join(numbers)
            if c["always"]:
                extra += "  (runs with any case)"
            print("%d\t%s%s" % (c["number"], c["name"], extra), flush=True)

    def run(self):
        """Runs the chosen cases (all of them by default) among those registered since the last run().
        A file whose set-up must follow a case (test-requests.py's first case sees the machine's own
        modprobe.d) calls it there, and again after its last case."""
        if self.listing:
            return
        subset = bool(self.chosen)
        for c, of in self._selection():
            if c["number"] <= self.ran:
                if of is not None and c["number"] not in self.done_numbers:
                    self._one("case %d needs case %d, which ran before it was chosen" % (
                        of["number"], c["number"]), None, force_fail=True)
                continue
            name = c["name"]
            if of is not None:
                name = "prerequisite of case %d: %s" % (of["number"], name)
            if subset:
                name += " (case %d)" % c["number"]
            self.done_numbers.add(c["number"])
            self._one(name, c["fn"])
        self.ran = len(self.cases)

    def _one(self, name, fn, force_fail=False):
        self.n += 1
        if force_fail:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            return
        if self.skip_all:
            print("ok %d - %s # SKIP %s" % (self.n, name, self.skip_all), flush=True)
            return
        if self.not_run:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            for line in ("not run: " + self.not_run).splitlines()[:40]:
                print("# " + line, flush=True)
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the next case runs
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            for line in ("%s: %s" % (type(e).__name__, e)).splitlines():
                print("# " + line, flush=True)
            # Where, in the test: an assertion without a message says nothing else.
            frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
            if frames:
                print("# at %s:%d: %s" % (os.path.basename(frames[-1].filename), frames[-1].lineno,
                                          frames[-1].line), flush=True)
        else:
            print("ok %d - %s" % (self.n, name), flush=True)

    def done(self):
        self.run()
        if self.listing:
            self.list()
            return 0
        for selector in self.chosen:
            if not self._find(selector, strict=False):
                print("# no case matches %r; %s --list shows them" % (
                    selector, os.path.basename(sys.argv[0])), flush=True)
                self.failed += 1
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed else 0


class Lazy:
    """A fixture built on first use: Lazy(start) stands for what start() returns, calling it when an
    attribute is first read, so that a daemon shared by several cases starts with the first case
    that uses it, whichever that is. built() says whether it has been."""

    def __init__(self, build):
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_value", None)
        object.__setattr__(self, "_done", False)

    def get(self):
        if not object.__getattribute__(self, "_done"):
            object.__setattr__(self, "_value", object.__getattribute__(self, "_build")())
            object.__setattr__(self, "_done", True)
        return object.__getattribute__(self, "_value")

    def built(self):
        return object.__getattribute__(self, "_done")

    def __getattr__(self, name):
        return getattr(self.get(), name)

    def __setattr__(self, name, value):
        setattr(self.get(), name, value)

    def __getitem__(self, key):
        return self.get()[key]

    def __setitem__(self, key, value):
        self.get()[key] = value

    def __contains__(self, key):
        return key in self.get()

    def __iter__(self):
        return iter(self.get())

    def __len__(self):
        return len(self.get())


def require_root():
    if os.geteuid() != 0:
        print("1..0 # SKIP the integration tier needs root (mount namespaces, loop devices)")
        sys.exit(0)


def mount_sys_module(live=(), compression="xz"):
    """A private /sys/module for the shim: compression, and modules that are live already."""
    run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/sys/module")
    if compression:
        with open("/sys/module/compression", "w") as f:
            f.write(compression + "\n")
    for name in live:
        os.makedirs("/sys/module/" + name)
        with open("/sys/module/%s/initstate" % name, "w") as f:
            f.write("live\n")


def copy_tree(src, dst):
    shutil.copytree(src, dst, symlinks=True)


MODULES_DISABLED = "/proc/sys/kernel/modules_disabled"


def fake_modules_disabled(workdir, value="0"):
    """A regular file bound over /proc/sys/kernel/modules_disabled in this mount namespace, read by the
    shim and the daemon as the kernel's sysctl; the daemon's Seal writes 1 to it. A kernel without
    module support (this host's) has no such sysctl: a copy of /proc/sys/kernel as it reads now is
    bound over that directory first, to give the file its place. Returns the file."""
    if not os.path.exists(MODULES_DISABLED):
        copy = os.path.join(workdir, "proc-sys-kernel")
        for dirpath, dirnames, filenames in os.walk("/proc/sys/kernel"):
            target = os.path.join(copy, os.path.relpath(dirpath, "/proc/sys/kernel"))
            os.makedirs(target, exist_ok=True)
            for name in filenames:
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        data = f.read()
                except OSError:
                    continue        # write-only, or not for us to read: not there in the copy
                with open(os.path.join(target, name), "wb") as f:
                    f.write(data)
        with open(os.path.join(copy, "modules_disabled"), "w") as f:
            f.write("0\n")
        run("mount", "--bind", copy, "/proc/sys/kernel")
    path = os.path.join(workdir, "modules_disabled")
    with open(path, "w") as f:
        f.write(value + "\n")
    os.chmod(path, 0o644)
    run("mount", "--bind", path, MODULES_DISABLED)
    return path


# Helpers for the request scenarios (test-requests.py): configuration mounted before a daemon starts,
# the machine's own modaliases and modprobe's answer for them, many clients at once, and the shim's
# timestamps.

import select  # noqa: E402


def mount_modprobe_d(text, name="modgate-test.conf"):
    """A tmpfs over /etc/modprobe.d holding only this configuration. libkmod reads its configuration
    when a context is made, so this must come before the daemon starts."""
    run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/etc/modprobe.d")
    with open(os.path.join("/etc/modprobe.d", name), "w") as f:
        f.write(text)


def mount_file_over(path, text, workdir):
    """Bind-mounts a file with this text over path, for example /proc/cmdline."""
    src = os.path.join(workdir, os.path.basename(path) + ".over")
    with open(src, "w") as f:
        f.write(text)
    run("mount", "--bind", src, path)


# Manifests written for trees mounted here: {mount point: manifest path}. A daemon started on such
# a tree is given its manifest (Daemon adds --manifest=), which is what vouches for the tree: the
# erofs images live in a writable tmpfs, so read-only evidence does not hold, as it should not.
MANIFESTS = {}

MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


def write_manifest(tree, path, kernel=None, origin="admin"):
    """A manifest of tree in modgate's format, written here with hashlib, independently of
    modgate-manifest: every regular file named *.ko* beneath tree, symlinks not followed."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not name.endswith(MODULE_SUFFIXES) or os.path.islink(full) or not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            entries.append((os.path.relpath(full, tree).encode(), digest))
    entries.sort()
    with open(path, "w") as f:
        f.write("# modgate manifest 1 kernel=%s origin=%s\n" % (kernel or os.path.basename(tree.rstrip("/")),
                                                                 origin))
        for rel, digest in entries:
            f.write("%s  %s\n" % (digest, rel.decode()))
    os.chmod(path, 0o644)
    return path


def module_bytes_named(src, name):
    """The bytes of the module file src (.ko.xz) made to name itself name: the "name=" entry of its
    .modinfo, which is what libkmod and modgate read, rewritten in place (padded with NULs, so no
    offset moves) and compressed again as the kernel takes it. The shim, like this tier, never runs
    the code. name may not be longer than src's own name."""
    old = module_name(src).encode()
    elf = subprocess.run(["xz", "-dc", src], check=True, capture_output=True).stdout
    key = b"name=" + old + b"\0"
    assert len(name) <= len(old) and elf.count(key) == 1, (src, name, elf.count(key))
    elf = elf.replace(key, b"name=" + name.encode() + b"\0" * (len(old) - len(name) + 1))
    return subprocess.run(["xz", "-C", "crc32", "-c"], input=elf, check=True, capture_output=True).stdout


def mount_erofs_tree(tree, workdir, name="trusted"):
    """The module tree as it is, on a read-only erofs image mounted with a loop device, with its
    manifest."""
    image = os.path.join(workdir, name + ".erofs")
    run("mkfs.erofs", "--quiet", image, tree)
    mnt = os.path.join(workdir, name)
    os.makedirs(mnt)
    run("mount", "-t", "erofs", "-o", "ro,loop", image, mnt)
    MANIFESTS[mnt] = write_manifest(tree, os.path.join(workdir, name + ".sha256"),
                                    kernel=os.path.basename(tree.rstrip("/")))
    return mnt


def reset_sys_module(keep=("compression",)):
    """Forgets every module in the private /sys/module, as after a reboot. Only while no daemon is
    loading."""
    for entry in os.listdir("/sys/module"):
        if entry in keep:
            continue
        path = os.path.join("/sys/module", entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def set_module_state(name, state):
    """Writes /sys/module/NAME/initstate as the kernel shows it, replacing it in one step."""
    d = os.path.join("/sys/module", name)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".initstate.tmp")
    with open(tmp, "w") as f:
        f.write(state + "\n")
    os.rename(tmp, os.path.join(d, "initstate"))


def module_state(name):
    """live, coming or going from the private /sys/module, or None when the module is not there."""
    try:
        with open("/sys/module/%s/initstate" % name) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def machine_modaliases():
    """Every modalias this machine's devices have (/sys/devices/**/modalias), sorted and unique."""
    found = set()
    for dirpath, _, filenames in os.walk("/sys/devices"):
        if "modalias" not in filenames:
            continue
        try:
            with open(os.path.join(dirpath, "modalias"), "rb") as f:
                alias = f.read().decode("ascii", "replace").strip()
        except OSError:
            continue
        if alias:
            found.add(alias)
    return sorted(found)


def modprobe_resolve(kver, alias):
    """The module names that `modprobe -S KVER -R ALIAS` prints (canonical, unique). Nothing printed
    (modprobe exits 1 with "not found") is the empty set."""
    res = run("modprobe", "-S", kver, "-R", alias, capture_output=True, text=True, check=False)
    names = {line.strip().replace("-", "_") for line in res.stdout.splitlines() if line.strip()}
    if res.returncode != 0 and names:
        raise RuntimeError("modprobe -R %r failed: %s" % (alias, res.stderr))
    return names


def parse_modules_softdep(tree):
    """Every name that modules.softdep mentions, on either side."""
    names = set()
    with open(os.path.join(tree, "modules.softdep")) as f:
        for line in f:
            words = line.split()
            if words and words[0] == "softdep":
                names.update(w.replace("-", "_") for w in words[1:] if not w.endswith(":"))
    return names


def independent_modules(tree, prefix, exclude=()):
    """Modules below prefix (for example kernel/drivers/net/) with no dependency and no softdep, in
    name order: each loads with a single finit_module and nothing else."""
    deps = parse_modules_dep(tree)
    soft = parse_modules_softdep(tree)
    return sorted(n for n, (path, d) in deps.items()
                  if path.startswith(prefix) and not d and n not in soft and n not in exclude)


class AsyncVarlink(Varlink):
    """A varlink connection whose call is sent now and answered later."""

    def send(self, method, parameters=None):
        self.sock.sendall(json.dumps({"method": method, "parameters": parameters or {}}).encode() + b"\0")

    def answered(self, timeout):
        """Whether a reply arrived within timeout seconds (without reading it)."""
        if b"\0" in self.buf:
            return True
        readable, _, _ = select.select([self.sock], [], [], timeout)
        return bool(readable)

    def receive(self):
        while b"\0" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the daemon")
            self.buf += chunk
        reply, _, self.buf = self.buf.partition(b"\0")
        return json.loads(reply)


def call_many(address, calls, timeout=60):
    """Makes every (method, parameters) call at once, each on its own connection from its own
    thread: all connections are made first, then the calls are released together. Returns the
    release time and, per call, (reply, sent, answered), times in CLOCK_MONOTONIC nanoseconds like
    the shim's."""
    conns = [Varlink(address, timeout) for _ in calls]
    barrier = threading.Barrier(len(calls) + 1)
    results = [None] * len(calls)

    def client(i):
        barrier.wait()
        sent = time.monotonic_ns()
        try:
            reply = conns[i].call(*calls[i])
        except Exception as e:  # noqa: BLE001 - reported as this call's reply
            reply = {"error": "client: %s: %s" % (type(e).__name__, e)}
        results[i] = (reply, sent, time.monotonic_ns())

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(calls))]
    for th in threads:
        th.start()
    barrier.wait()
    released = time.monotonic_ns()
    for th in threads:
        th.join()
    for c in conns:
        c.close()
    return released, results


def finit_records(records, names=None):
    """The finit_module records of the shim, optionally only for these module names."""
    return [r for r in records if r["call"] == "finit_module" and (names is None or r.get("name") in names)]


def max_in_flight(records):
    """The largest number of timed records whose [start, end] overlap at one moment. A load that
    ends at the very moment another starts does not overlap it."""
    events = []
    for r in records:
        events.append((r["start"], 1))
        events.append((r["end"], -1))
    n = best = 0
    for _, step in sorted(events):
        n += step
        best = max(best, n)
    return best


# --- System integration: the helpers, a stand-in daemon, and a booted systemd ----------------------



def kernel_uevent(devpath, action="add", timeout=10):
    """Has the kernel send a synthetic uevent for the device at /sys{devpath} (as udevadm trigger
    does), and returns what it sent, as a dict with SEQNUM, read from the kernel's own netlink
    group."""
    tag = "%08x-0000-4000-8000-%012x" % (os.getpid(), time.monotonic_ns() % (1 << 48))
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 15)   # KOBJECT_UEVENT
    try:
        s.bind((0, 1))
        s.settimeout(timeout)
        with open("/sys%s/uevent" % devpath, "w") as f:
            f.write("%s %s" % (action, tag))
        while True:
            data, (port, _) = s.recvfrom(65536)
            if port != 0:
                continue
            env = dict(x.split("=", 1) for x in data.decode(errors="replace").split("\0")[1:] if "=" in x)
            if env.get("SYNTH_UUID") == tag and env.get("DEVPATH") == devpath:
                env["SEQNUM"] = int(env["SEQNUM"])
                return env
    finally:
        s.close()


def kernel_seqnum():
    with open("/sys/kernel/uevent_seqnum") as f:
        return int(f.read())


def build_dir():
    return os.environ["MODGATE_BUILD_ROOT"]


def sanitizer_build():
    """Whether the build under test has sanitizers (tools/check's second build), from the build
    directory's own options: meson test sets ASAN_OPTIONS for every build."""
    with open(os.path.join(build_dir(), "meson-info", "intro-buildoptions.json")) as f:
        options = {o["name"]: o["value"] for o in json.load(f)}
    return options.get("b_sanitize", "none") not in ("none", "", [])


def wait_for(what, fn, timeout=10):
    """Polls fn until it returns something true, and returns that; fails the case after timeout
    seconds, naming what it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def helper(name):
    """Path of a built helper program: modgate-udev, modgate-modprobe, modgate-modules-load."""
    return os.environ["MODGATE_" + name.upper().replace("-", "_").replace("MODGATE_", "")]


class Result:
    def __init__(self, returncode, stdout, stderr, elapsed):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def __repr__(self):
        return "exit %s after %.2fs, stderr %r" % (self.returncode, self.elapsed, self.stderr)


def unit_cgroup_base():
    """The unified hierarchy, on a cgroup2 or a hybrid host."""
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(base, "cgroup.procs")):
            return base
    raise RuntimeError("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")


_MADE_CGROUPS = []


def _remove_unit_cgroups():
    """Only what in_unit() made, innermost first: never a cgroup that was there before."""
    for d in reversed(_MADE_CGROUPS):
        try:
            os.rmdir(d)
        except OSError:
            pass
    _MADE_CGROUPS.clear()


def in_unit(unit):
    """A command prefix that runs what follows in the cgroup systemd gives a system unit,
    system.slice/UNIT (udev's rules run inside systemd-udevd.service's): modgated reads a peer's
    unit from its cgroup, and trusts a claimed source only from its own system unit. The tier runs
    where systemd is not PID 1, so these cgroups are the test's own."""
    import atexit
    base = unit_cgroup_base()
    path = base
    for part in ["system.slice", *unit.split("/")]:
        path = os.path.join(path, part)
        if not os.path.isdir(path):
            os.mkdir(path)
            if not _MADE_CGROUPS:
                atexit.register(_remove_unit_cgroups)
            _MADE_CGROUPS.append(path)
    return ["/bin/sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % path, "sh"]


CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"method": sys.argv[2], "parameters": json.loads(sys.argv[3])}).encode() + b"\0")
buf = b""
while not buf.endswith(b"\0"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.rstrip(b"\0").decode())
"""


def call_as(prefix, address, method, parameters=None, wait=True):
    """One varlink call from a process started under prefix (setpriv ..., in_unit(...)): the reply,
    or with wait=False the Popen, whose reply call_as_result() reads."""
    proc = subprocess.Popen([*prefix, sys.executable, "-c", CLIENT, address, method, json.dumps(parameters or {})],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return call_as_result(proc) if wait else proc


def call_as_result(proc, timeout=60):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0 and out.strip(), (proc.returncode, out, err)
    return json.loads(out)


def run_program(args, env=None, timeout=60, close_stdio=False):
    """Runs a helper as udev or the kernel would: a clean environment, optionally without stdin,
    stdout and stderr (the kernel's usermode helpers have none). close_stdio is True for all three,
    or the tuple of those to close (the others are /dev/null)."""
    start = time.monotonic()
    if close_stdio:
        closed = (0, 1, 2) if close_stdio is True else close_stdio

        def close_fds():
            for fd in closed:
                try:
                    os.close(fd)
                except OSError:
                    pass
        proc = subprocess.Popen(args, env=env or {}, preexec_fn=close_fds, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rc = proc.wait(timeout=timeout)
        return Result(rc, "", "", time.monotonic() - start)
    p = subprocess.run(args, env=env or {}, capture_output=True, text=True, timeout=timeout)
    return Result(p.returncode, p.stdout, p.stderr, time.monotonic() - start)


class FakeModgated:
    """A stand-in for modgated on a socket: records every request and answers with answer(message),
    which returns (error or None, parameters), None to keep the caller waiting forever, "close"
    to hang up as a daemon that died would, or a list of bytes to send as they are, one piece at a
    time, before hanging up (a broken daemon's answer)."""

    def __init__(self, path, answer):
        self.path = path
        self.answer = answer
        self.requests = []
        self.garbage = []       # what arrived that was not a JSON message: bytes, as received
        self.connections = 0
        self.closed = 0         # connections served to their end
        self.lock = threading.Lock()
        self.held = []
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, _, buf = buf.partition(b"\0")
                try:
                    msg = json.loads(raw)
                except ValueError:
                    with self.lock:
                        self.garbage.append(raw)
                    continue
                with self.lock:
                    self.requests.append(msg)
                ans = self.answer(msg)
                if ans is None:
                    self.held.append(conn)
                    continue
                if ans == "close":
                    conn.close()
                    return
                if isinstance(ans, list):
                    try:
                        for piece in ans:
                            conn.sendall(piece)
                            time.sleep(0.01)
                    except OSError:
                        pass    # the client stopped reading: what it was sent is too much
                    conn.close()
                    return
                error, params = ans
                reply = {"parameters": params or {}}
                if error:
                    reply["error"] = error
                conn.sendall(json.dumps(reply).encode() + b"\0")
        with self.lock:
            if buf:
                self.garbage.append(buf)
            self.closed += 1
        conn.close()

    def wait_closed(self, timeout=10):
        """Until every connection so far has been read to its end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.closed + len(self.held) >= self.connections:
                    return True
            time.sleep(0.02)
        return False

    def stop(self):
        self.stopped = True
        self.sock.close()
        for c in self.held:
            c.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def mount_trusted_tree(tree, work):
    """The module tree as it is, on a read-only erofs image with its manifest: a root that passes the
    origin check."""
    return mount_erofs_tree(tree, work, "plain")


def modules_alias(tree):
    """modules.alias as [(alias, module)]."""
    out = []
    with open(os.path.join(tree, "modules.alias")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "alias":
                out.append((parts[1], parts[2]))
    return out


def meson_install(destdir):
    """meson install of this build into destdir, as a distribution or the VM tier does it."""
    run("meson", "install", "-C", build_dir(), "--destdir", destdir, "--no-rebuild", "--quiet",
        stdout=subprocess.DEVNULL)


def read_proc_status(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
    except FileNotFoundError:
        pass
    return None


CONTAINER_CLIENT = r"""
import json, socket, sys, threading
address, method, params, n = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
out = [None] * n
def one(i):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(address)
        s.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
        buf = b""
        while b"\0" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the daemon")
            buf += chunk
        out[i] = json.loads(buf.partition(b"\0")[0])
    except Exception as e:
        out[i] = {"error": "client: " + repr(e)}
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
"""


CONTAINER_SHIM = "/usr/local/lib/modgate-test/modgate-test-shim.so"


class Container:
    """A real service manager: systemd as PID 1 of a systemd-nspawn container booted from an overlay
    of this build root, with modgate installed by meson install and its units enabled by the
    preset. Only the module syscalls are faked (the shim, through a drop-in), and the trusted root
    is bound to /usr/lib/modules/$(uname -r)."""

    def __init__(self, work, destdir, trusted_root, cmdline=(), prepare=None, boot_timeout=90):
        self.work = work
        self.merged = os.path.join(work, "merged")
        self.run_modgate = os.path.join(work, "run-modgate")        # the container's /run/modgate
        self.test_dir = os.path.join(work, "run-modgate-test")      # shim log
        self.sys_module = os.path.join(work, "sys-module")          # the shim's /sys/module
        for d in ("upper", "ovl-work", "merged", "run-modgate", "run-modgate-test", "sys-module"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        with open(os.path.join(self.sys_module, "compression"), "w") as f:
            f.write("xz\n")

        # systemd 257 needs the unified cgroup hierarchy; a hybrid host has it elsewhere.
        if subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"], capture_output=True,
                          text=True).stdout.strip() != "cgroup2fs":
            run("mount", "-t", "cgroup2", "none", "/sys/fs/cgroup")

        run("mount", "-t", "overlay", "overlay", "-o",
            "lowerdir=%s:/,upperdir=%s/upper,workdir=%s/ovl-work" % (destdir, work, work), self.merged)
        run("systemctl", "--root=" + self.merged, "preset", "modgated.socket", "modgate-modules-load.service",
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The manifest of the trusted tree where the daemon looks for that of the running kernel.
        if trusted_root in MANIFESTS:
            manifests = os.path.join(self.merged, "var/lib/modgate/manifests")
            os.makedirs(manifests, exist_ok=True)
            shutil.copy(MANIFESTS[trusted_root], os.path.join(manifests, os.uname().release + ".sha256"))
        dropin = os.path.join(self.merged, "etc/systemd/system/modgated.service.d")
        os.makedirs(dropin, exist_ok=True)
        with open(os.path.join(dropin, "50-test-shim.conf"), "w") as f:
            f.write("[Service]\n"
                    "Environment=LD_PRELOAD=%s MODGATE_SHIM_LOG=/run/modgate-test/shim.log "
                    "MODGATE_LOG_LEVEL=debug\n"
                    "ReadWritePaths=/sys/module /run/modgate-test\n" % CONTAINER_SHIM)
        # A sanitizer build: its settings reach the sandboxed units too. The sandbox forbids what
        # LeakSanitizer (ptrace of its own threads) and ASan's core dump limit (setrlimit) need;
        # leaks are looked for by the tiers that run the programs outside it.
        san = ["%s=%s" % (k, os.environ[k]) for k in ("UBSAN_OPTIONS", "LSAN_OPTIONS") if k in os.environ]
        san.append("ASAN_OPTIONS=%s:detect_leaks=0:disable_coredump=0" % os.environ.get("ASAN_OPTIONS", ""))
        for unit in ("modgated.service", "modgate-modules-load.service"):
            d = os.path.join(self.merged, "etc/systemd/system", unit + ".d")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "50-test-sanitizers.conf"), "w") as f:
                f.write("[Service]\nEnvironment=%s\n" % " ".join(san))
        if prepare:
            prepare(self.merged)
        # /var/lib/modgate as prepared, bound in from the test's tmpfs: on a real machine /var is a
        # local file system, and manifest evidence is not taken from the container's overlay
        # (docs/trust.md).
        self.var_lib = os.path.join(work, "var-lib-modgate")
        prepared = os.path.join(self.merged, "var/lib/modgate")
        if os.path.isdir(prepared):
            shutil.copytree(prepared, self.var_lib)
        else:
            os.makedirs(self.var_lib)

        self.console_path = os.path.join(work, "console.log")
        self.console = open(self.console_path, "w")
        cmd = ["systemd-nspawn", "--quiet", "--directory=" + self.merged, "--register=no", "--keep-unit",
               "--capability=CAP_SYS_MODULE", "--machine=modgate-test",
               "--bind-ro=%s:/usr/lib/modules/%s" % (trusted_root, os.uname().release),
               "--bind-ro=" + build_dir(),
               # At a fixed path: the build may be anywhere, /tmp included, which the service's
               # PrivateTmp= would hide.
               "--bind-ro=%s:%s" % (os.environ["MODGATE_SHIM"], CONTAINER_SHIM),
               "--bind=%s:/run/modgate" % self.run_modgate,
               "--bind=%s:/var/lib/modgate" % self.var_lib,
               "--bind=%s:/run/modgate-test" % self.test_dir,
               "--bind=%s:/sys/module" % self.sys_module,
               "--boot", "--", "systemd.unit=basic.target", *cmdline]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.console, stderr=self.console)
        _STARTED.append(self)
        self.leader = self._find_leader(boot_timeout)
        self.state = self._wait_booted(boot_timeout)

    def _find_leader(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("systemd-nspawn exited:\n" + self.console_text())
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                ns = read_proc_status(pid, "NSpid")
                if ns and len(ns.split()) > 1 and ns.split()[-1] == "1" and self._descends(pid):
                    return pid
            time.sleep(0.1)
        raise RuntimeError("no container init appeared:\n" + self.console_text())

    def _wait_booted(self, timeout):
        """Until systemd in the container answers and has finished starting up."""
        deadline = time.monotonic() + timeout
        state = "unknown"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("systemd-nspawn exited:\n" + self.console_text())
            state = self.run("systemctl", "is-system-running", "--wait", timeout=timeout).stdout.strip()
            if state not in ("offline", "unknown", "initializing", "starting", ""):
                return state
            time.sleep(0.2)
        return state

    def _descends(self, pid):
        while pid > 1:
            ppid = read_proc_status(pid, "PPid")
            if ppid is None:
                return False
            pid = int(ppid)
            if pid == self.proc.pid:
                return True
        return False

    def console_text(self):
        self.console.flush()
        with open(self.console_path, errors="replace") as f:
            return f.read()

    def run(self, *args, check=False, timeout=60):
        """Runs a command inside the container."""
        # --root: nspawn enters the container root with chroot, not pivot_root, so the mount
        # namespace alone would show the outer tree.
        return subprocess.run(["nsenter", "--target", str(self.leader), "--mount", "--uts", "--ipc", "--pid", "--root",
                               "--wd",
                               "--", *args], capture_output=True, text=True, check=check, timeout=timeout)

    def show(self, unit, prop):
        return self.run("systemctl", "show", "--value", "-p", prop, unit).stdout.strip()

    def journal(self, *args):
        return self.run("journalctl", "--no-pager", "-b", *args).stdout

    @property
    def address(self):
        return os.path.join(self.run_modgate, "io.modgate")

    def call(self, method, parameters=None, n=1):
        """Calls the daemon from inside the container, n times in parallel: a caller outside its PID
        namespace has no pid the daemon can see, and sd-varlink refuses such peers."""
        res = self.run("python3", "-c", CONTAINER_CLIENT, "/run/modgate/io.modgate", method,
                       json.dumps(parameters or {}), str(n), timeout=120)
        if res.returncode != 0:
            raise RuntimeError("client in the container failed: %s" % res.stderr)
        replies = json.loads(res.stdout)
        return replies[0] if n == 1 else replies

    def shim_records(self):
        path = os.path.join(self.test_dir, "shim.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)     # nspawn asks the container's systemd to power off
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.console.close()


# Helpers for the caller-identity cases (test-callers.py): a configuration in /etc/modgate without
# touching the build root's /etc, and programs that gain capabilities when executed.

def mount_etc_overlay(workdir):
    """An overlay over /etc in this mount namespace, its writes kept in workdir: /etc/modgate can be
    made and written without changing the root the tests run in. Mount it before anything else is
    mounted below /etc (the overlay hides what is)."""
    upper, work = os.path.join(workdir, "etc-upper"), os.path.join(workdir, "etc-work")
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    run("mount", "-t", "overlay", "overlay", "-o", "lowerdir=/etc,upperdir=%s,workdir=%s" % (upper, work), "/etc")


CAP_SYS_MODULE = 16


def copy_with_file_caps(program, dst, caps=(CAP_SYS_MODULE,)):
    """A copy of program at dst (a file system that keeps security.* xattrs and is not nosuid) that
    gains caps, permitted and effective, when run: what `setcap cap_sys_module+ep` writes, a
    VFS_CAP_REVISION_2 security.capability. Returns dst."""
    import shutil
    import struct
    shutil.copy(program, dst)
    os.chmod(dst, 0o755)
    low = sum(1 << c for c in caps if c < 32)
    high = sum(1 << (c - 32) for c in caps if c >= 32)
    os.setxattr(dst, "security.capability", struct.pack("<IIIII", 0x02000001, low, 0, high, 0))
    return dst


def proc_has_cap(pid, cap):
    """Whether /proc/PID/status has cap in CapEff (False when the process is gone)."""
    eff = read_proc_status(pid, "CapEff")
    return eff is not None and bool(int(eff, 16) & (1 << cap))
