# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Debian package on a guest that has never had modgate (GUEST_IMAGE = "stock"), as a user installs
it: `apt install` hands loading over at once, with a hotplug during the install that still gets its
driver; after a reboot coldplug, hotplug and the kernel's requests go through modgate; an upgrade
while loads run loses none; `apt remove` gives udevd CAP_SYS_MODULE, the kernel /sbin/modprobe and
systemd-modules-load the boot list back at once; `apt purge` leaves nothing of the package.

The package is what tools/package builds from this tree (prepare(), before the boot), and the
upgrade a second build of it with a higher version (tools/package --version=); or the .deb that
MODGATE_VM_DEB names, and then the upgrade is the same files repacked with a higher version: what
dpkg and the maintainer scripts see of an upgrade."""

import base64
import glob
import os
import shutil
import struct
import subprocess
import time
import xml.etree.ElementTree as ET
import zlib

import guest

GUEST_IMAGE = "stock"
TIMEOUT = 900

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LIBEXEC = "/usr/libexec/modgate"
HOTPLUG_MODULE = "e1000"
KERNEL_MODULE = "squashfs"
CAP_SYS_MODULE = 16
# Leaf modules that nothing in the guest uses: loaded and unloaded over and over during the upgrade.
CYCLE_MODULES = ("dummy", "tun", "veth", "vcan")

debs = {}


def prepare(build_dir):
    given = os.environ.get("MODGATE_VM_DEB")
    out = os.path.join(build_dir, "vm-deb")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if given:
        first = given
    else:
        subprocess.run([os.path.join(SRC, "tools", "package"), out], check=True, stdout=subprocess.DEVNULL)
        first = glob.glob(os.path.join(out, "modgate_*_amd64.deb"))[0]
    version = subprocess.run(["dpkg-deb", "-f", first, "Version"], check=True, capture_output=True,
                             text=True).stdout.strip()
    if not given:
        # A real rebuild: what an upgrade from the archive installs, its own build and all.
        again = os.path.join(out, "rebuild")
        begin = time.monotonic()
        subprocess.run([os.path.join(SRC, "tools", "package"), "--version=%s+vm1" % version, again], check=True,
                       stdout=subprocess.DEVNULL)
        print("# the rebuild as %s+vm1 took %.0f s" % (version, time.monotonic() - begin), flush=True)
        second = glob.glob(os.path.join(again, "modgate_*_amd64.deb"))[0]
        debs.update(first=first, second=second, version=version)
        return
    tree = os.path.join(out, "repack")
    subprocess.run(["dpkg-deb", "-R", first, tree], check=True)
    control = os.path.join(tree, "DEBIAN", "control")
    with open(control) as f:
        text = f.read()
    with open(control, "w") as f:
        f.write(text.replace("\nVersion: %s\n" % version, "\nVersion: %s+vm1\n" % version))
    second = os.path.join(out, "modgate_%s+vm1_amd64.deb" % version)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", tree, second], check=True, stdout=subprocess.DEVNULL)
    debs.update(first=first, second=second, version=version)


def put_deb(vm, path):
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    dest = "/root/" + os.path.basename(path)
    vm.sh("base64 -d > %s" % guest.quote(dest), stdin=data)
    return dest


def udevd_cap(vm):
    pid = vm.sh("systemctl show -P MainPID systemd-udevd.service").out.strip()
    assert pid != "0", "systemd-udevd is not running"
    line = vm.sh("grep ^CapBnd: /proc/%s/status" % pid).out
    return bool(int(line.split()[1], 16) & (1 << CAP_SYS_MODULE))


def wait_module(vm, name):
    vm.sh("for i in $(seq 600); do grep -q '^%s ' /proc/modules && break; sleep 0.1; done; udevadm settle"
          % name, timeout=120)
    return guest.initstate(vm, name)


def hotplug_e1000(vm, nic):
    vm.sh("modprobe -r %s 2>/dev/null || true" % HOTPLUG_MODULE)
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0, "e1000 is loaded already"
    vm.qmp("device_add", driver="e1000", id=nic)
    return wait_module(vm, HOTPLUG_MODULE)


def test_install(vm):
    """apt install hands loading over at once; a hotplug during the install gets its driver; the manifests are written, trust on first use"""
    assert debs, "no package (prepare failed)"
    assert vm.sh("test -e %s/modgated" % LIBEXEC, check=False).rc != 0, "modgate is in the stock image"
    assert udevd_cap(vm)
    vm.installed_deb = put_deb(vm, debs["first"])
    # setsid: the agent kills what a command leaves in its process group.
    vm.sh("setsid -f bash -c 'apt-get install -y %s >/root/apt-install.log 2>&1; echo $? >/root/apt-install.rc' "
          "</dev/null >/dev/null 2>&1" % vm.installed_deb)
    # The device comes once dpkg has unpacked modgate's rules, and before or while postinst hands
    # loading over: its driver loads all the same.
    vm.sh("for i in $(seq 2400); do test -e /usr/lib/udev/rules.d/80-modgate.rules && break; sleep 0.05; done",
          timeout=180)
    state = vm.sh("systemctl is-active modgated.socket", check=False).out.strip()
    vm.qmp("device_add", driver="e1000", id="nic-install")
    vm.sh("while ! test -e /root/apt-install.rc; do sleep 0.2; done", timeout=300)
    log = vm.sh("cat /root/apt-install.log").out
    assert vm.sh("cat /root/apt-install.rc").out.strip() == "0", log
    assert wait_module(vm, HOTPLUG_MODULE) == "live", log
    assert "trust on first use" in log, log
    kver = guest.kernel_release(vm)
    head = vm.sh("head -n 1 /var/lib/modgate/manifests/%s.sha256" % kver).out
    assert "origin=first-use" in head, head
    # At once, without a reboot.
    assert not udevd_cap(vm), "systemd-udevd kept CAP_SYS_MODULE after the install"
    assert vm.sh("sysctl -n kernel.modprobe").out.strip() == LIBEXEC + "/modgate-modprobe"
    assert vm.sh("systemctl is-active modgated.socket").out.strip() == "active"
    assert vm.sh("systemctl is-enabled modgated.socket").out.strip() == "enabled"
    # The kernel's request, through modgate now.
    vm.sh("mkdir -p /tmp/sq; mount -t squashfs /dev/null /tmp/sq", check=False)
    assert guest.initstate(vm, KERNEL_MODULE) == "live"
    recs = guest.records(vm, KERNEL_MODULE, "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "kernel", recs
    print("# hotplug while modgated.socket was %s; %s" % (
        state, " | ".join(l for l in log.splitlines() if l.startswith("modgate:"))))


def test_reboot(vm):
    """after a reboot coldplug, a hotplugged e1000 and a kernel autoload go through modgate, with records"""
    vm.reboot(300)
    assert not udevd_cap(vm)
    coldplug = [r for r in vm.journal("MODGATE_SOURCE=udev", "_BOOT_ID=" + vm.boot_id)
                if r.get("_SYSTEMD_UNIT") == "modgated.service" and r.get("MODGATE_OUTCOME") == "loaded"]
    assert coldplug, "coldplug loaded nothing through modgate"
    assert hotplug_e1000(vm, "nic-reboot") == "live"
    recs = guest.records(vm, HOTPLUG_MODULE, "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "udev", recs
    vm.sh("mkdir -p /tmp/sq; mount -t squashfs /dev/null /tmp/sq", check=False)
    assert guest.initstate(vm, KERNEL_MODULE) == "live"
    recs = guest.records(vm, KERNEL_MODULE, "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "kernel", recs


def test_plot(vm):
    """modgatectl plot: an SVG with one row for each module decision this boot's records name"""
    svg = vm.sh("modgatectl plot").out
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    rows = [g.find(ns + "text").text.split(" (")[0] for g in root.iter(ns + "g") if g.get("class") == "module"]
    recs = [r for r in vm.journal("_BOOT_ID=" + vm.boot_id, "_COMM=modgated", "_UID=0")
            if r.get("MODGATE_MODULE") and r.get("MODGATE_OUTCOME") in ("loaded", "denied", "failed", "loaded_outside")]
    assert rows and sorted(rows) == sorted(r["MODGATE_MODULE"] for r in recs), (rows, len(recs))
    assert HOTPLUG_MODULE in rows and KERNEL_MODULE in rows, rows
    # The records of this modgated have their stages: a bar in pieces, the checks among them.
    staged = [g for g in root.iter(ns + "g") if g.get("class") == "module" and
              any(r.get("class") == "check" for r in g.findall(ns + "rect"))]
    assert staged, "no bar has its stages"
    with open(os.path.join(vm.workdir, "boot-plot.svg"), "w") as f:
        f.write(svg)
    # Rendered as a user would look at it: the PNG is the SVG's size and has its colours.
    png = base64.b64decode(vm.sh("modgatectl plot >/root/plot.svg && rsvg-convert -f png /root/plot.svg | base64 -w0",
                                 timeout=120).out)
    with open(os.path.join(vm.workdir, "boot-plot.png"), "wb") as f:
        f.write(png)
    width, height, colours = png_colours(png)
    assert (width, height) == (int(root.get("width")), int(root.get("height"))), (width, height)
    for c in ("#4c9f38", "#ffffff"):
        assert tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) in colours, (c, len(colours))
    assert len(colours) >= 16, "a blank picture: %d colours" % len(colours)
    print("# %d rows (%d in stages), %d bytes of SVG; PNG %dx%d, %d bytes, %d colours" %
          (len(rows), len(staged), len(svg), width, height, len(png), len(colours)))


def png_colours(png):
    """Width, height and the set of (r, g, b) of an 8-bit RGB or RGBA PNG, as rsvg-convert writes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, ctype, _, _, interlace = header
    assert depth == 8 and ctype in (2, 6) and interlace == 0, header
    bpp = 4 if ctype == 6 else 3
    raw, stride = zlib.decompress(idat), width * bpp
    prev, colours = bytearray(stride), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xff
            elif kind == 2:
                line[i] = (line[i] + b) & 0xff
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xff
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, {tuple(c) for c in colours}


def test_upgrade(vm):
    """an upgrade while loads run loses none: the socket stays, the new daemon serves what waited"""
    before = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    deb = put_deb(vm, debs["second"])
    mods = " ".join(CYCLE_MODULES)
    vm.sh("""setsid -f bash -c 'n=0; fail=0
              while ! test -e /root/apt-upgrade.rc; do
                  for m in %s; do
                      modprobe -r $m 2>/dev/null
                      if modgatectl load $m >/dev/null 2>>/root/loads.err && grep -q "^$m " /proc/modules; then
                          n=$((n+1))
                      else
                          fail=$((fail+1)); echo "$m failed" >>/root/loads.err
                      fi
                  done
              done
              echo "$n $fail" >/root/loads.count' </dev/null >/dev/null 2>&1""" % mods)
    vm.sh("sleep 2; apt-get install -y %s >/root/apt-upgrade.log 2>&1; echo $? >/root/apt-upgrade.rc" % deb,
          timeout=300)
    vm.sh("while ! test -e /root/loads.count; do sleep 0.2; done", timeout=120)
    log = vm.sh("cat /root/apt-upgrade.log").out
    assert vm.sh("cat /root/apt-upgrade.rc").out.strip() == "0", log
    n, fail = map(int, vm.sh("cat /root/loads.count").out.split())
    errors = vm.sh("cat /root/loads.err 2>/dev/null || true").out
    print("# %d loads during the upgrade, %d failed" % (n, fail))
    assert fail == 0 and n > 0, errors
    assert vm.sh("dpkg-query -W -f '${Version}' modgate").out.strip() == debs["version"] + "+vm1"
    after = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    assert after not in ("0", before), (before, after)
    exe = vm.sh("readlink /proc/%s/exe" % after).out.strip()
    assert exe == LIBEXEC + "/modgated", exe
    assert not udevd_cap(vm)


def test_remove(vm):
    """apt remove: udevd holds CAP_SYS_MODULE again, kernel.modprobe is /sbin/modprobe, systemd-modules-load runs, a hotplug loads through stock udev, at once"""
    # Its files, and its own directories (the shared ones, /usr/lib and such, stay). The guest's
    # dpkg leaves out /usr/share/man and /usr/share/doc: what is not there is not counted.
    vm.files = vm.sh("dpkg-query -L modgate | while read -r f; do "
                     "if [ -e \"$f\" ] && { [ ! -d \"$f\" ] || [ \"${f##*/}\" = modgate ]; }; then echo \"$f\"; fi; "
                     "done").out.split()
    vm.sh("echo dummy >/etc/modules-load.d/modgate-vm.conf; modprobe -r dummy")
    log = vm.sh("apt-get remove -y modgate 2>&1", timeout=300).out
    assert udevd_cap(vm), log
    assert vm.sh("sysctl -n kernel.modprobe").out.strip() == "/sbin/modprobe"
    assert vm.sh("systemctl show -P ConditionResult systemd-modules-load.service").out.strip() == "yes"
    assert guest.initstate(vm, "dummy") == "live"
    assert vm.sh("systemctl is-active modgated.socket", check=False).out.strip() != "active"
    since = vm.sh("date +%s.%N").out.strip()
    vm.qmp("device_del", id="nic-reboot")
    vm.sh("for i in $(seq 100); do test -z \"$(ls /sys/bus/pci/drivers/e1000 2>/dev/null | grep :)\" && break; "
          "sleep 0.1; done")
    assert hotplug_e1000(vm, "nic-remove") == "live"
    # Loaded by udevd itself: no new record of modgate's.
    recs = [r for r in guest.records(vm, HOTPLUG_MODULE, "loaded")
            if float(r["__REALTIME_TIMESTAMP"]) / 1e6 > float(since)]
    assert not recs, recs
    vm.sh("mkdir -p /tmp/sq2; modprobe -r squashfs; mount -t squashfs /dev/null /tmp/sq2", check=False)
    assert guest.initstate(vm, KERNEL_MODULE) == "live"


def test_purge(vm):
    """apt purge leaves no file of the package: dpkg -S finds none, /etc/modgate, /var/lib/modgate and the runtime state are gone"""
    vm.sh("mkdir -p /etc/modgate && echo '[Load]' >/etc/modgate/modgate.conf")
    log = vm.sh("apt-get purge -y modgate 2>&1", timeout=300).out
    assert vm.sh("dpkg-query -W -f '${Status}' modgate", check=False).out.strip() in ("", "unknown ok not-installed"), log
    files = [f for f in getattr(vm, "files", []) if f.startswith("/")]
    assert files, "no file list from before the removal"
    owned = vm.sh("dpkg -S %s 2>/dev/null || true" % " ".join(guest.quote(f) for f in files)).out
    assert not owned.strip(), owned
    left = vm.sh("for f in %s; do test -e \"$f\" -o -L \"$f\" && echo \"$f\"; done; true"
                 % " ".join(guest.quote(f) for f in files)).out.split()
    assert not left, left
    print("# %d files and directories of the package, none left" % len(files))
    for d in ("/etc/modgate", "/var/lib/modgate", "/run/modgate", "/run/modgated"):
        assert vm.sh("test -e %s" % d, check=False).rc != 0, d
