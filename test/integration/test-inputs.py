#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The gate's own inputs (docs/authorization.md, "What can steer the gate"): nothing without
CAP_SYS_MODULE can change a decision. A root process that was denied module loading (a bounding
set without CAP_SYS_MODULE, as ProtectKernelModules=yes leaves it) can still write /run and signal the
daemon: its modgate.conf.d drop-in in /run/modgate and its modprobe.d file in /run/modprobe.d are not
read, at a reload or at the next start, and say so once; its SIGHUP reloads nothing and is recorded
with its sender. The varlink Reload by a caller with the capability still reloads. modgated -n warns
about configuration that someone other than root could change."""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
IGNORED_ID = "9e22e8cd04ac4b1b96efdff8468ffa49"
SIGNAL_ID = "5f6d944c146d4f51b242f50c3989ef5f"
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]

DROPINS = "/etc/modgate/modgate.conf.d"
POLICY = "[Policy]\nDeny=ifb\n"
ETC_OPTIONS = "options dummy numdummies=1\noptions nlmon etc=1\n"

RUN_CONF = "/run/modgate/modgate.conf.d/zz.conf"
RUN_MODPROBE = "/run/modprobe.d/x.conf"
# What the attacker would have the gate do: let everything through, and hand its own options on.
ATTACK_CONF = "[Policy]\nMode=permissive\nDeny=\n"
ATTACK_OPTIONS = "options dummy numdummies=7 attacker=1\noptions nlmon attacker=1\noptions ifb numifbs=9\n"


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def as_confined_root(script):
    """Runs a shell script as root without CAP_SYS_MODULE in its bounding, inheritable or effective
    set: what ProtectKernelModules=yes leaves a service. Returns its pid once it has finished."""
    proc = subprocess.run([*NO_SYS_MODULE, "sh", "-ec", 'grep CapEff /proc/self/status >&2; ' + script],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc
    eff = int(proc.stderr.split()[1], 16)
    assert not eff & (1 << 16), "the confined root still has CAP_SYS_MODULE: %s" % proc.stderr


def signal_unreaped(cmd):
    """Runs cmd, which sends a signal, and waits for it to exit without reaping it: the daemon reads a
    sender's name from /proc after the signal arrives, and a zombie still has one. Returns the Popen;
    the caller reaps it (wait()) once the daemon has recorded the signal."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    return proc


def reap(proc):
    """Reaps what signal_unreaped() started; returns what it wrote to stderr."""
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait() == 0, err
    return err


def attack_files():
    """The attacker's files in /run, written by the confined root."""
    as_confined_root("mkdir -p /run/modgate/modgate.conf.d /run/modprobe.d; "
                     "printf '%s' >%s; printf '%s' >%s" % (ATTACK_CONF, RUN_CONF, ATTACK_OPTIONS, RUN_MODPROBE))


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-inputs-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    h.mount_modprobe_d(ETC_OPTIONS)
    journal = h.Journal()
    write(os.path.join(DROPINS, "50-deny.conf"), POLICY)
    root = h.mount_trusted_tree(tree, work)
    t = h.Tap()
    daemons = []

    def start(name):
        d = h.Daemon(work, name, root)
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        return d

    def records(d, msgid, **match):
        return journal.records(MESSAGE_ID=msgid, _PID=str(d.pid), **match)

    def finits(d, names=None):
        return h.finit_records(d.shim_records(), names)

    def denied(d, name):
        r = d.call(M + "Load", {"name": name})
        assert r.get("error") == M + "PolicyDenied", r
        return r["parameters"]

    def assert_etc_options(d, name, etc):
        """Loads name: the kernel gets /etc's options for it (and /usr's: systemd ships some), none of
        /run's."""
        r = d.call(M + "Load", {"name": name})
        assert [m["outcome"] for m in h.ok(r)["modules"] if m["name"] == name] == ["loaded"], r
        recs = finits(d, [name])
        assert len(recs) == 1, recs
        params = recs[0].get("params", "").split()
        assert etc in params and "attacker=1" not in params and "numdummies=7" not in params, recs

    def wait_signal_record(d, pid):
        return h.wait_for("the record of the ignored SIGHUP",
                          lambda: records(d, SIGNAL_ID, MODGATE_SENDER_PID=str(pid)))

    d1 = start("signal")

    def case_sighup_from_confined_root():
        denied(d1, "ifb")
        attack_files()
        hup = signal_unreaped([*NO_SYS_MODULE, "sh", "-ec",
                               "grep CapEff /proc/self/status >&2; kill -HUP %d" % d1.pid])
        sender = hup.pid        # setpriv execs the shell
        # Handled: either recorded as ignored, or (what this must not do) a reload.
        reloading = lambda: any("RELOADING=1" in m.split("\n") for m in d1.notify_messages())  # noqa: E731
        h.wait_for("the SIGHUP handled", lambda: records(d1, SIGNAL_ID) or reloading())
        if reloading():
            assert d1.wait_ready()
        # The policy in force is /etc's, the denied module stays denied, and nothing reaches the kernel.
        p = denied(d1, "ifb")
        assert p["rule"] == os.path.join(DROPINS, "50-deny.conf") + ":2 (Deny=ifb)", p
        assert finits(d1, ["ifb"]) == [], finits(d1)
        # /run/modprobe.d is not read either, at a request (the watch) or otherwise.
        assert_etc_options(d1, "dummy", "numdummies=1")
        assert not reloading(), d1.notify_messages()
        rec = wait_signal_record(d1, sender)
        assert not int(reap(hup).split()[1], 16) & (1 << 16), "the confined root still has CAP_SYS_MODULE"
        assert len(rec) == 1, rec
        assert rec[0]["PRIORITY"] == "4" and rec[0]["MODGATE_SIGNAL"] == "SIGHUP", rec
        # The shell itself sent it (kill is its builtin), as root without CAP_SYS_MODULE.
        assert rec[0]["MODGATE_SENDER_UID"] == "0" and rec[0]["MODGATE_SENDER_COMM"] == "sh", rec
        assert "only PID 1 reloads" in rec[0]["MESSAGE"], rec

    def case_restart_reads_etc_only():
        # SIGTERM from the confined root only stops the daemon; the next activation reads /etc and /usr.
        as_confined_root("kill -TERM %d" % d1.pid)
        d1.proc.wait(timeout=10)
        d2 = start("restarted")
        p = denied(d2, "ifb")
        assert p["rule"] == os.path.join(DROPINS, "50-deny.conf") + ":2 (Deny=ifb)", p
        assert finits(d2, ["ifb"]) == [], finits(d2)
        assert_etc_options(d2, "nlmon", "etc=1")
        assert h.ok(d2.call(M + "Reload"))["mode"] == "enforce"
        # Recorded once each, at the start; the reload found the same files and said nothing more.
        conf = records(d2, IGNORED_ID, MODGATE_INPUT="configuration")
        assert len(conf) == 1 and conf[0]["MODGATE_IGNORED_FILES"] == RUN_CONF, conf
        assert conf[0]["PRIORITY"] == "4" and "only /etc and /usr may steer modgate" in conf[0]["MESSAGE"], conf
        mp = records(d2, IGNORED_ID, MODGATE_INPUT="modprobe.d")
        assert len(mp) == 1 and mp[0]["MODGATE_IGNORED_FILES"] == RUN_MODPROBE, mp
        # A file added later is recorded at the next reload that finds it.
        as_confined_root("printf 'options tun x=1\\n' >/run/modprobe.d/y.conf")
        h.ok(d2.call(M + "Reload"))
        mp = records(d2, IGNORED_ID, MODGATE_INPUT="modprobe.d")
        assert [r["MODGATE_IGNORED_FILES"] for r in mp] == [RUN_MODPROBE, RUN_MODPROBE + " /run/modprobe.d/y.conf"], mp
        assert len(records(d2, IGNORED_ID, MODGATE_INPUT="configuration")) == 1

    def case_sighup_changes_nothing_reload_does():
        d = start("reload")
        extra = os.path.join(DROPINS, "60-more.conf")
        write(extra, "[Policy]\nDeny=nlmon\n")
        try:
            # Any sender but PID 1 is ignored, even one holding CAP_SYS_MODULE (a varlink Reload is
            # how such a caller asks).
            kill = signal_unreaped(["kill", "-HUP", str(d.pid)])
            rec = wait_signal_record(d, kill.pid)
            reap(kill)
            assert rec[0]["MODGATE_SENDER_COMM"] == "kill" and rec[0]["MODGATE_SENDER_UID"] == "0", rec
            time.sleep(0.5)
            e = h.ok(d.call(M + "Explain", {"name": "nlmon"}))
            assert e["verdict"] != "denied", e
            # The varlink Reload: refused without the capability, done with it.
            r = h.call_as(NO_SYS_MODULE, d.address, M + "Reload")
            assert r.get("error") == M + "PermissionDenied", r
            e = h.ok(d.call(M + "Explain", {"name": "nlmon"}))
            assert e["verdict"] != "denied", e
            h.reload(d)
            assert d.wait_ready()
            e = h.ok(d.call(M + "Explain", {"name": "nlmon"}))
            assert e["verdict"] == "denied" and e["rule"] == extra + ":2 (Deny=nlmon)", e
        finally:
            os.unlink(extra)

    def test_config(*args):
        return subprocess.run([os.environ["MODGATED"], "-n", "--trusted-root=" + root, *args],
                              capture_output=True, text=True, check=False)

    def case_test_config_warns():
        res = test_config()
        assert res.returncode == 0 and "Warning: " + os.path.join(DROPINS) not in res.stderr, res
        # The files in /run that are not read are named.
        assert "Warning: %s is not read" % RUN_CONF in res.stderr, res.stderr
        assert "Warning: %s is not read" % RUN_MODPROBE in res.stderr, res.stderr
        # A directory that another uid owns: its files can be swapped.
        os.chown(DROPINS, 1000, 0)
        try:
            res = test_config()
            assert res.returncode == 0, res
            assert ("Warning: configuration directory %s is owned by uid 1000: someone other than root can "
                    "change it." % DROPINS) in res.stderr, res.stderr
            assert ("Warning: configuration file %s/50-deny.conf: directory %s on its way is owned by uid "
                    "1000" % (DROPINS, DROPINS)) in res.stderr, res.stderr
        finally:
            os.chown(DROPINS, 0, 0)
        # A group-writable configuration file, which the daemon refuses, and a modprobe.d file, which
        # libkmod would read anyway.
        gw = os.path.join(DROPINS, "70-gw.conf")
        write(gw, "[Load]\n", mode=0o664)
        write("/etc/modprobe.d/gw.conf", "options dummy numdummies=2\n", mode=0o664)
        try:
            res = test_config()
            assert res.returncode != 0 and "refusing a file writable by group or others" in res.stderr, res
            assert "Warning: configuration file %s is writable by group 0 (mode 0664)" % gw in res.stderr, res
            assert ("Warning: modprobe.d file /etc/modprobe.d/gw.conf is writable by group 0 (mode 0664)"
                    in res.stderr), res.stderr
        finally:
            os.unlink(gw)
            os.unlink("/etc/modprobe.d/gw.conf")
        res = test_config()
        assert res.returncode == 0 and "Warning: configuration" not in res.stderr, res.stderr

    t.case("a confined root's /run/modgate drop-in, /run/modprobe.d file and SIGHUP: nothing is reloaded, "
           "the denied module stays denied with no finit_module, no /run option reaches the kernel, the "
           "SIGHUP is recorded with its sender", case_sighup_from_confined_root)
    t.case("its SIGTERM only stops the daemon: the next start reads /etc and /usr only, and records the "
           "files in /run it ignores once", case_restart_reads_etc_only,
           needs=(case_sighup_from_confined_root,))
    t.case("a SIGHUP from a process that is not PID 1 changes nothing; the varlink Reload by a caller with "
           "CAP_SYS_MODULE reloads, and without it is refused", case_sighup_changes_nothing_reload_does)
    t.case("modgated -n warns about configuration someone other than root can change, and names what /run "
           "holds", case_test_config_warns, needs=(case_sighup_from_confined_root,))

    t.case("every daemon exits cleanly", lambda: h.assert_clean_exit(*[d for d in daemons if d is not d1]),
           always=True)
    t.run()
    h.dump_stderr(daemons)
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
