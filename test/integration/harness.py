# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared parts of the integration tier.

Everything here is real except the module syscalls: the daemon runs under real socket activation
(systemd-socket-activate), in a private mount namespace, with real libkmod over a real Debian
kernel's module tree on real read-only and writable mounts, and a real systemd-journald. The
LD_PRELOAD shim (test/shim/module-shim.c) stands in for finit_module/delete_module and keeps a
private /sys/module.
"""

import ctypes
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

CLONE_NEWNS = 0x00020000
MODULE_INIT_COMPRESSED_FILE = 4


class Skip(Exception):
    pass


def run(*args, check=True, **kwargs):
    return subprocess.run(list(args), check=check, **kwargs)


def unshare_mounts():
    """Moves this process into a private mount namespace, so that nothing mounted here is seen
    outside and everything goes away with the process."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    run("mount", "--make-rprivate", "/")


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
        self.sock.connect(address)
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


def call(address, method, parameters=None):
    c = Varlink(address)
    try:
        return c.call(method, parameters)
    finally:
        c.close()


class Journal:
    """A real systemd-journald, private to this mount namespace."""

    def __init__(self):
        run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run")
        os.makedirs("/run/systemd/journal")
        os.makedirs("/run/log/journal")
        self.proc = subprocess.Popen(["/usr/lib/systemd/systemd-journald"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists("/run/systemd/journal/socket"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("systemd-journald did not start")
            time.sleep(0.05)

    def records(self, **match):
        """Journal entries matching FIELD=value pairs, as dicts, after a sync."""
        run("journalctl", "--sync", check=False, stderr=subprocess.DEVNULL)
        args = ["journalctl", "-D", "/run/log/journal", "-o", "json", "--no-pager"]
        args += ["%s=%s" % kv for kv in match.items()]
        out = run(*args, capture_output=True, text=True, check=False).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Daemon:
    """modgated started through real socket activation, with the syscall shim preloaded."""

    def __init__(self, workdir, name, trusted_root, extra_env=None, args=()):
        self.address = "/run/modgate/%s.sock" % name
        self.shim_log = os.path.join(workdir, name + ".shim.log")
        self.stderr_path = os.path.join(workdir, name + ".stderr")
        self.notify_path = "/run/modgate/%s.notify" % name
        os.makedirs("/run/modgate", exist_ok=True)
        open(self.shim_log, "w").close()

        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.settimeout(30)

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
        cmd = ["systemd-socket-activate", "-l", self.address, "--fdname=varlink"]
        for k, v in env.items():
            cmd += ["-E", "%s=%s" % (k, v)]
        # Tests talk to one instance for their whole run: no idle exit unless a test asks for it.
        if not any(a.startswith("--idle-exit-sec=") for a in args):
            args = ("--idle-exit-sec=0", *args)
        cmd += [os.environ["MODGATED"], "--trusted-root=" + trusted_root, *args]

        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.stderr, stderr=self.stderr)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.address):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("systemd-socket-activate did not listen on %s" % self.address)
            time.sleep(0.02)

    def activate(self):
        """The first connection starts the daemon (systemd-socket-activate waits for it, as
        systemd does for a socket unit). Returns whether it then sent READY=1."""
        c = Varlink(self.address)
        try:
            reply = c.call("org.varlink.service.GetInfo")
        finally:
            c.close()
        return "error" not in reply and self.wait_ready()

    def wait_notify(self, word, timeout=30):
        """Waits for a sd_notify() message containing word (READY=1, RELOADING=1, ...), as the service
        manager would; returns the message or None."""
        deadline = time.monotonic() + timeout
        self.notify.settimeout(timeout)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return None
            try:
                msg = self.notify.recv(4096).decode()
            except socket.timeout:
                break
            if word in msg.split("\n"):
                return msg
        return None

    def wait_ready(self):
        return self.wait_notify("READY=1") is not None

    @property
    def pid(self):
        return self.proc.pid

    def call(self, method, parameters=None):
        return call(self.address, method, parameters)

    def load(self, name):
        return self.call("io.modgate.Manager.Load", {"name": name})

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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        self.notify.close()


class Tap:
    """TAP output, which meson counts case by case."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def case(self, name, fn):
        self.n += 1
        try:
            fn()
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (self.n, name, e), flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the next case runs
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            for line in ("%s: %s" % (type(e).__name__, e)).splitlines():
                print("# " + line, flush=True)
        else:
            print("ok %d - %s" % (self.n, name), flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed else 0


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
