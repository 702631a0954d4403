# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guest boots to multi-user, with modgated's socket listening and the trusted module tree on a
dm-verity volume; the initramfs loaded only the modules needed to mount that and the root."""

import time

import guest


def test_multi_user(vm):
    """systemd reaches multi-user.target with no failed unit"""
    failed = vm.sh("systemctl --failed --no-legend --plain", check=False).out
    assert vm.state == "running", "system state %s; failed units:\n%s" % (vm.state, failed)
    vm.sh("systemctl is-active multi-user.target")


def test_socket_listening(vm):
    """modgated.socket is listening on /run/modgate/io.modgate and starts the service on demand"""
    assert vm.sh("systemctl is-active modgated.socket").out.strip() == "active"
    # The service has no [Install]: only its socket starts it. With the udev takeover (the default)
    # coldplug's requests have done so by now; it may have exited since, when idle.
    assert vm.sh("systemctl show -P TriggeredBy modgated.service").out.strip() == "modgated.socket"
    assert vm.sh("systemctl show -P UnitFileState modgated.service").out.strip() == "static"
    state = vm.sh("systemctl show -P ActiveState modgated.service").out.strip()
    assert state in ("inactive", "active"), "modgated.service is %s" % state
    listen = vm.sh("systemctl show -P Listen modgated.socket").out.strip()
    assert listen == guest.SOCKET + " (Stream)", listen
    vm.sh("test -S " + guest.SOCKET)


def test_module_tree_on_verity(vm):
    """/usr/lib/modules/$(uname -r) is a read-only erofs on a verified dm-verity device"""
    table = vm.sh("dmsetup table modgate-modules").out.split()
    assert table[2] == "verity", table
    status = vm.sh("veritysetup status modgate-modules").out
    fields = dict(line.strip().split(":", 1) for line in status.splitlines()[1:] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["type"] == "VERITY" and fields["status"] == "verified", status
    assert fields["root hash"] == vm.manifest["roothash"], status

    mount = vm.sh("findmnt -n -o SOURCE,FSTYPE,OPTIONS /usr/lib/modules/$(uname -r)").out
    source, fstype, options = mount.split()
    assert fstype == "erofs" and "ro" in options.split(","), (fstype, options)
    assert vm.sh("readlink -f " + source).out == vm.sh("readlink -f " + guest.MODULES_DEVICE).out, source


def test_initramfs_modules(vm):
    """the initramfs loaded only what mounts the root and opens the verity volume, and said so"""
    listed = vm.sh("cat /run/modgate-vm/initrd-modules").out.split()
    assert listed == vm.manifest["initrd_modules"], listed
    kmsg = vm.sh("journalctl -k -b SYSLOG_IDENTIFIER=modgate-initrd -o cat --no-pager").out.splitlines()
    assert "loaded " + " ".join(listed) in kmsg, kmsg
    live = guest.live_modules(vm)
    assert all(live[m] == 1 for m in listed), live


OUTSIDE_ID = "768173c3df9f4d60887b5916985cefb3"
GONE_ID = "50f3e70422fa4192b532eb77cc65998a"
BEHIND = "tcp_vegas"    # insmod'ed by hand, behind modgate's back


def list_entries(vm):
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.List")
    assert error is None, (error, reply)
    return {e["module"]: e for e in reply["modules"]}


def test_initramfs_accounted(vm):
    """every module the initramfs loaded is recorded once as loaded outside modgate, and every module in
    the kernel has a record once coldplug is done"""
    listed = vm.sh("cat /run/modgate-vm/initrd-modules").out.split()
    entries = list_entries(vm)
    for m in listed:
        recs = vm.journal("MESSAGE_ID=" + OUTSIDE_ID, "MODGATE_MODULE=" + m, "_BOOT_ID=" + vm.boot_id)
        assert len(recs) == 1, (m, recs)
        assert entries[m]["outcome"] == "loaded_outside", entries.get(m)
    # A module is in /proc/modules from the start of its init; its load is recorded when finit_module()
    # returns. So: once udev is settled and modgated has no job left.
    vm.sh("udevadm settle --timeout=120")
    deadline = time.monotonic() + 60
    while True:
        entries = list_entries(vm)
        live = set(guest.live_modules(vm))
        unknown = sorted(m for m in live if entries.get(m, {}).get("outcome") not in ("loaded", "loaded_outside"))
        if not unknown or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not unknown, "in the kernel with no record: %s" % unknown
    print("# %d modules in the kernel, %d of them from the initramfs" % (len(live), len(listed)))


def outside_records(vm, module, msgid):
    return vm.journal("MESSAGE_ID=" + msgid, "MODGATE_MODULE=" + module, "_BOOT_ID=" + vm.boot_id)


def test_insmod_behind(vm):
    """insmod and rmmod by root behind modgate's back, while it runs, are each recorded within a second"""
    path = vm.sh("modinfo -n %s" % BEHIND).out.strip()
    assert guest.varlinkctl(vm, "io.modgate.Manager.List")[1] is None       # running now
    vm.sh("insmod %s" % path)
    deadline = time.monotonic() + 1
    while not outside_records(vm, BEHIND, OUTSIDE_ID) and time.monotonic() < deadline:
        time.sleep(0.1)
    recs = outside_records(vm, BEHIND, OUTSIDE_ID)
    assert len(recs) == 1, recs
    assert recs[0]["MODGATE_REASON"] == "loaded while modgated ran (the kernel's module uevent)", recs
    assert "MODGATE_TAINT" not in recs[0], recs     # Debian's modules are signed
    # Asked for now, it is known: not recorded again.
    reply, error = guest.load(vm, BEHIND)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["already_loaded"], (error, reply)
    assert len(outside_records(vm, BEHIND, OUTSIDE_ID)) == 1
    # Later scenarios of this boot account for every module in the kernel as udev's or the boot list's.
    vm.sh("rmmod %s" % BEHIND)
    deadline = time.monotonic() + 1
    while not outside_records(vm, BEHIND, GONE_ID) and time.monotonic() < deadline:
        time.sleep(0.1)
    gone = outside_records(vm, BEHIND, GONE_ID)
    assert len(gone) == 1 and "module uevent" in gone[0]["MODGATE_REASON"], gone


def test_security_score(vm):
    """systemd-analyze security rates the installed modgated.service at 2.0 or lower"""
    out = vm.sh("systemd-analyze security --no-pager modgated.service").out
    line = [l for l in out.splitlines() if "Overall exposure level for modgated.service" in l]
    assert line, out[-2000:]
    score = float(line[-1].split(":", 1)[1].split()[0])
    print("# systemd-analyze security modgated.service in the guest: %.1f" % score)
    assert score <= 2.0, line[-1]
