# SPDX-License-Identifier: LGPL-2.1-or-later
"""Parity with stock udev on QEMU's default PC devices, whose drivers come from devices that do not
last: parport_pc creates platform devices parport_pc.N while it probes and removes them again, a
DRM driver for the VGA card removes the vga-framebuffer.0 the firmware's console left, and ppdev is
loaded by a rule on parport_pc's module event (SUBSYSTEM=="module"). udevd asks after the device may
be gone: modgated checks its request against the uevent the kernel sent, not against sysfs now. A
request whose SEQNUM is no kernel event is refused."""

import guest

# -nodefaults leaves these out; a new user's QEMU has them.
DEVICES = ["-vga", "std", "-chardev", "null,id=modgate-parport", "-device", "isa-parallel,chardev=modgate-parport"]
TIMEOUT = 480

REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
UEVENTS_LOST_ID = "d0a09ce1568c4f8e960a853349dea73f"
# What stock udev loads for these devices and modgate did not, before it followed the kernel's events.
TRANSIENT = ("parport_pc", "ppdev", "vga16fb", "vgastate")
CGROUP = "/sys/fs/cgroup/system.slice/systemd-udevd.service/udev/modgate-vm-seqnum"


def settled_modules(vm):
    vm.sh("udevadm settle --timeout=120", timeout=180)
    return set(guest.live_modules(vm))


def udevd_refusals(vm):
    return vm.journal("MESSAGE_ID=" + REFUSED_ID, "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service",
                      "MODGATE_PEER_UNIT=systemd-udevd.service")


def test_transient_drivers(vm):
    """parport_pc, ppdev, vga16fb and vgastate are loaded under modgate, and none of udevd's requests was refused"""
    live = settled_modules(vm)
    vm.pc_modules = live
    refused = udevd_refusals(vm)
    assert not refused, "\n".join(r.get("MODGATE_REASON", r["MESSAGE"]) for r in refused)
    missing = [m for m in TRANSIENT if m not in live]
    assert not missing, "not loaded: %s (loaded: %s)" % (missing, " ".join(sorted(live)))
    # The coldplug burst fitted in the uevent socket's buffer (what the kernel grants without
    # CAP_NET_ADMIN: net.core.rmem_max): no event was lost, none fell back to sysfs.
    lost = vm.journal("MESSAGE_ID=" + UEVENTS_LOST_ID, "_BOOT_ID=" + vm.boot_id)
    assert not lost, [r["MESSAGE"] for r in lost]
    print("# %s uevents this boot; net.core.rmem_max %s" % (
        vm.sh("cat /sys/kernel/uevent_seqnum").out.strip(), vm.sh("sysctl -n net.core.rmem_max").out.strip()))
    for m in ("parport_pc", "ppdev", "vga16fb"):
        recs = guest.records(vm, m, "loaded")
        assert recs and recs[0].get("MODGATE_SOURCE") == "udev", (m, recs)
        devpath = recs[0].get("MODGATE_DEVPATH")
        there = vm.sh("test -e /sys%s" % guest.quote(devpath), check=False).rc == 0
        print("# %s: loaded for %s (uevent %s), which is %s" % (m, devpath, recs[0].get("MODGATE_SEQNUM"),
                                                             "there" if there else "gone now"))


def udev_helper(vm, env):
    """modgate-udev as udevd runs it, from a cgroup below udevd's, without CAP_SYS_MODULE: (rc, stderr)."""
    words = " ".join("%s=%s" % (k, guest.quote(v)) for k, v in sorted(env.items()))
    r = vm.sh("""mkdir -p %(cg)s; (
        echo $BASHPID >%(cg)s/cgroup.procs
        exec env -i PATH=/usr/sbin:/usr/bin %(env)s setpriv --bounding-set=-sys_module --inh-caps=-sys_module \\
                /usr/libexec/modgate/modgate-udev
        ); rc=$?; rmdir %(cg)s; exit $rc""" % {"cg": CGROUP, "env": words}, check=False)
    return r.rc, r.err


def test_made_up_seqnum(vm):
    """a udev request whose SEQNUM is no kernel event is refused, with the reason; the real one is not"""
    rec = guest.records(vm, "parport_pc", "loaded")
    assert rec, "parport_pc was not loaded through modgate"
    rec = rec[0]
    env = {"ACTION": "add", "DEVPATH": rec["MODGATE_DEVPATH"], "MODALIAS": rec["MODGATE_MODALIAS"],
           "SUBSYSTEM": rec.get("MODGATE_SUBSYSTEM", "pnp")}
    made_up = int(vm.sh("cat /sys/kernel/uevent_seqnum").out) + 100000
    before = len(udevd_refusals(vm))
    rc, err = udev_helper(vm, dict(env, SEQNUM=str(made_up)))
    refused = udevd_refusals(vm)[before:]
    assert len(refused) == 1, (rc, err, refused)
    assert refused[0]["MODGATE_REASON"] == "the kernel sent no uevent %d" % made_up, refused
    print("# %s: %s" % (env["DEVPATH"], refused[0]["MODGATE_REASON"]))
    rc, err = udev_helper(vm, dict(env, SEQNUM=rec["MODGATE_SEQNUM"]))
    assert rc == 0 and len(udevd_refusals(vm)) == before + 1, (rc, err)


def test_state_in_fd_store(vm):
    """modgated's uevent socket, history and roots' records are in PID 1's fd store, nothing of them in /run/modgated"""
    kept = int(vm.sh("systemctl show -P NFileDescriptorStore modgated.service").out)
    assert kept >= 3, (kept, vm.sh("systemd-analyze fdstore modgated.service", check=False).out)
    files = vm.sh("ls -A /run/modgated").out.split()
    assert "history" not in files and "trusted-roots" not in files, files
    print("# %d fds in the store; /run/modgated: %s" % (kept, " ".join(files)))


def test_stock_parity(vm):
    """every module stock udev loads on these devices (a boot with modgate_vm.stock_udev) is loaded under modgate"""
    ours = getattr(vm, "pc_modules", None)
    assert ours, "no modgate boot to compare with (the first case failed)"
    vm.append = (vm.append + " modgate_vm.stock_udev").strip()
    vm.reboot(300)
    assert vm.sh("systemctl is-active modgated.service", check=False).out.strip() != "active"
    stock = settled_modules(vm)
    missing = sorted(stock - ours)
    print("# stock udev: %d modules, modgate: %d; only under modgate: %s" % (
        len(stock), len(ours), " ".join(sorted(ours - stock)) or "none"))
    assert not missing, "stock udev loads what modgate did not: %s" % " ".join(missing)
    assert set(TRANSIENT) <= stock, "stock udev loads no %s: the expectation is wrong" % sorted(set(TRANSIENT) - stock)
