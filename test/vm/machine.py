# SPDX-License-Identifier: LGPL-2.1-or-later
"""One QEMU guest of the VM tier: boot, commands, QMP, journal, console.

The guest boots the build root's kernel directly (-kernel/-initrd/-append) from a qcow2 overlay
over the cached root image, so that a run never changes the cache and a reboot keeps the guest's
changes. It has no network. Its consoles and channels:

  ttyS0           kernel and systemd console, appended to console.log
  ttyS1           a root shell for `--shell` (a unix socket; the guest autologins root)
  virtio-serial   org.modgate.agent: the command channel (see guest/.../agent)
  QMP             device_add/device_del for hotplug scenarios

KVM is used only when a probe boot shows that it works; otherwise TCG.
"""

import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# MODGATE_VM_QEMU names another QEMU binary (tests of the runner use a missing one).
QEMU = os.environ.get("MODGATE_VM_QEMU", "qemu-system-x86_64")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOT_TIMEOUT = {"kvm": 120, "tcg": 300}
PROBE_MARKER = b"MODGATE-VM-PROBE-OK"
# Slack on top of a command's own time limit for the round trip under TCG.
AGENT_SLACK = 30


class MachineError(Exception):
    """The guest is unusable: it did not boot, QEMU died or the agent stopped answering."""


class CommandFailed(Exception):
    def __init__(self, script, result):
        self.result = result
        super().__init__("`%s` exited with %s%s%s" % (
            script.strip(), result.rc,
            "\n--- stdout ---\n" + result.out.rstrip() if result.out.strip() else "",
            "\n--- stderr ---\n" + result.err.rstrip() if result.err.strip() else ""))


class TimeLimit(Exception):
    pass


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def json(self):
        return json.loads(self.out)


def reexec_in_devroot(script):
    """Runs script again, with this process's arguments, through tools/devroot: in the Debian 13
    build root that has QEMU and mmdebstrap (or directly, on a host that has modgate's
    dependencies)."""
    if os.environ.get("MODGATE_IN_DEVROOT") == "1" or os.environ.get("MODGATE_VM_REEXEC") == "1":
        return
    os.environ["MODGATE_VM_REEXEC"] = "1"
    devroot = os.path.join(SRC, "tools", "devroot")
    os.execv(devroot, [devroot, os.path.abspath(script)] + sys.argv[1:])


def unavailable():
    """Why this machine cannot run the VM tier, or None."""
    if os.geteuid() != 0:
        return "the VM tier needs root (the image is built with mmdebstrap as root)"
    tools = ((QEMU, "qemu-system-x86"), ("qemu-img", "qemu-utils"), ("mmdebstrap", "mmdebstrap"))
    for tool, package in tools:
        if not shutil.which(tool):
            return "%s not found (package %s; tools/devroot installs it)" % (tool, package)
    return None


def qemu_base(accel, memory):
    args = [QEMU, "-machine", "pc", "-m", str(memory), "-nodefaults", "-no-user-config",
            "-display", "none", "-no-reboot"]
    if accel == "kvm":
        return args + ["-accel", "kvm", "-cpu", "host"]
    return args + ["-accel", "tcg", "-cpu", "max"]


def probe_accel(manifest, workdir):
    """("kvm" or "tcg", why). KVM is tried with a boot of the kernel and initramfs that prints a
    marker once finit_module has worked, because /dev/kvm can exist and still fail on a real
    kernel (nested hypervisors: "KVM internal error", failed MSR writes)."""
    forced = os.environ.get("MODGATE_VM_ACCEL", "auto")
    if forced in ("kvm", "tcg"):
        return forced, "MODGATE_VM_ACCEL=" + forced
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "/dev/kvm is not usable"

    log = os.path.join(workdir, "kvm-probe.log")
    args = qemu_base("kvm", 512) + [
        "-kernel", manifest["kernel"], "-initrd", manifest["initrd"],
        "-append", "console=ttyS0 panic=-1 modgate_vm.probe", "-serial", "file:" + log]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    ok = False
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if os.path.exists(log):
            with open(log, "rb") as f:
                if PROBE_MARKER in f.read():
                    ok = True
                    break
    if proc.poll() is None:
        proc.kill()
    out = proc.communicate()[0].decode(errors="replace").strip()
    if ok:
        return "kvm", "the KVM probe boot reached the initramfs"
    return "tcg", "the KVM probe boot failed: %s" % (out.splitlines()[-1] if out else "no marker in 30 s")


class QMP:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.file = self.sock.makefile("rwb")
        self.events = []
        self._read()                    # the greeting
        self.execute("qmp_capabilities")

    def _read(self):
        line = self.file.readline()
        if not line:
            raise MachineError("QMP connection closed")
        return json.loads(line)

    def execute(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.file.write(json.dumps(msg).encode() + b"\n")
        self.file.flush()
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
            elif "error" in reply:
                raise RuntimeError("QMP %s: %s" % (command, reply["error"].get("desc", reply["error"])))
            elif "return" in reply:
                return reply["return"]

    def close(self):
        self.sock.close()


class Machine:
    def __init__(self, manifest, workdir, accel, append="", memory=2048, cpus=2, devices=(), image=""):
        self.manifest = manifest
        self.workdir = workdir
        self.accel = accel
        self.append = append
        self.devices = tuple(devices)   # more QEMU arguments: devices -nodefaults leaves out
        self.image = image              # "stock": the root without modgate
        self.memory = memory
        self.cpus = cpus
        self.proc = None
        self.agent = None
        self._qmp = None
        self.boots = 0
        self.boot_id = None
        self.state = None               # systemd's, once booted: running or degraded
        self.deadline = None            # set per scenario by the runner
        self.sockdir = tempfile.mkdtemp(prefix="modgate-vm-")
        os.makedirs(workdir, exist_ok=True)
        self.console_log = os.path.join(workdir, "console.log")
        self.overlay = os.path.join(self.sockdir, "root.qcow2")
        root = manifest["root_" + image] if image else manifest["root"]
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", root,
                        self.overlay], check=True)

    # --- life cycle ---

    def cmdline(self):
        m = self.manifest
        words = ["console=ttyS0", "panic=-1", "systemd.firstboot=no",
                 "modgate_vm.root=" + m["root_serial"],
                 "modgate_vm.verity=" + m["roothash"], "modgate_vm.verity_offset=%d" % m["hash_offset"]]
        return " ".join(words + ([self.append] if self.append else []))

    def qemu_args(self):
        m = self.manifest
        s = self.sockdir
        return qemu_base(self.accel, self.memory) + [
            "-smp", str(self.cpus),
            "-kernel", m["kernel"], "-initrd", m["initrd"], "-append", self.cmdline(),
            "-chardev", "file,id=console,path=%s,append=on" % self.console_log, "-serial", "chardev:console",
            "-chardev", "socket,id=shell,path=%s/shell.sock,server=on,wait=off" % s,
            "-serial", "chardev:shell",
            "-drive", "if=none,id=root,file=%s,format=qcow2" % self.overlay,
            "-device", "virtio-blk-pci,drive=root,serial=" + m["root_serial"],
            "-drive", "if=none,id=modules,file=%s,format=raw,readonly=on" % m["modules"],
            "-device", "virtio-blk-pci,drive=modules,serial=" + m["modules_serial"],
            "-device", "virtio-serial-pci,id=vser",
            "-chardev", "socket,id=agent,path=%s/agent.sock,server=on,wait=off" % s,
            "-device", "virtserialport,chardev=agent,name=org.modgate.agent",
            "-qmp", "unix:%s/qmp.sock,server=on,wait=off" % s,
        ] + list(self.devices)

    def boot(self, timeout):
        """Starts QEMU and waits until the agent answers and systemd has finished starting up.
        Returns the time it took; raises MachineError with the console's end on failure."""
        start = time.monotonic()
        self.boots += 1
        with open(self.console_log, "a") as f:
            f.write("\n=== boot %d (%s) ===\n" % (self.boots, self.accel))
        with open(os.path.join(self.workdir, "qemu.log"), "a") as log:
            self.proc = subprocess.Popen(self.qemu_args(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        deadline = start + timeout
        self.agent = self._connect("agent.sock", deadline)
        self._agent_buf = b""
        hello = self._receive(deadline, "boot")
        if "hello" not in hello:
            raise self._failure("the agent's first message was %r" % hello)
        self.boot_id = hello["hello"].replace("-", "")     # as _BOOT_ID= in the journal
        try:
            self.state = self.sh("systemctl is-system-running --wait", check=False,
                                 timeout=max(1, deadline - time.monotonic())).out.strip()
        except TimeLimit:
            self.state = "starting"
        if self.state not in ("running", "degraded"):
            jobs = self.sh("systemctl list-jobs --no-pager", check=False, timeout=30).out
            raise self._failure("systemd did not finish starting up (%s); its jobs:\n%s" % (
                self.state, jobs))
        return time.monotonic() - start

    def _connect(self, name, deadline):
        path = os.path.join(self.sockdir, name)
        while True:
            if self.proc.poll() is not None:
                raise self._failure("QEMU exited with %s" % self.proc.returncode)
            if os.path.exists(path):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    return s
                except (ConnectionRefusedError, FileNotFoundError):
                    s.close()
            if time.monotonic() > deadline:
                raise self._failure("QEMU did not create %s" % name)
            time.sleep(0.05)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _disconnect(self):
        for s in (self.agent, self._qmp):
            if s:
                s.close()
        self.agent = self._qmp = None

    def kill(self):
        if self.running():
            self.proc.kill()
            self.proc.wait()
        self._disconnect()

    def shutdown(self, timeout=120):
        """Powers the guest off cleanly, or kills QEMU after timeout."""
        if self.running() and self.agent:
            try:
                self.sh("systemctl --no-block poweroff", timeout=30)
            except (MachineError, CommandFailed, TimeLimit):
                pass
            if not self.wait_exit(timeout):
                print("machine: the guest did not power off in %d s, killing QEMU" % timeout,
                      file=sys.stderr)
        self.kill()

    def reboot(self, timeout):
        """A guest-initiated reboot (QEMU runs with -no-reboot, so it exits and starts again)."""
        try:
            self.sh("systemctl --no-block reboot", timeout=30)
        except MachineError:
            pass                        # the answer may be lost when QEMU is quick to go
        if not self.wait_exit(timeout):
            raise self._failure("the guest did not reboot in %d s" % timeout)
        self._disconnect()
        return self.boot(timeout)

    def close(self):
        self.kill()
        shutil.rmtree(self.sockdir, ignore_errors=True)

    # --- the agent ---

    def _receive(self, deadline, what):
        while b"\n" not in self._agent_buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._failure("no answer from the guest agent for %s" % what)
            r, _, _ = select.select([self.agent], [], [], min(left, 1.0))
            if self.proc.poll() is not None:
                raise self._failure("QEMU exited with %s during %s" % (self.proc.returncode, what))
            if r:
                try:
                    chunk = self.agent.recv(1 << 20)
                except OSError as e:
                    raise self._failure("the agent channel failed during %s: %s" % (what, e)) from None
                if not chunk:
                    raise self._failure("the agent channel closed during %s" % what)
                self._agent_buf += chunk
        line, _, self._agent_buf = self._agent_buf.partition(b"\n")
        return json.loads(line)

    def sh(self, script, timeout=60, check=True, stdin=""):
        """Runs a bash script in the guest as root. Raises CommandFailed on a non-zero exit when
        check is set, TimeLimit when it outlasts timeout or the scenario's time limit."""
        if not self.agent:
            raise MachineError("the guest is not running")
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 1:
                raise TimeLimit("scenario time limit reached before `%s`" % script.strip())
            timeout = min(timeout, left)
        self._id = getattr(self, "_id", 0) + 1
        req = {"id": self._id, "sh": script, "timeout": timeout, "stdin": stdin}
        try:
            self.agent.sendall(json.dumps(req).encode() + b"\n")
        except OSError as e:
            raise self._failure("the agent channel failed: %s" % e) from None
        reply = self._receive(time.monotonic() + timeout + AGENT_SLACK, "`%s`" % script.strip()[:80])
        if "hello" in reply:
            raise self._failure("the guest agent restarted during `%s`" % script.strip())
        if reply.get("id") != self._id or "error" in reply:
            raise MachineError("unexpected answer from the agent: %r" % reply)
        result = Result(reply["rc"], reply["out"], reply["err"])
        if reply["timed_out"]:
            raise TimeLimit("`%s` did not finish in %d s" % (script.strip(), timeout))
        if check and result.rc != 0:
            raise CommandFailed(script, result)
        return result

    def journal(self, *matches, unit=None):
        """Journal entries (dicts) with FIELD=value matches, after journald has written out
        everything it received."""
        self.sh("journalctl --sync")
        args = ["journalctl", "-o", "json", "--no-pager"] + [quote(m) for m in matches]
        if unit:
            args += ["-u", quote(unit)]
        out = self.sh(" ".join(args), check=False).out
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def collect(self):
        """Copies the guest's journal to the work directory."""
        for name, fmt in (("journal.json", "json"), ("journal.txt", "short-monotonic")):
            out = self.sh("journalctl --sync; journalctl -o %s --no-pager" % fmt, timeout=120).out
            with open(os.path.join(self.workdir, name), "w") as f:
                f.write(out)

    # --- QMP and console ---

    def qmp(self, command, **arguments):
        if not self._qmp:
            self._qmp = QMP(os.path.join(self.sockdir, "qmp.sock"))
        return self._qmp.execute(command, **arguments)

    def console_tail(self, lines=60, path=None):
        try:
            with open(path or self.console_log, "rb") as f:
                text = f.read().decode(errors="replace").replace("\r", "")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _failure(self, what):
        qemu = self.console_tail(20, os.path.join(self.workdir, "qemu.log"))
        return MachineError("%s\n--- end of the guest console (%s) ---\n%s%s" % (
            what, self.console_log, self.console_tail(),
            "\n--- QEMU says ---\n" + qemu if qemu.strip() else ""))

    def attach_shell(self):
        """Connects the terminal to the guest's root shell on ttyS1 until Ctrl-]."""
        import termios
        import tty
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(self.sockdir, "shell.sock"))
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        tty.setraw(fd)
        try:
            s.sendall(b"\r")
            while self.running():
                r, _, _ = select.select([fd, s], [], [], 1.0)
                if s in r:
                    data = s.recv(65536)
                    if not data:
                        break
                    os.write(sys.stdout.fileno(), data)
                if fd in r:
                    data = os.read(fd, 1024)
                    if not data or b"\x1d" in data:
                        break
                    s.sendall(data)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
            s.close()


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def die_with_parent():
    """QEMU must not outlive a runner that was killed (meson's timeout, Ctrl-C twice)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
