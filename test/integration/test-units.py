#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What meson install puts on a system, checked with systemd 257's own tools: the places systemd.pc
and udev.pc name, systemd-analyze security (modgated.service must rate 2.0 or lower) and verify,
udevadm verify, the rules that replace every kmod builtin call of udev's 80-drivers.rules, the
takeover switches, and the preset."""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

EXPOSURE_MAX = 2.0
LIBEXEC = "/usr/libexec/modgate"
SYSTEM_DRIVERS_RULES = "/usr/lib/udev/rules.d/80-drivers.rules"


def pkg_var(pkg, var):
    out = subprocess.run(["pkg-config", "--variable=" + var, pkg], capture_output=True, text=True).stdout.strip()
    if not out:
        raise AssertionError("pkg-config has no %s variable %s (systemd-dev missing?)" % (pkg, var))
    return out


def exposure(root, unit):
    """systemd-analyze security --offline=yes on the installed unit: the overall exposure number and
    the full table."""
    res = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", "--root=" + root, unit],
                         capture_output=True, text=True)
    m = re.search(r"Overall exposure level for %s: (\d+\.\d+)" % re.escape(unit), res.stdout)
    assert m, "no exposure level in:\n%s%s" % (res.stdout, res.stderr)
    return float(m.group(1)), res.stdout


def rules_lines(path):
    """The rules of a udev rules file, one per logical line, without comments."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def main():
    h.require_root()
    h.unshare_mounts()

    work = tempfile.mkdtemp(prefix="modgate-units-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    dest = os.path.join(work, "dest")
    h.meson_install(dest)

    # The installed files over this Debian 13 root: systemd's own units, binaries and udev rules next
    # to modgate's, as on an installed system.
    merged = os.path.join(work, "merged")
    for d in ("merged", "upper", "ovl-work"):
        os.makedirs(os.path.join(work, d))
    h.run("mount", "-t", "overlay", "overlay", "-o",
          "lowerdir=%s:/,upperdir=%s/upper,workdir=%s/ovl-work" % (dest, work, work), merged)

    t = h.Tap()

    def case_layout():
        want = {
            pkg_var("systemd", "systemd_system_unit_dir"): ["modgated.socket", "modgated.service",
                                                             "modgate-modules-load.service",
                                                             "modgate-udev-rules.service",
                                                             "modgate-udev-rules-refresh.service",
                                                             "modgate-udev-rules.path",
                                                             "systemd-udevd.service.d/modgate.conf",
                                                             "systemd-modules-load.service.d/modgate.conf",
                                                             "systemd-sysctl.service.d/modgate.conf",
                                                             "modprobe@.service.d/modgate.conf"],
            pkg_var("systemd", "systemd_system_preset_dir"): ["80-modgate.preset"],
            os.path.join(pkg_var("udev", "udev_dir"), "rules.d"): ["80-modgate.rules"],
            "/etc/udev/rules.d": ["80-drivers.rules"],
            LIBEXEC: ["modgated", "modgate-udev", "modgate-udev-rules", "modgate-modprobe", "modgate-modules-load"],
            "/usr/share/man/man8": ["modgated.8", "modgate-udev.8", "modgate-udev-rules.8", "modgate-modprobe.8",
                                    "modgate-modules-load.8"],
        }
        missing = [os.path.join(d, f) for d, files in want.items() for f in files
                   if not os.path.isfile(dest + os.path.join(d, f))]
        assert not missing, "not installed: %s" % missing
        for f in want[LIBEXEC]:
            assert os.access(dest + os.path.join(LIBEXEC, f), os.X_OK), f
        with open(dest + os.path.join(pkg_var("systemd", "systemd_system_unit_dir"), "modgated.service")) as f:
            assert "ExecStart=%s/modgated\n" % LIBEXEC in f.read()

    def case_exposure():
        score, table = exposure(merged, "modgated.service")
        print("# systemd-analyze security --offline=yes: modgated.service exposure %.1f" % score, flush=True)
        assert score <= EXPOSURE_MAX, "exposure %.1f > %.1f:\n%s" % (score, EXPOSURE_MAX, table)
        # What remains is what the service is for (AF_NETLINK: the kernel's module uevents; CAP_BPF: attaching
        # the guard, docs/guard.md, dropped by modgated right after).
        for line in table.splitlines():
            if line.startswith("✗"):
                assert re.search(r"User=|MODULE|@module|@privileged|ProtectKernelModules|PrivateUsers|AF_UNIX|AF_NETLINK|CAP_BPF|"
                                 r"ProtectProc|ProcSubset|DeviceAllow|RestrictSUIDSGID", line), "unexpected exposure: " + line

    def case_exposure_others():
        for unit in ("modgate-modules-load.service", "modgate-udev-rules.service",
                     "modgate-udev-rules-refresh.service"):
            score, table = exposure(merged, unit)
            print("# %s exposure %.1f" % (unit, score), flush=True)
            assert score <= EXPOSURE_MAX, table
        # systemd-udevd with modgate's drop-in: no CAP_SYS_MODULE any more.
        score, table = exposure(merged, "systemd-udevd.service")
        print("# systemd-udevd.service exposure with modgate's drop-in %.1f" % score, flush=True)
        assert re.search(r"^✓ CapabilityBoundingSet=~CAP_SYS_MODULE ", table, re.M), table

    def case_verify():
        units = ["modgated.socket", "modgated.service", "modgate-modules-load.service", "modgate-udev-rules.service",
                 "modgate-udev-rules-refresh.service", "modgate-udev-rules.path", "systemd-udevd.service",
                 "systemd-modules-load.service", "systemd-sysctl.service", "sysinit.target", "sockets.target"]
        res = subprocess.run(["systemd-analyze", "verify", "--man=no", "--root=" + merged, *units],
                             capture_output=True, text=True)
        assert res.returncode == 0 and not res.stderr.strip() and not res.stdout.strip(), res

    def case_udevadm_verify():
        res = subprocess.run(["udevadm", "verify", dest + "/usr/lib/udev/rules.d/80-modgate.rules",
                              dest + "/etc/udev/rules.d/80-drivers.rules"], capture_output=True, text=True)
        assert res.returncode == 0 and "Fail:    0" in res.stdout, res

    def case_rules_replace_builtin():
        if not os.path.exists(SYSTEM_DRIVERS_RULES):
            raise AssertionError("no %s in the build root (udev installs it)" % SYSTEM_DRIVERS_RULES)
        ours = rules_lines(dest + "/usr/lib/udev/rules.d/80-modgate.rules")
        assert ours[0] == 'ACTION!="add", GOTO="modgate_end"', ours
        assert ours[1] == 'TEST!="/run/modgate/io.modgate", GOTO="modgate_end"', ours
        n = 0
        for line in rules_lines(SYSTEM_DRIVERS_RULES):
            m = re.match(r'(.*), RUN\{builtin\}\+="kmod load ?([^"]*)"$', line)
            if not m:
                continue
            n += 1
            args = (" " + m.group(2)) if m.group(2) else ""
            want = '%s, RUN+="%s/modgate-udev%s"' % (m.group(1), LIBEXEC, args)
            assert want in ours, "no replacement for %r (want %r)" % (line, want)
        assert n >= 7, "udev's 80-drivers.rules has changed: %d kmod lines" % n
        assert not any("builtin" in r for r in ours), ours

        # The override in /etc hides udev's file. Where modgate is installed it skips everything;
        # elsewhere (an initramfs made from this system) it does what udev's file does.
        override = rules_lines(dest + "/etc/udev/rules.d/80-drivers.rules")
        assert override[0] == 'ACTION!="add", GOTO="modgate_drivers_end"', override
        # ... and its socket listens: not with modgate=off, nor before the package's postinst.
        assert override[1] == ('TEST=="%s/modgate-udev", TEST=="/usr/lib/udev/rules.d/80-modgate.rules", '
                               'TEST=="/run/modgate/io.modgate", GOTO="modgate_drivers_end"' % LIBEXEC), override
        assert override[-1] == 'LABEL="modgate_drivers_end"', override
        system = [x for x in rules_lines(SYSTEM_DRIVERS_RULES) if "RUN{builtin}" in x]
        assert sorted(override[2:-1]) == sorted(system), (override, system)

    def case_initramfs():
        # Debian's initramfs-tools copies /etc/udev/rules.d/80-drivers.rules in place of udev's, and
        # none of modgate: the initramfs must still load the drivers of the root disk itself.
        if not os.path.exists(merged + "/usr/sbin/mkinitramfs"):
            raise AssertionError("no initramfs-tools in the build root (linux-image-amd64 brings it)")
        kver = os.path.basename(h.kernel_tree())
        h.run("mount", "-t", "proc", "proc", merged + "/proc")
        try:
            h.run("chroot", merged, "mkinitramfs", "-o", "/tmp/modgate-initrd.img", kver,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            h.run("umount", merged + "/proc")
        unpacked = os.path.join(work, "initramfs")
        os.makedirs(unpacked)
        h.run("unmkinitramfs", merged + "/tmp/modgate-initrd.img", unpacked, stdout=subprocess.DEVNULL)
        found = {}
        for d, _, files in os.walk(unpacked):
            for f in files:
                found.setdefault(f, []).append(os.path.join(d, f))
        assert not [f for f in found if f.startswith("modgate") or f == "80-modgate.rules"], \
            "modgate is in the initramfs now: the override's fallback needs another look"
        assert len(found.get("80-drivers.rules", [])) == 1, found.get("80-drivers.rules")
        rules = rules_lines(found["80-drivers.rules"][0])
        assert rules == rules_lines(dest + "/etc/udev/rules.d/80-drivers.rules"), rules
        assert 'ENV{MODALIAS}=="?*", RUN{builtin}+="kmod load"' in rules, rules

    def case_sysctl_and_dropins():
        # No sysctl.d file (an initramfs generator would copy it without modgate): the drop-in sets it,
        # and a copy of the drop-in without the helper fails harmlessly ("-").
        assert not os.path.exists(dest + pkg_var("systemd", "sysctldir")), os.listdir(dest + pkg_var("systemd", "sysctldir"))
        unitdir = dest + pkg_var("systemd", "systemd_system_unit_dir")
        with open(unitdir + "/systemd-sysctl.service.d/modgate.conf") as f:
            text = f.read()
        assert "\nExecStartPost=-%s/modgate-modprobe --set-kernel-modprobe\n" % LIBEXEC in text, text
        with open(unitdir + "/systemd-udevd.service.d/modgate.conf") as f:
            text = f.read()
        assert "CapabilityBoundingSet=~CAP_SYS_MODULE\n" in text and "Wants=modgated.socket modgated.service\n" in text, text
        with open(unitdir + "/systemd-modules-load.service.d/modgate.conf") as f:
            assert "ConditionPathExists=!%s/modgate-modules-load\n" % LIBEXEC in f.read()
        with open(unitdir + "/modprobe@.service.d/modgate.conf") as f:
            text = f.read()
        assert "ExecStart=\nExecStart=-/usr/bin/modgatectl load %I\n" in text and "After=modgated.socket\n" in text, text

    def case_takeover_switches():
        off = os.path.join(work, "build-off")
        h.run("meson", "setup", "-Dudev-takeover=false", "-Dmodprobe-takeover=false",
              "-Dmodules-load-takeover=false", off,
              os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")),
              stdout=subprocess.DEVNULL)
        installed = set(json.loads(subprocess.run(["meson", "introspect", "--installed", off], capture_output=True,
                                                  text=True, check=True).stdout).values())
        for gone in ("/etc/udev/rules.d/80-drivers.rules", "/usr/lib/udev/rules.d/80-modgate.rules",
                     "/usr/lib/systemd/system/modgate-udev-rules.service"):
            assert gone not in installed, gone
        assert not [f for f in installed if ".service.d/" in f], installed
        for kept in (LIBEXEC + "/modgate-udev", LIBEXEC + "/modgate-modprobe", "/usr/lib/systemd/system/modgated.service"):
            assert kept in installed, kept

    def case_preset():
        res = subprocess.run(["systemctl", "--root=" + merged, "preset", "modgated.socket", "modgated.service",
                              "modgate-modules-load.service"], capture_output=True, text=True)
        assert res.returncode == 0, res
        etc = merged + "/etc/systemd/system"
        assert os.path.islink(etc + "/sockets.target.wants/modgated.socket"), os.listdir(etc)
        assert os.path.islink(etc + "/sysinit.target.wants/modgate-modules-load.service"), os.listdir(etc)
        # The service has no [Install]: the socket starts it.
        assert not [p for p in os.popen("find %s -name modgated.service -type l" % etc).read().split()], etc

    t.case("meson install puts every file where systemd.pc and udev.pc say", case_layout)
    t.case("systemd-analyze security rates modgated.service %.1f or lower" % EXPOSURE_MAX, case_exposure)
    t.case("the boot-list unit is hardened too, and udevd loses CAP_SYS_MODULE", case_exposure_others)
    t.case("systemd-analyze verify accepts the units and drop-ins", case_verify)
    t.case("udevadm verify accepts the rules", case_udevadm_verify)
    t.case("80-modgate.rules replaces every kmod builtin call of udev's 80-drivers.rules; the override in /etc "
           "keeps them only where modgate is missing (an initramfs)",
           case_rules_replace_builtin)
    t.case("an initramfs made from the installed system gets the override, which loads drivers without modgate",
           case_initramfs)
    t.case("kernel.modprobe points at modgate-modprobe; the drop-ins say what they take over", case_sysctl_and_dropins)
    t.case("the takeover switches off install none of the takeover files", case_takeover_switches)
    t.case("the preset enables the socket and the boot-list unit", case_preset)
    t.run()

    return t.done()


if __name__ == "__main__":
    sys.exit(main())
