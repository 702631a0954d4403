#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgate-modprobe, as the kernel runs it ("modprobe -q -- NAME", no open files, HOME=/ and a fixed
PATH): argument forms, names refused before any connection, exit codes, against a stand-in daemon
and then end to end against the real modgated."""

import fcntl
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

MODPROBE = h.helper("modgate-modprobe")
KERNEL_ENV = {"HOME": "/", "TERM": "linux", "PATH": "/sbin:/usr/sbin:/bin:/usr/bin"}

ANSWERS = {
    "fs-erofs": (None, {"modules": [{"name": "erofs", "outcome": "loaded"}]}),
    "net-pf-38": (None, {"modules": [{"name": "af_alg", "outcome": "already_loaded"}]}),
    "crypto-hmac(sha256)": (None, {"modules": [{"name": "hmac", "outcome": "builtin"}]}),
    "fs-nothing": ("io.modgate.Manager.ModuleNotFound", {"modalias": "fs-nothing"}),
    "fs-blacklisted": ("io.modgate.Manager.ModuleNotFound", {"modalias": "fs-blacklisted",
                                                             "blacklisted": ["x"]}),
    "fs-denied": ("io.modgate.Manager.UntrustedOrigin", {"module": "d", "reason": "writable", "modules": []}),
    "fs-failed": ("io.modgate.Manager.LoadFailed", {"module": "f", "reason": "finit_module failed",
                                                   "errnoName": "ENOEXEC", "modules": []}),
    "fs-slow": ("io.modgate.Manager.Timeout", {"pending": ["slow"]}),
}
EXPECTED_EXIT = {"fs-erofs": 0, "net-pf-38": 0, "crypto-hmac(sha256)": 0, "fs-nothing": 1, "fs-blacklisted": 1,
                 "fs-denied": 1, "fs-failed": 1, "fs-slow": 1}


def modprobe(*args, close_stdio=False, timeout=60):
    return h.run_program([MODPROBE, *args], env=KERNEL_ENV, close_stdio=close_stdio, timeout=timeout)


def main():
    h.require_root()
    h.unshare_mounts()

    work = tempfile.mkdtemp(prefix="modgate-modprobe-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    journal = h.Journal()
    os.makedirs("/run/modgate", exist_ok=True)
    fake_path = "/run/modgate/fake.sock"
    fake = h.FakeModgated(fake_path, lambda msg: ANSWERS.get(msg["parameters"].get("modalias"),
                                                             ANSWERS["fs-nothing"]))
    addr = "--address=" + fake_path

    t = h.Tap()

    def case_kernel_form():
        res = modprobe(addr, "-q", "--", "fs-erofs")
        assert res.returncode == 0, res
        msg = fake.requests[-1]
        assert msg["method"] == "io.modgate.Manager.Load", msg
        p = msg["parameters"]
        assert p["modalias"] == "fs-erofs" and "name" not in p, p
        assert p["context"] == {"source": "kernel"}, p
        # 15 s of its own; the daemon answers Timeout 1.5 s before.
        assert 11_000_000 <= p["timeoutUSec"] <= 11_250_000, p
        assert res.stderr == "", res

    def case_other_forms():
        for args in (["fs-erofs"], ["-q", "fs-erofs"], ["--", "fs-erofs"], ["-v", "--", "fs-erofs"],
                     ["--quiet", "fs-erofs"]):
            res = modprobe(addr, *args)
            assert res.returncode == 0, (args, res)
            assert fake.requests[-1]["parameters"]["modalias"] == "fs-erofs", args

    def case_aliases_pass_unchanged():
        for name in ("net-pf-38", "crypto-hmac(sha256)"):
            res = modprobe(addr, "-q", "--", name)
            assert res.returncode == 0, (name, res)
            assert fake.requests[-1]["parameters"]["modalias"] == name

    def case_exit_codes():
        wrong = [(n, r) for n, want in EXPECTED_EXIT.items() for r in [modprobe(addr, "-q", "--", n)]
                 if r.returncode != want]
        assert not wrong, wrong

    def case_quiet():
        res = modprobe(addr, "-q", "--", "fs-nothing")
        assert res.returncode == 1 and res.stderr == "", res
        res = modprobe(addr, "--", "fs-nothing")
        assert res.returncode == 1 and "modgate-modprobe: fs-nothing: no module matches" in res.stderr, res
        # Real failures are reported even with -q.
        res = modprobe(addr, "-q", "--", "fs-denied")
        assert res.returncode == 1 and "modgate refused d: writable" in res.stderr, res

    def case_bad_names():
        n = fake.connections
        for name in ("", "-r", "-", "--x", "a b", "a\tb", "a\nb", "a/b", "../x", "/lib/modules/x.ko", "x" * 256,
                     "fs-\x1b[31m", "x\x7f", " x", "caf\u00e9"):
            res = modprobe(addr, "-q", "--", name)
            assert res.returncode == 1, (name, res)
            assert "Refusing invalid module name" in res.stderr, (name, res)
            assert "\n" not in res.stderr.rstrip("\n"), ("a name must not forge log lines", res)
            assert "\x1b" not in res.stderr, res
        # In the daemon's words, as it would refuse them as a modalias.
        res = modprobe(addr, "-q", "--", "a b")
        assert "modalias contains a space, a control character or a non-ASCII byte" in res.stderr, res
        res = modprobe(addr, "-q", "--", "x" * 255)
        assert res.returncode == 1 and "no module matches" not in res.stderr, res
        assert fake.connections == n + 1, "only the 255-byte name may reach the daemon"

    def case_bad_arguments():
        n = fake.connections
        for args in ([], ["-q"], ["-q", "--"], ["-r", "fs-erofs"], ["--remove", "fs-erofs"], ["-a", "x", "y"],
                     ["fs-erofs", "param=1"], ["-q", "--", "fs-erofs", "extra"], ["--timeout=0", "fs-erofs"],
                     ["-n", "fs-erofs"]):
            res = modprobe(addr, *args)
            assert res.returncode == 1, (args, res)
        assert fake.connections == n, "a bad invocation must not reach the daemon"

    def case_no_stdio():
        # All three closed, as the kernel starts its helpers, and stderr alone closed: then the first
        # fd the helper opens is 2, and if that were the varlink socket, the failure's log line
        # would go into it and arrive here as bytes that are not a message.
        for closed in (True, (2,)):
            n = len(fake.requests)
            res = modprobe(addr, "-q", "--", "fs-erofs", close_stdio=closed)
            assert res.returncode == 0, (closed, res)
            assert len(fake.requests) == n + 1, "the request did not arrive"
            res = modprobe(addr, "-q", "--", "fs-failed", close_stdio=closed)
            assert res.returncode == 1, (closed, res)
            assert fake.wait_closed(), "the helper's connections were not closed"
            assert fake.garbage == [], (closed, fake.garbage)
            assert [r["method"] for r in fake.requests[n:]] == ["io.modgate.Manager.Load"] * 2, fake.requests[n:]

    def case_transport():
        res = modprobe("--address=/run/modgate/nothing.sock", "-q", "--", "fs-erofs")
        assert res.returncode == 1 and "could not connect to modgated" in res.stderr, res
        silent = h.FakeModgated("/run/modgate/silent.sock", lambda msg: None)
        try:
            res = modprobe("--address=/run/modgate/silent.sock", "--timeout=1", "-q", "--", "fs-erofs",
                           timeout=20)
        finally:
            silent.stop()
        assert res.returncode == 1 and 0.9 <= res.elapsed < 3, res
        dying = h.FakeModgated("/run/modgate/dying.sock", lambda msg: "close")
        try:
            res = modprobe("--address=/run/modgate/dying.sock", "-q", "--", "fs-erofs")
        finally:
            dying.stop()
        assert res.returncode == 1, res

    def case_start_timeout():
        # A daemon that is not running (nothing holds /run/modgated/running) and does not start is
        # given up on after --start-timeout, not --timeout: the caller may be PID 1, which would start
        # it. One that runs gets the whole --timeout.
        lock = "/run/modgated/running"
        os.makedirs(os.path.dirname(lock), exist_ok=True)
        if os.path.exists(lock):
            os.unlink(lock)
        silent = h.FakeModgated("/run/modgate/silent-start.sock", lambda msg: None)
        try:
            res = modprobe("--address=/run/modgate/silent-start.sock", "--timeout=10", "--start-timeout=1",
                           "-q", "--", "fs-erofs", timeout=30)
            assert res.returncode == 1 and 0.9 <= res.elapsed < 2.5, res
            assert "modgated was not running and did not start within 1000 ms" in res.stderr, res
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                res = modprobe("--address=/run/modgate/silent-start.sock", "--timeout=3", "--start-timeout=1",
                               "-q", "--", "fs-erofs", timeout=30)
            finally:
                os.close(fd)
            assert res.returncode == 1 and 2.9 <= res.elapsed < 5, res
            assert "did not answer in time" in res.stderr, res
        finally:
            silent.stop()
        # modgated itself holds the lock while it runs, in its RUNTIME_DIRECTORY.
        d = h.Daemon(work, "lock", trusted, extra_env={"RUNTIME_DIRECTORY": os.path.dirname(lock)})
        try:
            assert d.activate(), d.stderr_text()
            fd = os.open(lock, os.O_RDONLY)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    raise AssertionError("modgated does not hold %s" % lock)
                except BlockingIOError:
                    pass
            finally:
                os.close(fd)
            h.assert_clean_exit(d)
            fd = os.open(lock, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)      # free once it exited
            os.close(fd)
        finally:
            d.stop()
            shutil.rmtree(os.path.dirname(lock), ignore_errors=True)

    # The real daemon.
    tree = h.kernel_tree()
    trusted = h.mount_trusted_tree(tree, work)
    h.mount_sys_module()
    daemon = h.Daemon(work, "main", trusted)
    daemon.activate()

    def kernel_alias(prefix):
        """An alias such as fs-erofs whose module is a file of this tree."""
        deps = h.parse_modules_dep(tree)
        for alias, mod in h.modules_alias(tree):
            if alias.startswith(prefix) and mod.replace("-", "_") in deps:
                return alias, mod.replace("-", "_")
        raise AssertionError("no %s alias in this tree" % prefix)

    # Only the kernel runs modgate-modprobe as a usermode helper (its parent a kernel thread, in the
    # root cgroup), which this host cannot do: the helper's claim to be the kernel's request is
    # refused here, and the VM tier shows the kernel's own request_module() loading through it.
    def case_real_alias():
        for prefix in ("fs-", "net-pf-"):
            alias, mod = kernel_alias(prefix)
            n = len(daemon.shim_records())
            res = h.run_program([MODPROBE, "--address=" + daemon.address, "-q", "--", alias], env=KERNEL_ENV)
            assert res.returncode == 1 and "PermissionDenied" in res.stderr, (alias, res)
            assert daemon.shim_records()[n:] == [], daemon.shim_records()[n:]
            rec = journal.records(MODGATE_CLAIMED_SOURCE="kernel", MODGATE_MODALIAS=alias, _PID=str(daemon.pid))
            assert len(rec) == 1 and "which is not a kernel usermode helper" in rec[0]["MODGATE_REASON"], rec
            assert journal.records(MODGATE_SOURCE="kernel", _PID=str(daemon.pid)) == []
            # The alias itself resolves to its module, asked for without the claim.
            mods = h.modules_of(daemon.call("io.modgate.Manager.Load", {"modalias": alias}))
            assert mod in [m["name"] for m in mods], (alias, mods)

    def case_real_not_found():
        n = len(daemon.shim_records())
        res = h.run_program([MODPROBE, "--address=" + daemon.address, "-q", "--", "fs-modgate-none"],
                            env=KERNEL_ENV)
        assert res.returncode == 1 and "PermissionDenied" in res.stderr, res
        assert len(daemon.shim_records()) == n

    def case_set_kernel_modprobe():
        # kernel.modprobe as a file (this host's kernel has none): the copy of /proc/sys/kernel that
        # fake_modules_disabled() binds over the real one, or the real one's own file.
        h.fake_modules_disabled(work)
        sysctl = "/proc/sys/kernel/modprobe"
        with open(sysctl, "w") as f:
            f.write("/sbin/modprobe\n")
        libexec = "/usr/libexec/modgate"
        os.makedirs(libexec, exist_ok=True)
        h.run("mount", "-t", "tmpfs", "tmpfs", libexec)
        try:
            # Not installed (an initramfs that copied the drop-in but not modgate): nothing changes.
            res = h.run_program([MODPROBE, "--set-kernel-modprobe"], env=KERNEL_ENV)
            assert res.returncode == 1 and "%s/modgate-modprobe is not there" % libexec in res.stderr, res
            with open(sysctl) as f:
                assert f.read() == "/sbin/modprobe\n"
            # Installed: the installed path, not the one this copy runs from.
            shutil.copy(MODPROBE, libexec + "/modgate-modprobe")
            os.chmod(libexec + "/modgate-modprobe", 0o755)
            res = h.run_program([MODPROBE, "--set-kernel-modprobe"], env=KERNEL_ENV)
            assert res.returncode == 0, res
            with open(sysctl) as f:
                assert f.read() == libexec + "/modgate-modprobe\n"
            res = h.run_program([MODPROBE, "--set-kernel-modprobe", "fs-erofs"], env=KERNEL_ENV)
            assert res.returncode == 1 and "takes nothing else" in res.stderr, res
        finally:
            h.run("umount", libexec)

    t.case("the kernel's form -q -- NAME sends NAME as a modalias with the kernel context", case_kernel_form)
    t.case("plain NAME, -q NAME, -- NAME, -v and --quiet are accepted", case_other_forms)
    t.case("kernel aliases with parentheses and digits pass unchanged", case_aliases_pass_unchanged)
    t.case("exit 0 when loaded, already loaded or builtin, 1 for every other outcome", case_exit_codes)
    t.case("-q silences not found only", case_quiet)
    t.case("bad names are refused before any connection, escaped in the log", case_bad_names)
    t.case("options modprobe has but the kernel does not pass are refused", case_bad_arguments)
    t.case("started without stdin, stdout and stderr, as the kernel does", case_no_stdio)
    t.case("no socket, no answer, or a hang-up give exit 1 quickly", case_transport)
    t.case("end to end: run by a process, not the kernel, its fs- and net-pf- requests are refused as a false "
           "claim and journaled as such; the aliases load for an administrator", case_real_alias)
    t.case("end to end: the claim is refused before anything is resolved, without a syscall", case_real_not_found)
    t.case("a daemon that is not running and does not start is given up on after --start-timeout; modgated "
           "holds the lock that says it runs", case_start_timeout)
    t.case("--set-kernel-modprobe writes the installed path to kernel.modprobe, and leaves it alone when the helper "
           "is not installed there", case_set_kernel_modprobe)

    t.case("the daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(daemon), always=True)
    t.run()
    fake.stop()
    journal.stop()
    if t.failed:
        print("# --- daemon stderr ---")
        for line in daemon.stderr_text().splitlines()[-20:]:
            print("# " + line)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
