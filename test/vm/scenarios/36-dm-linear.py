# SPDX-License-Identifier: LGPL-2.1-or-later
"""A device-mapper device that only looks like verity: an erofs image (a small module tree with its
own index) with its dm-verity hash tree appended, mapped through a dm-linear table under the name
and uuid systemd-veritysetup would give a verity device. The image's root hash is allowlisted,
yet the module is refused as linear, not verity: the daemon reads the kernel's table, not the
name. The same image opened with veritysetup, a real verity table, loads (the control)."""

import guest

MODULE = "tcp_westwood"
UNIT = "modgate-dm-linear"
ADDRESS = "/run/modgate-dm-linear.sock"
WORK = "/var/tmp/modgate-dm-linear"
IMAGE = WORK + "/tree.img"
MOUNT = "/run/modgate-dm-linear"
# What systemd-veritysetup@usr.service makes: /dev/mapper/usr, uuid CRYPT-VERITY-<32 hex digits>-usr.
FAKE = "usr"
FAKE_UUID = "CRYPT-VERITY-6d6f64676174652d766d2d6c696e6561-usr"
REAL = "modgate-dm-linear"


def config(roothash):
    return "[Trust]\nTrustedRoot=%s\nEvidence=verity\nRootHash=%s\n" % (MOUNT, roothash)


def image(vm):
    """The module tree, as an erofs image with its hash tree: (root hash, size of the erofs part)."""
    if not getattr(vm, "dm_linear_image", None):
        path, deps = guest.dependencies(vm, MODULE)
        assert deps == [], deps
        tree, dep = guest.module_index(vm, WORK + "/stage", modules=[path])
        assert dep == path + ":\n", dep
        vm.dm_linear_image = guest.erofs_verity(vm, tree, IMAGE)
    return vm.dm_linear_image


def test_linear_refused(vm):
    """dm-linear named and labelled like a verity device, its image's root hash allowlisted: refused as linear"""
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    roothash, size = image(vm)
    vm.sh("""set -e
        loop=$(losetup --find --show --read-only %(img)s)
        dmsetup create %(fake)s --readonly --uuid %(uuid)s --table "0 $((%(size)d / 512)) linear $loop 0"
        mkdir -p %(mnt)s
        mount -t erofs -o ro /dev/mapper/%(fake)s %(mnt)s
        """ % {"img": IMAGE, "fake": FAKE, "uuid": FAKE_UUID, "size": size, "mnt": MOUNT})
    info = vm.sh("dmsetup info -c --noheadings -o name,uuid,blkdevname --separator ' ' %s" % FAKE).out.split()
    assert info[:2] == [FAKE, FAKE_UUID], info
    assert vm.sh("dmsetup table %s" % FAKE).out.split()[2] == "linear"
    device = info[2]
    reply, error = guest.load_with(vm, UNIT + "-linear", ADDRESS, config(roothash), MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    assert reply["module"] == MODULE and "%s is linear, not verity" % device in reply["reason"], reply
    recs = guest.records(vm, MODULE, "denied", unit=UNIT + "-linear.service")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_PATH"] == "%s/%s" % (MOUNT, guest.dependencies(vm, MODULE)[0]), r
    assert r["MODGATE_FSTYPE"] == "erofs" and r["MODGATE_BACKING"].startswith(device), r
    assert "linear, not verity" in r["MODGATE_REASON"] and "MODGATE_VERITY_ROOT_HASH" not in r, r
    assert r["MODGATE_DM_DEVICE"] == device and r["MODGATE_DM_TARGET"] == "linear", r
    assert guest.initstate(vm, MODULE) == "absent"
    unmap(vm)


def test_verity_loads(vm):
    """control: the same image through a real dm-verity table loads, with that root hash"""
    roothash, size = image(vm)
    unmap(vm)           # when the case before failed half-way
    vm.sh("""set -e
        veritysetup open --hash-offset=%(size)d %(img)s %(real)s %(img)s %(hash)s
        mkdir -p %(mnt)s
        mount -t erofs -o ro /dev/mapper/%(real)s %(mnt)s
        """ % {"img": IMAGE, "real": REAL, "size": size, "hash": roothash, "mnt": MOUNT})
    device = guest.dm_kernel_name(vm, "/dev/mapper/" + REAL)
    reply, error = guest.load_with(vm, UNIT + "-verity", ADDRESS, config(roothash), MODULE)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    recs = guest.records(vm, MODULE, "loaded", unit=UNIT + "-verity.service")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_EVIDENCE"] == "verity" and r["MODGATE_DM_DEVICE"] == device, r
    assert r["MODGATE_VERITY_ROOT_HASH"] == roothash and r["MODGATE_DM_TARGET"] == "verity", r
    assert guest.initstate(vm, MODULE) == "live"


def unmap(vm):
    """Unmounts and removes whichever device is mapped, and the loop devices under it."""
    vm.sh("""
        while mountpoint -q %(mnt)s; do umount %(mnt)s || break; done
        for d in %(fake)s %(real)s; do dmsetup info $d >/dev/null 2>&1 && dmsetup remove $d; done
        for l in $(losetup -n -O NAME -j %(img)s); do losetup -d $l; done
        rmdir %(mnt)s 2>/dev/null
        true
        """ % {"mnt": MOUNT, "fake": FAKE, "real": REAL, "img": IMAGE})


def cleanup(vm):
    for suffix in ("-linear", "-verity"):
        guest.stop_modgated(vm, UNIT + suffix)
    unmap(vm)
    vm.sh("rm -rf %s; rmmod %s" % (WORK, MODULE), check=False)
    left = vm.sh("dmsetup ls; losetup -n -j %s" % IMAGE, check=False).out
    assert FAKE not in left.split() and REAL not in left, left
