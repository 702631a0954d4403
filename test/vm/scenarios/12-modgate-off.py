# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgate=off on the kernel command line: this boot loads modules as stock Debian does (udevd with
CAP_SYS_MODULE and udev's kmod builtin, /sbin/modprobe for the kernel, systemd-modules-load for the
boot list), the way back for one boot when modgated cannot start; the next boot without it is
modgate's again. Nothing on disk changes."""

import guest

APPEND = "modgate=off modules_load=tun"
TIMEOUT = 600

LIBEXEC = "/usr/libexec/modgate"
HOTPLUG_MODULE = "e1000"
KERNEL_MODULE = "squashfs"
BOOT_LIST_MODULE = "tun"
CAP_SYS_MODULE = 16


def udevd_cap(vm):
    pid = vm.sh("systemctl show -P MainPID systemd-udevd.service").out.strip()
    assert pid != "0", "systemd-udevd is not running"
    line = vm.sh("grep ^CapBnd: /proc/%s/status" % pid).out
    return bool(int(line.split()[1], 16) & (1 << CAP_SYS_MODULE))


def modgate_records(vm):
    return [r for r in vm.journal("_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
            if r.get("MODGATE_OUTCOME")]


def settled_modules(vm):
    vm.sh("udevadm settle --timeout=120", timeout=180)
    return set(guest.live_modules(vm))


def test_stock_loading(vm):
    """udevd holds CAP_SYS_MODULE, kernel.modprobe is /sbin/modprobe, systemd-modules-load loaded the boot list, modgated never ran"""
    vm.off_modules = settled_modules(vm)
    assert udevd_cap(vm), "systemd-udevd has no CAP_SYS_MODULE with modgate=off"
    assert vm.sh("sysctl -n kernel.modprobe").out.strip() == "/sbin/modprobe"
    assert vm.sh("systemctl show -P ConditionResult systemd-modules-load.service").out.strip() == "yes"
    assert vm.sh("systemctl show -P Result systemd-modules-load.service").out.strip() == "success"
    assert guest.initstate(vm, BOOT_LIST_MODULE) == "live"
    # It ran early, logging to the kernel's buffer before journald was there: its run and tun live,
    # with no record of modgate's (below), say who loaded it.
    assert vm.sh("systemctl show -P ExecMainStatus systemd-modules-load.service").out.strip() == "0"
    for unit in ("modgated.socket", "modgated.service", "modgate-modules-load.service"):
        state = vm.sh("systemctl is-active %s" % unit, check=False).out.strip()
        assert state == "inactive", (unit, state)
    assert vm.sh("systemctl is-enabled modgated.socket", check=False).out.strip() in ("masked-runtime", "masked")
    assert vm.sh("test -e /run/modgate/io.modgate", check=False).rc != 0
    # modprobe@ runs /sbin/modprobe again, not modgatectl.
    assert "modgatectl" not in vm.sh("systemctl show -P ExecStart modprobe@loop.service").out
    assert not modgate_records(vm), modgate_records(vm)


def test_hotplug(vm):
    """a hotplugged e1000 gets its driver from udevd itself"""
    guest.hotplug(vm, "e1000", HOTPLUG_MODULE, "modgate-nic")
    assert not modgate_records(vm)


def test_kernel_request(vm):
    """the kernel's request_module() runs /sbin/modprobe"""
    assert guest.live_modules(vm)[KERNEL_MODULE] == 0, "squashfs is loaded already"
    vm.sh("mkdir -p /tmp/sq; mount -t squashfs /dev/null /tmp/sq", check=False)
    assert guest.initstate(vm, KERNEL_MODULE) == "live"
    assert not modgate_records(vm)


def test_next_boot(vm):
    """the next boot without modgate=off is modgate's again"""
    vm.append = "modules_load=tun"
    vm.reboot(300)
    assert not udevd_cap(vm), "systemd-udevd kept CAP_SYS_MODULE"
    assert vm.sh("sysctl -n kernel.modprobe").out.strip() == LIBEXEC + "/modgate-modprobe"
    assert vm.sh("systemctl show -P ConditionResult systemd-modules-load.service").out.strip() == "no"
    recs = guest.records(vm, BOOT_LIST_MODULE, "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "boot", recs
    assert [r for r in modgate_records(vm) if r.get("MODGATE_SOURCE") == "udev"], "no udev request through modgate"


def test_same_as_stock(vm):
    """the boot loaded the same modules as a boot with modgate's units masked by hand (stock udev)"""
    assert getattr(vm, "off_modules", None), "no modgate=off boot to compare with (the first case failed)"
    off = vm.off_modules
    # Last: that boot's helper changes /etc for stock udev, which a further boot would keep.
    vm.append = "modules_load=tun modgate_vm.stock_udev"
    vm.reboot(300)
    stock = settled_modules(vm)
    print("# modgate=off: %d modules, stock: %d" % (len(off), len(stock)))
    assert off == stock, "only with modgate=off: %s; only stock: %s" % (
        " ".join(sorted(off - stock)) or "none", " ".join(sorted(stock - off)) or "none")
