#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgatectl against the real daemon, verb by verb: the text a person reads, the daemon's JSON with
--json (parsed), and the exit status modgatectl(1) documents for each kind of failure, with a
message that says what to do next; the pager and colours only on a terminal; a ReadGroup= member
runs the read-only verbs and is refused the others; no daemon to talk to."""

import json
import os
import pty
import queue
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
DROPINS = "/etc/modgate/modgate.conf.d"
POLICY = """\
[Policy]
Deny=udp_tunnel
[Parameters]
Module=nbd
Allow=nbds_max=[0-9]
"""
LOADS = "dummy"                 # no dependencies
PARAMS = "nbd"                  # a [Parameters] rule allows nbds_max=
DENIED = "vxlan"                # needs udp_tunnel, which the policy denies
FAILS = "veth"                  # the shim makes finit_module fail with ENOEXEC
INSTALL = "eql"                 # modprobe.d has an install command for it
NO_EXIT = "nlmon"               # the shim gives it no exit function: EBUSY on unload
USER, USED = "team_mode_roundrobin", "team"     # the first needs the second
E1000_MODALIAS = "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"
MEMBER = ["setpriv", "--reuid=4242", "--regid=4343", "--clear-groups"]
OTHER = ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]

# The exit statuses of modgatectl(1).
SUCCESS, FAILURE, INVALID, DENIED_EXIT, NOT_FOUND, LOAD_FAILED, REFUSED, NO_DAEMON = range(8)


SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPLETE = r"""
uname() { echo %s; }
source %s
line=$1
COMP_WORDS=()
for w in $line; do
    while [[ $w == *=* ]]; do
        [[ -n ${w%%%%=*} ]] && COMP_WORDS+=("${w%%%%=*}")
        COMP_WORDS+=("=")
        w=${w#*=}
    done
    [[ -n $w ]] && COMP_WORDS+=("$w")
done
[[ $line == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_modgatectl
printf '%%s\n' "${COMPREPLY[@]}"
"""


def write_dropin(name, text):
    os.makedirs(DROPINS, exist_ok=True)
    path = os.path.join(DROPINS, name)
    if text is None:
        os.unlink(path)
        return path
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


class Follower:
    """A long-running modgatectl (monitor) whose output lines are read as they come."""

    def __init__(self, args, prefix=()):
        self.proc = subprocess.Popen([*prefix, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out, self.err = queue.Queue(), queue.Queue()
        self.lines, self.errors = [], []
        for stream, q in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, q=q: [q.put(line) for line in s], daemon=True).start()

    def wait_for(self, q, seen, pred, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = q.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and q.empty():
                    break
                continue
            seen.append(line)
            if pred(line):
                return line
        for q, lines in ((self.out, self.lines), (self.err, self.errors)):
            while not q.empty():
                lines.append(q.get())
        raise AssertionError("not seen in time; stdout %r stderr %r rc %s" % (self.lines, self.errors,
                                                                              self.proc.poll()))

    def line(self, pred, timeout=20):
        return self.wait_for(self.out, self.lines, pred, timeout)

    def error_line(self, pred, timeout=20):
        return self.wait_for(self.err, self.errors, pred, timeout)

    def stop(self, sig):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=10)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain(text):
    return ANSI.sub("", text)


def on_terminal(args, env):
    """Runs args with stdout on a pseudo-terminal; returns (exit status, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break       # EIO: every writer is gone
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=10), out.decode(errors="replace")


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-ctl-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    h.mount_modprobe_d("install %s /bin/true\n" % INSTALL)
    journal = h.Journal()       # a tmpfs over /run: the drop-ins go there after it
    write_dropin("50-test.conf", POLICY)
    root = h.mount_trusted_tree(tree, work)
    deps = h.parse_modules_dep(tree)
    env = {"MODGATE_SHIM_FAIL": "%s:8" % FAILS, "MODGATE_SHIM_NO_EXIT": NO_EXIT}
    d = h.Daemon(work, "ctl", root, extra_env=env)
    assert d.activate(), d.stderr_text()
    daemons = [d]
    t = h.Tap()
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("NO_COLOR", "SYSTEMD_COLORS", "PAGER", "SYSTEMD_PAGER", "MODGATE_PAGER")}

    def ctl(*args, prefix=(), env=None, address=None):
        return subprocess.run([*prefix, os.environ["MODGATECTL"], "--address=" + (address or d.address), *args],
                              capture_output=True, text=True, env=env or base_env, timeout=60)

    def expect(res, status, out=(), err=()):
        assert res.returncode == status, (status, res.returncode, res.stdout, res.stderr)
        for word in out:
            assert word in res.stdout, (word, res.stdout, res.stderr)
        for word in err:
            assert word in res.stderr, (word, res.stdout, res.stderr)
        return res

    def as_json(res):
        return json.loads(res.stdout)

    # --- the command line --------------------------------------------------------------------------

    def case_help():
        res = expect(ctl("--help"), SUCCESS, out=("modgatectl(1)",))
        for verb in ("status", "list", "describe", "explain", "monitor", "load", "unload", "reload", "seal"):
            assert "\n  %s " % verb in res.stdout, (verb, res.stdout)
        for opt in ("--json=MODE", "--no-pager", "--no-legend", "--load=", "--dry-run", "--version"):
            assert opt in res.stdout, (opt, res.stdout)
        expect(ctl("--version"), SUCCESS, out=("modgatectl ",))

    def case_usage():
        for args, words in ((["frobnicate"], "Unknown command 'frobnicate'; see --help."),
                            ([], "Expected a command"),
                            (["describe"], "describe needs at least one argument"),
                            (["reload", "x"], "reload takes no arguments"),
                            (["seal", "dummy"], "name the modules to load first with --load=NAME"),
                            (["--load=dummy", "load", "dummy"], "--load= goes with seal"),
                            (["--json=yaml", "list"], "the modes are pretty, short and off"),
                            (["--source=nobody", "explain", "dummy"], "the sources are kernel, udev, boot"),
                            (["--bogus", "list"], "unrecognized option")):
            expect(ctl(*args), INVALID, err=(words,))
        expect(ctl("--json=help"), SUCCESS, out=("pretty\nshort\noff\n",))

    def case_no_daemon():
        res = expect(ctl("list", address="/run/modgate/none.sock"), NO_DAEMON,
                     err=("Failed to connect to /run/modgate/none.sock", "systemctl status modgated.socket"))
        assert res.stdout == "", res
        # A request refused here is refused before any connection is tried.
        res = expect(ctl("load", "../x", address="/run/modgate/none.sock"), INVALID,
                     err=("../x: io.modgate.Manager.InvalidName", "a modalias goes with -m"))
        assert "Failed to connect" not in res.stderr, res

    # --- load, unload, explain ---------------------------------------------------------------------

    def case_load():
        expect(ctl("-p", "nbds_max=2", "load", PARAMS), SUCCESS, out=("nbd ",))
        res = expect(ctl("load", LOADS), SUCCESS)
        lines = res.stdout.splitlines()
        assert lines[0].split() == ["MODULE", "OUTCOME", "ROLE", "DETAIL"], lines
        assert lines[1].split()[:3] == [LOADS, "loaded", "requested"] and lines[1].endswith(".ko.xz"), lines
        assert "\x1b[" not in res.stdout, "colours on a pipe"
        res = expect(ctl("--no-legend", "load", USER), SUCCESS)
        rows = [line.split() for line in res.stdout.splitlines()]
        assert [r[:3] for r in rows] == [[USED, "loaded", "dependency"], [USER, "loaded", "requested"]], rows
        # Columns line up: every row's second column starts where the header's does.
        res = expect(ctl("load", LOADS, USER), SUCCESS)
        lines = res.stdout.splitlines()
        assert len({line.index(" " + w) for line, w in zip(lines, ("OUTCOME", "already_loaded", "already_loaded",
                                                                   "already_loaded"))}) == 1, lines
        res = expect(ctl("--json=short", "load", LOADS), SUCCESS)
        assert res.stdout.count("\n") == 1 and as_json(res)["modules"][0]["outcome"] == "already_loaded", res
        res = expect(ctl("-j", "load", LOADS), SUCCESS)
        assert res.stdout.count("\n") == 1, "-j is short when not on a terminal"
        res = expect(ctl("--json=pretty", "load", LOADS), SUCCESS)
        assert res.stdout.count("\n") > 3 and as_json(res)["modules"][0]["name"] == LOADS, res

    def case_load_refused():
        res = expect(ctl("load", DENIED), DENIED_EXIT,
                     err=("PolicyDenied: vxlan needs udp_tunnel", "Denied by %s/50-test.conf:2" % DROPINS,
                          "'modgatectl explain vxlan'"))
        expect(ctl("-p", "nbds_max=x", "load", PARAMS), DENIED_EXIT,
               err=("ParameterDenied: nbds_max=x", "Refused by %s/50-test.conf:" % DROPINS, "[Parameters] section for nbd"))
        expect(ctl("load", INSTALL), DENIED_EXIT,
               err=("InstallCommandRefused: modprobe.d has a command for eql: /bin/true", "modgate never runs commands"))
        outside = os.path.join(work, "outside")
        os.makedirs(outside, exist_ok=True)
        h.run("cp", os.path.join(tree, deps["tun"][0]), outside)
        expect(ctl("load", os.path.join(outside, "tun.ko.xz")), DENIED_EXIT,
               err=("UntrustedOrigin: file is not beneath a trusted root", "Evidence= in modgate.conf(5)"))
        expect(ctl("load", "no_such_module_xyz"), NOT_FOUND,
               err=("no_such_module_xyz: no such module.", "modinfo no_such_module_xyz"))
        expect(ctl("load", FAILS), LOAD_FAILED, err=("LoadFailed: veth:", "ENOEXEC", "journalctl -k"))
        # The first failure decides the status; every argument is still asked for.
        res = expect(ctl("load", "no_such_module_xyz", DENIED, "tun"), NOT_FOUND, out=("tun ",))
        assert "PolicyDenied" in res.stderr, res
        res = expect(ctl("--json=short", "load", DENIED), DENIED_EXIT, err=("PolicyDenied",))
        assert as_json(res)["rule"].endswith("(Deny=udp_tunnel)"), res

    def case_load_invalid():
        for args, words in ((["load", "x" * 70], "io.modgate.Manager.InvalidName"),
                            (["-m", "load", "pci:v1 pci:v2"], "io.modgate.Manager.InvalidModalias: modalias contains"),
                            (["load", "/x/../a.ko"], "io.modgate.Manager.InvalidPath: path is not normalized"),
                            (["-p", "a=\x01", "load", LOADS], "io.modgate.Manager.InvalidModuleParameters"),
                            (["unload", "a b"], "io.modgate.Manager.InvalidName"),
                            (["describe", "a/b"], "io.modgate.Manager.InvalidName"),
                            (["monitor", "a*"], "io.modgate.Manager.InvalidName")):
            expect(ctl(*args), INVALID, err=(words,))

    def case_unload():
        res = expect(ctl("unload", NO_EXIT, address=d.address), NOT_FOUND, err=("nlmon: not loaded.", "lsmod"))
        h.ok(d.load(NO_EXIT))
        expect(ctl("unload", NO_EXIT), LOAD_FAILED, err=("UnloadFailed", "EBUSY", "never forces"))
        os.symlink("../../" + USER, "/sys/module/%s/holders/%s" % (USED, USER))
        expect(ctl("unload", USED), LOAD_FAILED,
               err=("team: in use by team_mode_roundrobin.", "'modgatectl unload team_mode_roundrobin'"))
        res = expect(ctl("unload", USER, USED), SUCCESS)
        assert res.stdout == "" and h.module_state(USER) is None and h.module_state(USED) is None, res
        h.ok(d.load(USER))
        res = expect(ctl("--json=short", "unload", USER), SUCCESS)
        assert as_json(res) == {"name": USER}, res

    def case_explain():
        expect(ctl("explain", LOADS), SUCCESS, out=("dummy: already_loaded", "dummy  ", " live "))
        res = expect(ctl("explain", "macvtap"), SUCCESS, out=("macvtap: load\n", "file: trusted by manifest evidence",
                                                               "requires: tap macvlan", "sha256 ", "signed by "))
        res = expect(ctl("explain", DENIED), DENIED_EXIT, out=("vxlan: denied: vxlan needs udp_tunnel",
                                                               "policy deny by %s/50-test.conf:2" % DROPINS))
        assert "requires: " in res.stdout, res.stdout
        expect(ctl("--dry-run", "load", DENIED), DENIED_EXIT, out=("vxlan: denied",))
        res = expect(ctl("explain", LOADS, DENIED), DENIED_EXIT, out=("\n\nvxlan: denied",))
        assert res.stdout.startswith("dummy: already_loaded\n"), res.stdout
        res = expect(ctl("--json=short", "explain", DENIED), DENIED_EXIT)
        assert as_json(res)["verdict"] == "denied" and as_json(res)["modules"], res
        res = ctl("explain", "no_such_module_xyz")
        assert res.returncode == NOT_FOUND, res

    # --- list, describe ----------------------------------------------------------------------------

    def case_list():
        res = expect(ctl("list"), SUCCESS)
        lines = res.stdout.splitlines()
        assert lines[0].split() == ["MODULE", "OUTCOME", "SOURCE", "EVIDENCE", "SIGNER", "TIME"], lines
        rows = {line.split()[0]: line for line in lines[1:] if line.strip() and "listed" not in line}
        assert rows[LOADS].split()[1:4] == ["loaded", "admin", "manifest"], rows
        assert rows[DENIED].split()[1] == "denied" and rows[USER].split()[1] == "unloaded", rows
        assert lines[-1] == "%d modules listed." % len(rows) and lines[-2] == "", lines
        listed = as_json(expect(ctl("--json=short", "list"), SUCCESS))["modules"]
        assert {m["module"] for m in listed} == set(rows), (listed, rows)
        res = expect(ctl("--no-legend", "list", "team*"), SUCCESS)
        assert sorted(line.split()[0] for line in res.stdout.splitlines()) == [USED, USER], res.stdout

    def case_describe():
        res = expect(ctl("describe", PARAMS), SUCCESS)
        rec = h.ok(d.call(M + "Describe", {"name": PARAMS}))["module"]
        for key, value in (("Outcome", "loaded"), ("Source", "admin (requested)"), ("File", rec["path"]),
                           ("Evidence", "manifest"), ("SHA256", rec["sha256"]), ("Parameters", "nbds_max=2")):
            assert "%12s: %s" % (key, value) in res.stdout, (key, res.stdout)
        assert res.stdout.startswith("* nbd\n") or res.stdout.startswith("\u25cf nbd\n"), res.stdout
        assert " ago" in res.stdout and "Caller: pid %d (modgatectl), uid 0" % rec["peerPid"] in res.stdout, res.stdout
        res = expect(ctl("--json=short", "describe", LOADS, FAILS), SUCCESS)
        replies = [json.loads(line) for line in res.stdout.splitlines()]
        assert [r["module"]["module"] for r in replies] == [LOADS, FAILS], replies
        assert replies[1]["module"]["outcome"] == "failed" and replies[1]["module"]["errnoName"] == "ENOEXEC", replies
        expect(ctl("describe", "minix"), NOT_FOUND, err=("minix: no record of it this boot.", "'modgatectl list'"))
        # A modalias: the alias pattern it matched, and the hardware udev's database names for it.
        expect(ctl("-m", "load", E1000_MODALIAS), SUCCESS, out=("e1000 ",))
        res = expect(ctl("describe", "e1000"), SUCCESS, out=("     Request: modalias " + E1000_MODALIAS,
                                                             "       Alias: pci:v00008086d0000100Esv*"))
        rec = h.ok(d.call(M + "Describe", {"name": "e1000"}))["module"]
        if rec.get("deviceVendor"):
            assert "      Device: %s" % rec["deviceVendor"] in res.stdout, res.stdout
        rec = h.ok(d.call(M + "Describe", {"name": USED}))["module"]
        assert rec["requiredBy"].startswith("team_mode_"), rec
        expect(ctl("describe", USED), SUCCESS, out=("Required by: " + rec["requiredBy"],))

    # --- reload, status, monitor -------------------------------------------------------------------

    def case_reload():
        res = expect(ctl("reload"), SUCCESS)
        assert res.stdout.startswith("policy ") and res.stdout.endswith(" (enforce) in force\n"), res
        write_dropin("99-broken.conf", "[Policy]\nBogus=1\n")
        try:
            expect(ctl("reload"), FAILURE, err=("ConfigurationInvalid", "99-broken.conf:2", " -n'"))
        finally:
            write_dropin("99-broken.conf", None)
        assert "mode" in as_json(expect(ctl("--json=short", "reload"), SUCCESS))

    def case_status():
        res = expect(ctl("status"), SUCCESS)
        for words in ("modgated ", "        Mode: enforce", "      Sealed: no", "       Roots: %s (pinned)" % root,
                      "evidence: ", "     Workers: ", "    Requests: ", "     Modules: ", "      Policy: ",
                      " Enforcement: module signatures: ",
                      "\n" + " " * 14 + "lockdown: "):
            assert words in res.stdout, (words, res.stdout)
        s = as_json(expect(ctl("--json=short", "status"), SUCCESS))
        assert s["mode"] == "enforce" and s["sealed"] is False and s["roots"][0]["path"] == root, s
        assert s["counters"]["requests"] > 0 and s["counters"]["denied"] > 0, s

    def case_monitor():
        f = Follower([os.environ["MODGATECTL"], "--address=" + d.address, "--json=short", "monitor"])
        try:
            ready = json.loads(f.line(lambda line: True))
            assert ready["event"]["type"] == "ready", ready
            h.ok(d.load("ifb"))
            loaded = json.loads(f.line(lambda line: '"loaded"' in line and '"ifb"' in line))
            assert loaded["event"]["module"] == "ifb", loaded
        finally:
            rc = f.stop(signal.SIGINT)
        assert rc == SUCCESS, (rc, f.errors)
        # Text, for one module: the others are not shown.
        f = Follower([os.environ["MODGATECTL"], "--address=" + d.address, "monitor", "macvlan"])
        try:
            f.error_line(lambda line: "Ctrl-C stops" in line)
            h.ok(d.load("bonding"))
            h.ok(d.load("macvlan"))
            line = f.line(lambda line: " loaded " in line)
            assert line.split()[1:3] == ["loaded", "macvlan"] and "manifest evidence" in line, line
        finally:
            rc = f.stop(signal.SIGTERM)
        assert rc == SUCCESS and not any("bonding" in line or "tls" in line for line in f.lines), (rc, f.lines)

    # --- who may ask -------------------------------------------------------------------------------

    def case_read_group():
        write_dropin("95-group.conf", "[Manager]\nReadGroup=4343\n")
        expect(ctl("reload"), SUCCESS)
        os.chmod(d.address, 0o666)
        try:
            expect(ctl("list", prefix=MEMBER), SUCCESS, out=(LOADS,))
            expect(ctl("describe", LOADS, prefix=MEMBER), SUCCESS, out=("Outcome: loaded",))
            expect(ctl("explain", LOADS, prefix=MEMBER), SUCCESS, out=("dummy: already_loaded",))
            for args in (["load", "tun"], ["unload", LOADS], ["reload"]):
                expect(ctl(*args, prefix=MEMBER), REFUSED, err=("PermissionDenied", "needs CAP_SYS_MODULE"))
            assert h.module_state(LOADS) == "live"
            expect(ctl("list", prefix=OTHER), REFUSED, err=("PermissionDenied", "ReadGroup= in modgate.conf(5)"))
            os.chmod(d.address, 0o600)
            expect(ctl("list", prefix=MEMBER), REFUSED, err=("Permission denied", "socket is root's"))
            os.chmod(d.address, 0o666)
            # Status and Monitor last: they came later to the daemon.
            expect(ctl("status", prefix=MEMBER), SUCCESS, out=("Mode: enforce",))
            f = Follower([os.environ["MODGATECTL"], "--address=" + d.address, "monitor"], prefix=MEMBER)
            f.error_line(lambda line: "Ctrl-C stops" in line)
            assert f.stop(signal.SIGINT) == SUCCESS, f.errors
            expect(ctl("seal", prefix=MEMBER), REFUSED, err=("PermissionDenied", "needs CAP_SYS_MODULE"))
        finally:
            os.chmod(d.address, 0o600)
            write_dropin("95-group.conf", None)
            expect(ctl("reload"), SUCCESS)

    # --- terminal: pager and colours ---------------------------------------------------------------

    def case_terminal():
        args = [os.environ["MODGATECTL"], "--address=" + d.address, "list"]
        tty = dict(base_env, TERM="xterm")
        pager = 'echo "LESS=$LESS"; sed "s/^/%s:/"'
        rc, out = on_terminal(args, dict(tty, MODGATE_PAGER=pager % "M", SYSTEMD_PAGER=pager % "S", PAGER="false"))
        assert rc == SUCCESS and "LESS=FRSXMK" in out and "M:MODULE" in plain(out) and "S:" not in out, out
        assert "\x1b[" in out, "no colours on a terminal"
        rc, out = on_terminal(args, dict(tty, SYSTEMD_PAGER=pager % "S", PAGER=pager % "P", LESS="X"))
        assert "S:" in out and "P:" not in out and "LESS=X" in out, out
        rc, out = on_terminal(args, dict(tty, PAGER=pager % "P"))
        assert "P:" in out, out
        rc, out = on_terminal(args[:2] + ["--no-pager", "list"], dict(tty, PAGER=pager % "P"))
        assert "P:" not in out and "MODULE" in out, out
        rc, out = on_terminal(args, dict(tty, PAGER="cat", NO_COLOR="1"))
        assert "MODULE" in out and "\x1b[" not in out, out
        rc, out = on_terminal(args, dict(tty, PAGER="", SYSTEMD_COLORS="0"))
        assert "MODULE" in out and "\x1b[" not in out, out
        # Not a terminal: no pager, whatever the environment; colours only when asked for.
        res = expect(ctl("list", env=dict(base_env, MODGATE_PAGER=pager % "M")), SUCCESS)
        assert "M:" not in res.stdout and "\x1b[" not in res.stdout, res.stdout
        res = expect(ctl("list", env=dict(base_env, SYSTEMD_COLORS="1")), SUCCESS)
        assert "\x1b[" in res.stdout, res.stdout

    # --- bash completion ---------------------------------------------------------------------------

    def complete(line):
        """What shell-completion/bash/modgatectl offers for a command line typed up to the cursor, words
        broken as bash breaks them (at '=' too), for the kernel whose tree the daemon uses."""
        script = COMPLETE % (os.path.basename(tree), os.path.join(SRC, "shell-completion/bash/modgatectl"))
        env = dict(base_env, PATH=os.path.dirname(os.environ["MODGATECTL"]) + ":" + base_env["PATH"])
        res = subprocess.run(["bash", "-c", script, "bash", line], capture_output=True, text=True, env=env,
                             timeout=60)
        assert res.returncode == 0 and not res.stderr, res
        return res.stdout.split()

    def case_completion():
        assert sorted(complete("modgatectl ")) == sorted(["status", "list", "describe", "explain", "monitor", "load",
                                                          "unload", "reload", "seal", "plot"])
        assert complete("modgatectl --no-p") == ["--no-pager"]
        assert complete("modgatectl --json=") == ["pretty", "short", "off"]
        assert complete("modgatectl --source=u") == ["udev"]
        assert complete("modgatectl load team_mode_ro") == [USER]
        assert "net-pf-38" in complete("modgatectl -p a=1 explain net-pf-3"), "plain aliases are offered"
        assert complete("modgatectl seal --load=dummy,team_mode_ro") == ["dummy," + USER]
        recorded = {m["module"] for m in h.ok(d.call(M + "List"))["modules"]}
        assert set(complete("modgatectl --address=%s describe " % d.address)) == recorded
        if os.path.exists("/proc/modules"):
            with open("/proc/modules") as f:
                assert set(complete("modgatectl unload ")) == {line.split()[0] for line in f}

    # --- seal, last: nothing loads after it --------------------------------------------------------

    def case_seal():
        # Never the machine's own: a file of this mount namespace stands in for the sysctl.
        sysctl = h.fake_modules_disabled(work)
        s = h.Daemon(work, "seal", root)
        daemons.append(s)
        assert s.activate(), s.stderr_text()
        expect(ctl("seal", "--load=" + DENIED, address=s.address), DENIED_EXIT,
               err=("vxlan: io.modgate.Manager.PolicyDenied", "Nothing was sealed."))
        expect(ctl("seal", "--load=no_such_module_xyz", address=s.address), NOT_FOUND,
               err=("no_such_module_xyz: no such module.", "Nothing was sealed."))
        res = expect(ctl("seal", "--load=" + LOADS + ",tun", address=s.address), SUCCESS,
                     out=("Sealed: kernel.modules_disabled=1",))
        assert [line.split()[:2] for line in res.stdout.splitlines()[1:3]] == [[LOADS, "already_loaded"],
                                                                               ["tun", "already_loaded"]], res.stdout
        expect(ctl("load", "macvtap", address=s.address), REFUSED, err=("Sealed", "until the next boot: reboot"))
        expect(ctl("seal", address=s.address), REFUSED, err=("seal: io.modgate.Manager.Sealed",))
        expect(ctl("unload", LOADS, address=s.address), REFUSED, err=("Sealed",))
        expect(ctl("status", address=s.address), SUCCESS, out=("Sealed: yes",))
        with open(sysctl) as f:
            assert f.read().strip() == "1"

    t.case("--help names every verb and option; --version", case_help)
    t.case("a wrong command line exits 2 and says what is wrong", case_usage)
    t.case("no daemon: exit 7, and where to look", case_no_daemon)
    t.case("load: an aligned table, --no-legend, --json short and pretty, -j", case_load)
    t.case("load: each refusal its exit status and a next step (policy, parameter, install command, origin, "
           "not found, kernel)", case_load_refused)
    t.case("load, unload, describe, monitor: what the daemon would refuse as invalid exits 2 unsent", case_load_invalid)
    t.case("unload: not loaded, no exit function, in use, success", case_unload, needs=(case_load,))
    t.case("explain: the verdict's exit status, text and JSON", case_explain, needs=(case_load,))
    t.case("list: a table with a footer, patterns, JSON", case_list, needs=(case_load,))
    t.case("describe: systemctl status's shape, JSON per module, NoRecord", case_describe,
           needs=(case_load,))
    t.case("reload: the digest; a broken file exits 1 naming it", case_reload)
    t.case("status: mode, roots, workers, counters; JSON", case_status, needs=(case_load, case_load_refused))
    t.case("monitor: the ready event, events as they come, a module filter, SIGINT and SIGTERM end it",
           case_monitor)
    t.case("a ReadGroup= member runs the read-only verbs and is refused the others with exit 6", case_read_group,
           needs=(case_load,))
    t.case("a pager and colours on a terminal only, as $MODGATE_PAGER, $SYSTEMD_PAGER, $PAGER, NO_COLOR and "
           "SYSTEMD_COLORS say", case_terminal, needs=(case_load,))
    t.case("bash completion: verbs, options and their values, the index's names and aliases, the daemon's "
           "records", case_completion)
    t.case("seal: a final list, then every load and unload refused with exit 6", case_seal,
           needs=(case_load,))

    t.case("every daemon exits cleanly", lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()
    h.dump_stderr(daemons)
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
