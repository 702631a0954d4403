#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgate-udev, as udev runs it: its requests and environment handling and exit codes against a
stand-in daemon that answers as told (or never), then end to end against the real modgated; and the
daemon's start-up check of systemd-udevd's capabilities."""

import fnmatch
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

UDEV = h.helper("modgate-udev")

# The stand-in daemon's answer for each MODALIAS of the outcome table.
ANSWERS = {
    "ok": (None, {"modules": [{"name": "e1000e", "outcome": "loaded"}]}),
    "already": (None, {"modules": [{"name": "e1000e", "outcome": "already_loaded"}]}),
    "notfound": ("io.modgate.Manager.ModuleNotFound", {"modalias": "notfound"}),
    "blacklisted": ("io.modgate.Manager.ModuleNotFound", {"modalias": "blacklisted", "blacklisted": ["nouveau"]}),
    "denied": ("io.modgate.Manager.UntrustedOrigin", {"module": "dummy", "reason": "superblock is writable",
                                                     "modules": []}),
    "install": ("io.modgate.Manager.InstallCommandRefused", {"module": "m", "command": "/bin/sh -c x",
                                                            "modules": []}),
    "timeout": ("io.modgate.Manager.Timeout", {"pending": ["slow"]}),
    "failed": ("io.modgate.Manager.LoadFailed", {"module": "veth", "reason": "finit_module failed",
                                                "errnoName": "ENOEXEC", "modules": []}),
    "invalid": ("io.modgate.Manager.InvalidModalias", {"reason": "control character"}),
    "badparam": ("org.varlink.service.InvalidParameter", {"parameter": "context"}),
    "unknown": ("io.modgate.Manager.SomethingNew", {}),
}
# What udev must see: outcomes in the normal course of device events exit 0.
EXPECTED_EXIT = {"ok": 0, "already": 0, "notfound": 0, "blacklisted": 0, "denied": 0, "install": 0,
                 "timeout": 0, "failed": 1, "invalid": 1, "badparam": 1, "unknown": 1}


def answer_by_key(msg):
    p = msg["parameters"]
    return ANSWERS.get(p.get("modalias") or p.get("name"), ANSWERS["ok"])


def udev_env(**kw):
    env = {"ACTION": "add", "MODALIAS": "pci:v00008086d000010D3sv00008086sd0000A01Fbc02sc00i00",
           "DEVPATH": "/devices/pci0000:00/0000:00:19.0", "SUBSYSTEM": "pci", "SEQNUM": "1234",
           "PATH": "/usr/sbin:/usr/bin"}
    env.update(kw)
    return {k: v for k, v in env.items() if v is not None}


def udev(*args, env=None, timeout=60, unit=None):
    prefix = h.in_unit(unit) if unit else []
    return h.run_program([*prefix, UDEV, *args], env=env if env is not None else udev_env(), timeout=timeout)


# udev runs its rules' programs in its own unit's cgroup, where modgated looks for it.
UDEVD = "systemd-udevd.service"
M = "io.modgate.Manager."
UEVENTS_LOST_ID = "d0a09ce1568c4f8e960a853349dea73f"
# udevd under the takeover: without CAP_SYS_MODULE.
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]


def device_with_modalias(resolvable):
    """A device of this machine whose uevent's MODALIAS the index resolves."""
    for dirpath, _, filenames in sorted(os.walk("/sys/devices")):
        if "uevent" not in filenames:
            continue
        try:
            with open(os.path.join(dirpath, "uevent")) as f:
                env = dict(x.split("=", 1) for x in f.read().splitlines() if "=" in x)
        except OSError:
            continue
        alias = env.get("MODALIAS")
        if alias and resolvable(alias):
            return dirpath[len("/sys"):], alias
    raise RuntimeError("no device of this machine has a modalias the module index resolves")


def daemon_start_log(work, trusted, udevd):
    """What modgated logs at start about systemd-udevd, started in a PID namespace of its own with
    a /proc of its own: alone (udevd None), or next to a process called systemd-udevd with (True)
    or without (False) CAP_SYS_MODULE in its bounding set. The host's own udevd, if any, is not
    visible there."""
    exe = os.path.join(work, "systemd-udevd")
    if not os.path.exists(exe):
        shutil.copy("/usr/bin/sleep", exe)
    sock = os.path.join(work, "udevd-check.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    fake = ""
    if udevd is not None:
        # The daemon looks once, at start: it starts only when the stand-in runs under its name.
        fake = ("%s%s 600 & for i in $(seq 1000); do "
                "[ \"$(cat /proc/$!/comm 2>/dev/null)\" = systemd-udevd ] && break; sleep 0.01; done; "
                % ("" if udevd else "setpriv --bounding-set=-sys_module ", exe))
    script = fake + 'exec "$0" --listen=%s --trusted-root=%s --idle-exit-sec=0' % (sock, trusted)
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM",
                             "sh", "-c", script, os.environ["MODGATED"]],
                            env={"PATH": os.environ["PATH"], "MODGATE_LOG_LEVEL": "debug",
                                 **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # The check runs before the daemon listens: once the socket is there, it has logged.
        deadline = time.monotonic() + 30
        while not os.path.exists(sock) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.exists(sock), "modgated did not listen on %s" % sock
    finally:
        # unshare ignores SIGTERM while it waits: the daemon, PID 1 of the namespace, gets it.
        with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
            for child in f.read().split():
                os.kill(int(child), signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, "modgated exited with %s:\n%s" % (proc.returncode, out)
    return out


def alias_for(tree, module):
    """A concrete MODALIAS that one of module's aliases matches, as a device would announce it."""
    for alias, mod in h.modules_alias(tree):
        if mod == module and alias.startswith("pci:v") and "*" in alias:
            concrete = alias.replace("sv*", "sv00001234").replace("sd*", "sd00005678")
            concrete = concrete.replace("bc*", "bc02").replace("sc*", "sc00").replace("i*", "i00")
            if fnmatch.fnmatchcase(concrete, alias) and "*" not in concrete:
                return concrete
    return None


def main():
    h.require_root()
    h.unshare_mounts()

    work = tempfile.mkdtemp(prefix="modgate-udev-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    journal = h.Journal()
    os.makedirs("/run/modgate", exist_ok=True)
    fake_path = "/run/modgate/fake.sock"
    fake = h.FakeModgated(fake_path, answer_by_key)

    t = h.Tap()

    def last_requests(n):
        return [r["parameters"] for r in fake.requests[-n:]]

    def case_modalias_request():
        before = len(fake.requests)
        res = udev("--address=" + fake_path)
        assert res.returncode == 0, res
        assert len(fake.requests) == before + 1, fake.requests
        msg = fake.requests[-1]
        assert msg["method"] == "io.modgate.Manager.Load", msg
        p = msg["parameters"]
        assert p["modalias"] == udev_env()["MODALIAS"] and "name" not in p, p
        assert p["context"] == {"source": "udev", "devpath": "/devices/pci0000:00/0000:00:19.0",
                                "subsystem": "pci", "seqnum": 1234, "action": "add"}, p
        # 60 s by default; the daemon is told to answer Timeout two seconds before.
        assert 44_000_000 <= p["timeoutUSec"] <= 45_000_000, p
        assert "loaded e1000e" in res.stderr, res

    def case_names():
        before = len(fake.requests)
        res = udev("--address=" + fake_path, "tifm_sd", "ms_block", "mspro_block")
        assert res.returncode == 0, res
        reqs = last_requests(len(fake.requests) - before)
        assert sorted(r["name"] for r in reqs) == ["ms_block", "mspro_block", "tifm_sd"], reqs
        for r in reqs:
            assert "modalias" not in r and r["context"]["source"] == "udev", r
            assert r["context"]["devpath"] == "/devices/pci0000:00/0000:00:19.0", r
        # A rule that passes the device's modalias ("kmod load $env{MODALIAS}", as udev's builtin
        # takes it, rewritten by modgate-udev-rules): sent as a modalias, not as a name.
        alias = "pci:v00008086d000015B8sv00008086sd00002071bc02sc00i00"
        before = len(fake.requests)
        res = udev("--address=" + fake_path, alias, "e1000e")
        assert res.returncode == 0, res
        reqs = last_requests(len(fake.requests) - before)
        assert sorted((r.get("name") or "", r.get("modalias") or "") for r in reqs) == [("", alias), ("e1000e", "")], reqs

    def case_missing_env():
        res = udev("--address=" + fake_path, env={"MODALIAS": "acpi:PNP0A03:", "SEQNUM": "12x"})
        assert res.returncode == 0, res
        p = fake.requests[-1]["parameters"]
        assert p["modalias"] == "acpi:PNP0A03:" and p["context"] == {"source": "udev"}, p
        res = udev("--address=" + fake_path, env=udev_env(DEVPATH="/d" * 3000, SEQNUM="-5"))
        assert res.returncode == 0, res
        p = fake.requests[-1]["parameters"]
        assert "devpath" not in p["context"] and "seqnum" not in p["context"], p

    def case_exit_codes():
        wrong = []
        for key, want in EXPECTED_EXIT.items():
            res = udev("--address=" + fake_path, env=udev_env(MODALIAS=key))
            if res.returncode != want:
                wrong.append((key, res))
            elif not res.stderr.strip() and key not in ("notfound", "already"):
                wrong.append((key, "nothing logged: %r" % res))
        assert not wrong, wrong
        assert "refused dummy: superblock is writable" in udev("--address=" + fake_path,
                                                               env=udev_env(MODALIAS="denied")).stderr
        assert "still loading in modgated: slow" in udev("--address=" + fake_path,
                                                         env=udev_env(MODALIAS="timeout")).stderr

    def case_one_failure_among_names():
        before = len(fake.requests)
        res = udev("--address=" + fake_path, "ok", "failed", "notfound")
        assert res.returncode == 1, res
        assert len(fake.requests) == before + 3, "every name must be asked for"
        assert "veth: finit_module failed (ENOEXEC)" in res.stderr, res

    def case_timeout():
        silent = h.FakeModgated("/run/modgate/silent.sock", lambda msg: None)
        try:
            res = udev("--address=/run/modgate/silent.sock", "--timeout=1", timeout=20)
            p = silent.requests[-1]["parameters"]
        finally:
            silent.stop()
        assert res.returncode != 0 and "did not answer in time" in res.stderr, res
        assert 0.9 <= res.elapsed < 3, res
        # Three quarters of the time left when the request is sent.
        assert 700_000 <= p["timeoutUSec"] <= 750_000, p
        res = udev("--address=" + fake_path, "--timeout=500ms")
        assert res.returncode == 0 and 300_000 <= fake.requests[-1]["parameters"]["timeoutUSec"] <= 375_000, res

    def case_busy():
        # Busy is asked again, after pauses that double from 50 ms, until it is answered; with no
        # time left it is the answer.
        answers = []

        def busy_twice(msg):
            answers.append(time.monotonic())
            if len(answers) <= 2:
                return ("io.modgate.Manager.Busy", {"reason": "module is being loaded with other parameters",
                                                    "module": "e1000e"})
            return ANSWERS["ok"]

        busy = h.FakeModgated("/run/modgate/busy.sock", busy_twice)
        try:
            res = udev("--address=/run/modgate/busy.sock", "--timeout=5")
        finally:
            busy.stop()
        assert res.returncode == 0, res
        assert len(answers) == 3 and busy.connections == 3, (answers, busy.connections)
        gaps = [b - a for a, b in zip(answers, answers[1:])]
        assert 0.04 <= gaps[0] < 0.5 and 0.09 <= gaps[1] < 0.6, gaps
        always = h.FakeModgated("/run/modgate/always-busy.sock",
                                lambda msg: ("io.modgate.Manager.Busy", {"reason": "too many requests pending"}))
        try:
            res = udev("--address=/run/modgate/always-busy.sock", "--timeout=1", timeout=20)
            n = len(always.requests)
        finally:
            always.stop()
        assert res.returncode == 1 and "too many requests pending" in res.stderr, res
        # 50, 100, 200 and 400 ms of pauses fit in the second, the next does not.
        assert 4 <= n <= 6 and res.elapsed < 2, (n, res)

    def case_transport():
        res = udev("--address=/run/modgate/nothing.sock")
        assert res.returncode != 0 and "could not connect to modgated" in res.stderr, res
        assert "No such file or directory" in res.stderr, res
        dying = h.FakeModgated("/run/modgate/dying.sock", lambda msg: "close")
        try:
            res = udev("--address=/run/modgate/dying.sock", "a", "b")
        finally:
            dying.stop()
        assert res.returncode != 0 and "connection to modgated failed" in res.stderr, res

    def case_broken_answers():
        # Whatever a broken or impostor daemon sends back, the helper reads at most 1 MiB of it,
        # names what was wrong and exits 1 (as for a daemon it cannot reach), without a crash.
        valid = json.dumps({"parameters": ANSWERS["ok"][1]}).encode()
        cases = {
            "garbage": ([b"<html>garbage</html>\0"], "not a varlink reply (unexpected character)", "Bad message"),
            "trailing": ([valid + b" x\0"], "(trailing bytes after the value)", "Bad message"),
            "utf8": ([b'{"parameters":{"modules":[{"name":"caf\xe9"}]}}\0'], "(string is not valid UTF-8)",
                     "Invalid or incomplete multibyte"),
            "continues": ([b'{"continues":true,"parameters":{}}\0'], "(reply continues a call", "Protocol error"),
            "deep": ([b'{"parameters":{"a":' + b"[" * 100 + b"]" * 100 + b"}}\0"], "(nested too deeply)",
                     "Too many levels"),
            "midreply": ([valid[:20]], "connection to modgated failed (io.systemd.Disconnected)", ""),
            "huge": ([b'{"parameters":{"a":"'] + [b"a" * 65536] * 20, "(larger than 1 MiB)", "Message too long"),
        }
        answers = {key: pieces for key, (pieces, _, _) in cases.items()}
        broken = h.FakeModgated("/run/modgate/broken.sock", lambda msg: answers[msg["parameters"]["modalias"]])
        try:
            wrong = []
            for key, (_, words, errno_words) in cases.items():
                res = udev("--address=/run/modgate/broken.sock", env=udev_env(MODALIAS=key), timeout=20)
                if res.returncode != 1 or words not in res.stderr or errno_words not in res.stderr:
                    wrong.append((key, res))
            assert not wrong, wrong
            # An answer in pieces, as a slow daemon writes it, is read whole.
            answers["slow"] = [valid[i:i + 7] for i in range(0, len(valid), 7)] + [b"\0"]
            res = udev("--address=/run/modgate/broken.sock", env=udev_env(MODALIAS="slow"), timeout=20)
            assert res.returncode == 0 and "loaded e1000e" in res.stderr, res
        finally:
            broken.stop()

    def case_strings_escaped():
        # Quotes, backslashes and UTF-8 reach the daemon as they were; bytes that are not UTF-8
        # cannot be sent as JSON and are left out of the context.
        odd = '/devices/"q"\\back slash/caf\u00e9/\u2603'
        res = udev("--address=" + fake_path, env=udev_env(DEVPATH=odd, SUBSYSTEM="pci\udce9"))
        assert res.returncode == 0, res
        ctx = fake.requests[-1]["parameters"]["context"]
        assert ctx["devpath"] == odd and "subsystem" not in ctx, ctx
        assert not fake.garbage, fake.garbage

    def case_usage():
        n = fake.connections
        res = udev("--address=" + fake_path, env={"ACTION": "add"})
        assert res.returncode != 0 and "No MODALIAS" in res.stderr, res
        for bad in ("--timeout=0", "--timeout=abc", "--timeout=", "--timeout=7200", "--bogus"):
            res = udev("--address=" + fake_path, bad)
            assert res.returncode != 0, (bad, res)
        assert fake.connections == n, "a usage error must not reach the daemon"

    def case_invalid_refused_unsent():
        n = fake.connections
        for env, args, words in (
                (udev_env(MODALIAS="pci:v1 pci:v2"), [], "InvalidModalias (modalias contains a space"),
                (udev_env(MODALIAS="pci:v\x01"), [], "InvalidModalias (modalias contains a space"),
                (udev_env(), ["a/b"], "InvalidName")):
            res = udev("--address=" + fake_path, *args, env=env)
            assert res.returncode == 1, (env, args, res)
            assert "refused before asking modgated: io.modgate.Manager." + words in res.stderr, (words, res)
        assert fake.connections == n, "what the daemon would refuse as invalid must not reach it"
        # A context value the daemon would refuse is left out, as a missing one is: the request goes
        # without it (and udevd without CAP_SYS_MODULE then names no device, which the daemon refuses).
        res = udev("--address=" + fake_path, env=udev_env(DEVPATH="/devices/x\x1b[31m"))
        assert res.returncode == 0 and fake.connections == n + 1, res
        assert "devpath" not in fake.requests[-1]["parameters"]["context"], fake.requests[-1]

    # The real daemon.
    tree = h.kernel_tree()
    trusted = h.mount_trusted_tree(tree, work)
    h.mount_sys_module()
    deps = h.parse_modules_dep(tree)

    def case_udevd_with_cap():
        out = daemon_start_log(work, trusted, True)
        assert "systemd-udevd holds CAP_SYS_MODULE: its kmod builtin can load modules without modgate." in out, out

    def case_udevd_without_cap():
        out = daemon_start_log(work, trusted, False)
        assert "systemd-udevd runs without CAP_SYS_MODULE: it loads modules through modgate only." in out, out
        assert "holds CAP_SYS_MODULE" not in out, out

    def case_no_udevd():
        out = daemon_start_log(work, trusted, None)
        assert "Could not check systemd-udevd for CAP_SYS_MODULE: No such process" in out, out
        assert "holds CAP_SYS_MODULE" not in out and "runs without CAP_SYS_MODULE" not in out, out

    def case_udevd_later():
        # The takeover starts modgated beside udevd: udevd may not run yet at the daemon's start. It
        # is looked at again when it first asks.
        exe = os.path.join(work, "systemd-udevd")
        sock = os.path.join(work, "udevd-late.sock")
        script = ('"$0" --listen=%s --trusted-root=%s --idle-exit-sec=0 & d=$!; '
                  'for i in $(seq 3000); do [ -S %s ] && break; sleep 0.01; done; '
                  'setpriv --bounding-set=-sys_module %s 600 & '
                  'for i in $(seq 1000); do [ "$(cat /proc/$!/comm 2>/dev/null)" = systemd-udevd ] && break; '
                  'sleep 0.01; done; '
                  'ACTION=add DEVPATH=/devices/none SUBSYSTEM=pci "$@" --address=%s tifm_sd; '
                  'kill $d; wait $d'
                  % (sock, trusted, sock, exe, sock))
        res = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
                              os.environ["MODGATED"], *h.in_unit(UDEVD + "/udev/late"), UDEV],
                             env={"PATH": os.environ["PATH"], "MODGATE_LOG_LEVEL": "debug",
                                  **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        out = res.stdout
        first = out.find("Could not check systemd-udevd for CAP_SYS_MODULE: No such process")
        later = out.find("systemd-udevd runs without CAP_SYS_MODULE: it loads modules through modgate only.")
        assert 0 <= first < later, out
        assert out.count("runs without CAP_SYS_MODULE") == 1, out

    def case_udevd_unit_without_udevd():
        # Requests from udevd's unit while no process is named systemd-udevd (renamed, or a test's):
        # looked for at start and at the first request, not again at each (each look reads
        # /proc/PID/comm of every process).
        sock = os.path.join(work, "udevd-none.sock")
        script = ('"$0" --listen=%s --trusted-root=%s --idle-exit-sec=0 & d=$!; '
                  'for i in $(seq 3000); do [ -S %s ] && break; sleep 0.01; done; '
                  'for i in 1 2 3; do ACTION=add DEVPATH=/devices/none SUBSYSTEM=pci "$@" --address=%s tifm_sd; done; '
                  'kill $d; wait $d'
                  % (sock, trusted, sock, sock))
        res = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
                              os.environ["MODGATED"], *h.in_unit(UDEVD + "/udev/none"), UDEV],
                             env={"PATH": os.environ["PATH"], "MODGATE_LOG_LEVEL": "debug",
                                  **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        out = res.stdout
        assert out.count("Could not check systemd-udevd for CAP_SYS_MODULE: No such process") == 2, out
        assert out.count("tifm_sd") >= 3, out

    daemon = h.Daemon(work, "main", trusted)
    slow = h.Daemon(work, "slow", trusted, extra_env={"MODGATE_SHIM_DELAY_MS": "3000"})
    daemon.activate()
    slow.activate()

    def case_real_modalias():
        modalias = alias_for(tree, "e1000e")
        assert modalias, "no PCI alias of e1000e in this tree"
        res = udev("--address=" + daemon.address, env=udev_env(MODALIAS=modalias), unit=UDEVD)
        assert res.returncode == 0, res
        names = [r["name"] for r in daemon.shim_records() if r["call"] == "finit_module"]
        assert "e1000e" in names, names
        for r in daemon.shim_records():
            assert r["path"].startswith(trusted + "/"), r
        assert "loaded" in res.stderr and "e1000e" in res.stderr, res

    def case_real_names_and_not_found():
        res = udev("--address=" + daemon.address, "vxlan", "tun", unit=UDEVD)
        assert res.returncode == 0, res
        names = {r["name"] for r in daemon.shim_records()}
        assert {"vxlan", "tun"} <= names and set(deps["vxlan"][1]) <= names, names
        n = len(daemon.shim_records())
        res = udev("--address=" + daemon.address, env=udev_env(MODALIAS="modgate:no-such-device"), unit=UDEVD)
        assert res.returncode == 0, res
        assert len(daemon.shim_records()) == n, "a syscall for a modalias nothing matches"

    def case_real_timeout_load_goes_on():
        res = udev("--address=" + slow.address, "--timeout=1", "dummy", unit=UDEVD)
        assert res.returncode == 0, res
        assert res.elapsed < 2, res
        assert "still loading" in res.stderr, res
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open("/sys/module/dummy/initstate") as f:
                    if f.read().strip() == "live":
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("dummy never became live after the helper left")

    # udevd under the takeover asks for what the kernel announced: each request is checked against the
    # kernel's uevent of its SEQNUM, whether or not the device is still there.
    store = h.FdStore()
    udevd = [*h.in_unit(UDEVD + "/udev/worker"), *NO_SYS_MODULE]
    ue = h.Daemon(work, "uevents", trusted, store=store)
    assert ue.activate(), ue.stderr_text()

    def resolvable(alias):
        return "error" not in ue.call(M + "Load", {"modalias": alias, "context": {"source": "admin"}})

    device, alias = device_with_modalias(resolvable)
    subsystem = os.path.basename(os.readlink("/sys%s/subsystem" % device))
    hidden = []

    def hide(devpath):
        """The device gone, as far as sysfs tells the daemon: an empty directory mounted over it."""
        h.run("mount", "-t", "tmpfs", "-o", "ro", "gone", "/sys" + devpath)
        hidden.append(devpath)

    def unhide():
        while hidden:
            h.run("umount", "/sys" + hidden.pop())

    def udev_load(d, seqnum, devpath=device, modalias=alias):
        ctx = {"source": "udev", "devpath": devpath, "subsystem": subsystem, "action": "add", "seqnum": seqnum}
        return h.call_as(udevd, d.address, M + "Load", {"modalias": modalias, "context": ctx})

    def loaded_by(reply):
        mods = h.modules_of(reply)
        assert mods and all(m["outcome"] in ("loaded", "already_loaded") for m in mods), reply
        return mods

    def case_uevent_gone():
        h.reset_sys_module()
        ev = h.kernel_uevent(device)
        assert ev.get("MODALIAS") == alias, ev
        hide(device)
        try:
            # Gone from sysfs: the kernel's event is what counts. modgate-udev passes udev's SEQNUM.
            n = len(h.finit_records(ue.shim_records()))
            res = h.run_program([*udevd, UDEV, "--address=" + ue.address],
                                env=udev_env(MODALIAS=alias, DEVPATH=device, SUBSYSTEM=subsystem,
                                             SEQNUM=str(ev["SEQNUM"])))
            assert res.returncode == 0, res
            assert len(h.finit_records(ue.shim_records())) > n, (res, ue.stderr_text()[-2000:])
            rec = journal.records(MODGATE_SEQNUM=str(ev["SEQNUM"]), _PID=str(ue.pid), MODGATE_OUTCOME="loaded")
            assert rec and rec[0]["MODGATE_DEVPATH"] == device, rec
        finally:
            unhide()
        print("# %s (%s): uevent %d, loaded while hidden" % (device, subsystem, ev["SEQNUM"]), flush=True)

    def case_uevent_cpu():
        # A CPU's MODALIAS ends in a newline in the kernel's uevent, which udev does not pass on.
        cpu = "/devices/system/cpu/cpu0"
        h.reset_sys_module()
        ev = h.kernel_uevent(cpu)
        assert ev["MODALIAS"].endswith("\n"), ev
        ctx = {"source": "udev", "devpath": cpu, "subsystem": "cpu", "action": "add", "seqnum": ev["SEQNUM"]}
        r = h.call_as(udevd, ue.address, M + "Load", {"modalias": ev["MODALIAS"].rstrip("\n"), "context": ctx})
        assert "error" not in r, r

    def case_uevent_none():
        h.reset_sys_module()
        ev = h.kernel_uevent(device)
        made_up = h.kernel_seqnum() + 100000
        n = len(h.finit_records(ue.shim_records()))
        cases = [
            (made_up, device, alias, "the kernel sent no uevent %d" % made_up),
            (ev["SEQNUM"], "/devices/virtual/mem/null", alias,
             "the kernel's uevent %d is for %s, not /devices/virtual/mem/null" % (ev["SEQNUM"], device)),
            (ev["SEQNUM"], device, "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",
             "modalias pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00 is not device %s's (%s)"
             % (device, alias)),
        ]
        for seqnum, devpath, modalias, why in cases:
            r = udev_load(ue, seqnum, devpath, modalias)
            assert r.get("error") == M + "PermissionDenied", r
            assert r["parameters"]["reason"] == why, r
        # No SEQNUM at all: refused too.
        ctx = {"source": "udev", "devpath": device, "action": "add"}
        r = h.call_as(udevd, ue.address, M + "Load", {"modalias": alias, "context": ctx})
        assert r.get("error") == M + "PermissionDenied", r
        assert r["parameters"]["reason"] == "the request gives no SEQNUM of the kernel's event", r
        assert len(h.finit_records(ue.shim_records())) == n, ue.shim_records()
        # The real one, with the device there: loads.
        loaded_by(udev_load(ue, ev["SEQNUM"]))

    def case_uevent_idle_exit():
        # An event sent while no daemon runs waits in the socket kept in the fd store.
        assert store.count("uevent") == 1, store.names()
        # One instance at a time reads the socket, as under PID 1.
        h.assert_clean_exit(ue)
        daemons.remove(ue)
        d = h.Daemon(work, "uevents-idle", trusted, store=store, args=("--idle-exit-sec=2",))
        assert d.activate(), d.stderr_text()
        first = d.pid
        # Read by this instance before its exit: its log is kept for the next one.
        read = h.kernel_uevent(device)
        h.wait_for("the idle exit", lambda: d.proc.poll() is not None, timeout=20)
        assert d.proc.returncode == 0, d.stderr_text()
        assert store.count("uevent-log") == 1, store.names()
        h.reset_sys_module()
        ev = h.kernel_uevent(device)
        hide(device)
        try:
            # The next connection starts the next instance, as PID 1 does for the socket unit.
            again = d
            daemons.append(again)
            assert again.activate(), again.stderr_text()
            assert again.pid != first, "not started again"
            assert store.count("uevent-log") == 0, store.names()     # taken: a crash leaves none
            loaded_by(udev_load(again, ev["SEQNUM"]))
            h.reset_sys_module()
            loaded_by(udev_load(again, read["SEQNUM"]))
            # A daemon without the store never saw it: sysfs decides, and the device is gone.
            h.reset_sys_module()
            bare = h.Daemon(work, "uevents-bare", trusted)
            daemons.append(bare)
            assert bare.activate(), bare.stderr_text()
            r = udev_load(bare, ev["SEQNUM"])
            assert r.get("error") == M + "PermissionDenied", r
            assert r["parameters"]["reason"] == "device %s does not exist" % device, r
        finally:
            unhide()

    def case_uevent_overflow():
        # The socket's buffer overflowed while no daemon ran: what may be lost is checked against sysfs,
        # and the daemon says so. The store's socket is the daemon's: made small here, as a burst
        # larger than net.core.rmem_max would make it full.
        last = daemons[-2]      # uevents-again, which has the store
        h.assert_clean_exit(last)
        daemons.remove(last)
        sock = socket.socket(fileno=os.dup(store.find("uevent")))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        try:
            events = [h.kernel_uevent(device) for _ in range(20)]
            hide(device)
            d = h.Daemon(work, "uevents-overflow", trusted, store=store)
            daemons.append(d)
            assert d.activate(), d.stderr_text()
            r = udev_load(d, events[-1]["SEQNUM"])
            assert r.get("error") == M + "PermissionDenied", r
            assert r["parameters"]["reason"] == "device %s does not exist" % device, r
            lost = journal.records(MESSAGE_ID=UEVENTS_LOST_ID, _PID=str(d.pid))
            assert len(lost) == 1 and int(lost[0]["MODGATE_SEQNUM"]) >= events[-1]["SEQNUM"], lost
            print("# %s" % lost[0]["MESSAGE"], flush=True)
        finally:
            unhide()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            sock.close()

    daemons = [ue]
    t.case("udevd's request for a device gone since the kernel's uevent loads its driver; SEQNUM is passed",
           case_uevent_gone)
    t.case("a CPU's modalias, which the kernel's event ends with a newline, matches udev's", case_uevent_cpu)
    t.case("a request whose SEQNUM names no kernel event, another device's, or a modalias the event does not "
           "have, or no SEQNUM, is refused", case_uevent_none)
    t.case("an event sent while no daemon ran is read from the socket kept in the fd store, one the last "
           "instance read from its saved log", case_uevent_idle_exit)
    t.case("events lost to an overflowed buffer are checked against sysfs, and said so", case_uevent_overflow)
    t.case("a device event sends MODALIAS, the udev context and a timeoutUSec below the helper's", case_modalias_request)
    t.case("module names as arguments send one request each", case_names)
    t.case("missing, oversized or non-numeric udev values are left out of the context", case_missing_env)
    t.case("each outcome gives udev the right exit code, and is logged", case_exit_codes)
    t.case("one failure among several names fails the run, every name is still asked for", case_one_failure_among_names)
    t.case("a daemon that never answers: the helper leaves at --timeout", case_timeout)
    t.case("Busy is asked again, after growing pauses, within the helper's timeout", case_busy)
    t.case("no socket, or a daemon that hangs up, is a logged non-zero exit", case_transport)
    t.case("a daemon that answers garbage, too much, or hangs up mid-answer: a named error, exit 1",
           case_broken_answers)
    t.case("context strings are escaped as JSON; one that is not UTF-8 is left out", case_strings_escaped)
    t.case("usage errors exit non-zero without a connection", case_usage)
    t.case("a request the daemon would refuse as invalid fails in its words, without a connection; a bad "
           "context value is left out",
           case_invalid_refused_unsent)
    t.case("the daemon warns at start when systemd-udevd holds CAP_SYS_MODULE", case_udevd_with_cap)
    t.case("udevd not running yet at the daemon's start is looked at when it first asks", case_udevd_later)
    t.case("the daemon says so when systemd-udevd runs without CAP_SYS_MODULE", case_udevd_without_cap)
    t.case("requests from udevd's unit with no systemd-udevd process: looked for once more, not at each",
           case_udevd_unit_without_udevd)
    t.case("without systemd-udevd the daemon only logs at debug level", case_no_udevd)
    t.case("end to end: a real device MODALIAS loads its driver through modgated", case_real_modalias)
    t.case("end to end: module names load, an unmatched MODALIAS exits 0 without a syscall",
           case_real_names_and_not_found)
    t.case("end to end: a slow module times out in the helper first and goes on loading in the daemon",
           case_real_timeout_load_goes_on)

    t.case("the daemons exit cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(daemon, slow, *daemons), always=True)
    t.run()
    fake.stop()
    journal.stop()
    if t.failed:
        for d in (daemon, slow):
            print("# --- %s stderr ---" % d.address)
            for line in d.stderr_text().splitlines()[-20:]:
                print("# " + line)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
