#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The installed units under a real service manager: systemd 257 booted as PID 1 in systemd-nspawn
from this build root, with modgate installed by meson install and enabled by its preset. The socket
starts the hardened service, which loads modules (only the module syscalls are faked, by the shim);
the boot list runs at boot; udevd's drop-in takes CAP_SYS_MODULE away; reload and idle exit with
socket re-activation lose no request."""

import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

BOOT_LIST = "vxlan\nno_such_module_xyz\n"
IDLE_EXIT_SEC = 2


def boot(t):
    """The container, booted; None with t.not_run set when it did not boot."""
    work = tempfile.mkdtemp(prefix="modgate-service-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    dest = os.path.join(work, "dest")
    h.meson_install(dest)
    tree = h.kernel_tree()
    trusted = h.mount_trusted_tree(tree, work)

    def prepare(root):
        with open(root + "/etc/modules-load.d/modgate-test.conf", "w") as f:
            f.write(BOOT_LIST)
        d = root + "/etc/systemd/system/modgated.service.d"
        with open(d + "/60-test-idle.conf", "w") as f:
            f.write("[Service]\nExecStart=\nExecStart=/usr/libexec/modgate/modgated --idle-exit-sec=%d\n"
                    % IDLE_EXIT_SEC)

    try:
        c = h.Container(os.path.join(work, "c"), dest, trusted, cmdline=["modules_load=tun"], prepare=prepare)
    except Exception as e:  # noqa: BLE001 - a container that does not boot fails every case
        t.not_run = "the container did not boot: %s" % e
        return None
    print("# real service manager: systemd 257 as PID 1 in systemd-nspawn (boot state %s)" % c.state, flush=True)
    return c


def main():
    h.require_root()
    t = h.Tap()
    c = None
    if subprocess.run(["which", "systemd-nspawn"], capture_output=True).returncode != 0:
        # The only skip: no service manager to boot. tools/check fails on it unless it is allowed.
        t.skip_all = "no systemd-nspawn (package systemd-container)"
    else:
        h.unshare_mounts()
        c = boot(t)

    def load(name):
        return c.call("io.modgate.Manager.Load", {"name": name})

    def case_boot():
        assert c.state in ("running", "degraded"), (c.state, c.console_text()[-3000:])
        assert c.show("modgated.socket", "ActiveState") == "active"
        assert c.show("modgated.socket", "UnitFileState") == "enabled"
        assert c.show("modgate-modules-load.service", "UnitFileState") == "enabled"
        assert c.show("modgated.service", "TriggeredBy") == "modgated.socket"
        # No ordering cycle was broken up to boot.
        journal = c.journal()
        assert "ordering cycle" not in journal.lower(), [x for x in journal.splitlines() if "cycle" in x]

    def case_socket_activation():
        reply = load("vxlan")
        assert "error" not in reply, reply
        assert c.show("modgated.service", "ActiveState") == "active"
        assert c.show("modgated.service", "Type") == "notify-reload"
        names = [r["name"] for r in c.shim_records()]
        assert "vxlan" in names, names
        assert all(r["path"].startswith("/usr/lib/modules/%s/" % os.uname().release) for r in c.shim_records())

    def case_sandbox():
        pid = c.show("modgated.service", "MainPID")
        status = dict(line.split(":", 1) for line in c.run("cat", "/proc/%s/status" % pid).stdout.splitlines()
                      if ":" in line)
        assert int(status["CapBnd"], 16) == 1 << 16, status["CapBnd"]
        assert int(status["CapEff"], 16) == 1 << 16, status["CapEff"]
        assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2", status
        mounts = c.run("cat", "/proc/%s/mountinfo" % pid).stdout
        root_line = [x for x in mounts.splitlines() if x.split()[4] == "/"][0]
        assert " ro," in root_line or " ro " in root_line, root_line
        # init_module(2) is not in the allow list; finit_module and delete_module are.
        assert c.show("modgated.service", "SystemCallErrorNumber") in ("EPERM", "1"), "no EPERM"
        filt = c.show("modgated.service", "SystemCallFilter")
        assert "finit_module" in filt and "delete_module" in filt and " init_module" not in " " + filt, filt

    def case_early_ordering():
        # Nothing may order the daemon after local-fs.target: mounts there may need drivers that only
        # modgated loads for coldplug (PrivateTmp= would add exactly that ordering).
        for unit in ("modgated.service",):
            after = c.show(unit, "After").split()
            for bad in ("systemd-tmpfiles-setup.service", "local-fs.target", "tmp.mount"):
                assert bad not in after, "%s is ordered after %s: %s" % (unit, bad, after)

    def case_udevd_dropin():
        caps = c.show("systemd-udevd.service", "CapabilityBoundingSet")
        assert "cap_sys_module" not in caps and "cap_sys_admin" in caps, caps
        assert "modgated.socket" in c.show("systemd-udevd.service", "After")
        assert "modgated.socket" in c.show("systemd-udevd.service", "Wants")

    def case_modules_load_takeover():
        assert c.show("systemd-modules-load.service", "ConditionResult") == "no", \
            "systemd-modules-load.service must be skipped"
        assert "modgate-modules-load.service" in c.show("systemd-modules-load.service", "After")
        assert c.show("modgate-modules-load.service", "ConditionResult") == "yes"

    def case_modprobe_at():
        # PID 1's own modprobe@NAME.service loads NAME through modgated, as that unit.
        before = len(c.shim_records())
        c.run("systemctl", "start", "modprobe@nlmon.service")
        assert c.show("modprobe@nlmon.service", "Result") == "success", c.journal("-u", "modprobe@nlmon.service")
        new = [r for r in c.shim_records()[before:] if r.get("name") == "nlmon"]
        assert [r["result"] for r in new] == [0], c.shim_records()[before:]
        log = c.journal("-u", "modgated.service", "-o", "verbose", "MODGATE_MODULE=nlmon")
        assert "MODGATE_PEER_UNIT=modprobe@nlmon.service" in log and "MODGATE_OUTCOME=loaded" in log, log

    def case_boot_list():
        assert c.show("modgate-modules-load.service", "Result") == "success", \
            c.journal("-u", "modgate-modules-load.service")
        names = [r["name"] for r in c.shim_records()]
        assert "vxlan" in names and "tun" in names, names
        log = c.journal("-u", "modgate-modules-load.service")
        assert "no_such_module_xyz" in log and "not found" in log, log

    def case_reload():
        load("tun")
        pid = c.show("modgated.service", "MainPID")
        res = c.run("systemctl", "reload", "modgated.service")
        assert res.returncode == 0, res
        assert c.show("modgated.service", "ActiveState") == "active"
        assert c.show("modgated.service", "MainPID") == pid, "reload restarted the daemon"
        assert "error" not in load("tun")

    def wait_inactive(timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if c.show("modgated.service", "ActiveState") in ("inactive", "failed"):
                return True
            time.sleep(0.1)
        return False

    def case_idle_exit():
        assert "error" not in load("vxlan")
        first = c.show("modgated.service", "MainPID")
        assert wait_inactive(IDLE_EXIT_SEC + 10), "the daemon did not exit when idle"
        assert c.show("modgated.service", "Result") == "success", c.journal("-u", "modgated.service")[-2000:]
        # PID 1 keeps the daemon's state while it does not run (FileDescriptorStorePreserve=yes): the
        # uevent socket and what was read of it, the history, the roots' records.
        kept = int(c.show("modgated.service", "NFileDescriptorStore"))
        assert kept >= 4, (kept, c.journal("-u", "modgated.service")[-3000:])
        # The socket stays; the next request starts the daemon again and is answered.
        assert c.show("modgated.socket", "ActiveState") in ("active", "listening")
        reply = load("vxlan")
        assert "error" not in reply and reply["parameters"]["modules"][-1]["outcome"] == "already_loaded", reply
        assert c.show("modgated.service", "MainPID") not in ("0", first)
        # The history came back from the store: vxlan's load by the first instance, not "loaded outside".
        listed = c.call("io.modgate.Manager.Describe", {"name": "vxlan"})
        assert listed["parameters"]["module"]["outcome"] == "loaded", listed
        assert "No file descriptor store" not in c.journal("-u", "modgated.service")

    def case_no_lost_request():
        # Requests at intervals around the idle time, so that some arrive as the daemon decides to
        # exit or is exiting; every one must be answered.
        rnd = random.Random(4)
        pids, lost = set(), []
        for i in range(16):
            # The idle timer may fire up to a second late (its accuracy): one pause in the middle is
            # longer than that, so that at least one exit happens whatever the timer's slack.
            pause = IDLE_EXIT_SEC + 1.5 if i == 8 else rnd.choice(
                [0.0, IDLE_EXIT_SEC - 0.1, IDLE_EXIT_SEC, IDLE_EXIT_SEC + 0.05, IDLE_EXIT_SEC + 0.3])
            time.sleep(pause)
            try:
                reply = load("tun")
                if "error" in reply:
                    lost.append((i, reply))
            except Exception as e:  # noqa: BLE001
                lost.append((i, repr(e)))
            pids.add(c.show("modgated.service", "MainPID"))
        # A burst right after an exit: the first connection starts the daemon, the others queue.
        assert wait_inactive(IDLE_EXIT_SEC + 10)
        results = c.call("io.modgate.Manager.Load", {"name": "vxlan"}, n=20)
        lost += [r for r in results if "error" in r]
        assert not lost, lost
        assert len(pids - {"0"}) >= 2, "the daemon never exited and came back: %s" % pids

    t.case("the container boots with modgated.socket listening and the boot-list unit enabled by the preset",
           case_boot)
    t.case("the first request starts the hardened Type=notify-reload service through the socket",
           case_socket_activation)
    t.case("the running daemon has CAP_SYS_MODULE alone, no new privileges, seccomp, a read-only root",
           case_sandbox)
    t.case("modgated is not ordered after local-fs.target", case_early_ordering)
    t.case("systemd-udevd runs without CAP_SYS_MODULE, after modgated.socket", case_udevd_dropin)
    t.case("systemd-modules-load.service is skipped, after modgate-modules-load.service", case_modules_load_takeover)
    t.case("the boot list (modules-load.d and modules_load=) is loaded through modgated at boot", case_boot_list)
    t.case("modprobe@NAME.service loads NAME through modgated", case_modprobe_at)
    t.case("systemctl reload keeps the daemon and its socket", case_reload)
    t.case("the daemon exits when idle and the socket starts it again", case_idle_exit)
    t.case("no request is lost across idle exits and re-activation", case_no_lost_request)
    t.run()

    if t.failed and c:
        print("# --- journal of modgate units ---")
        for line in c.journal("-u", "modgated.service", "-u", "modgated.socket",
                              "-u", "modgate-modules-load.service").splitlines()[-40:]:
            print("# " + line)
    if c:
        c.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
