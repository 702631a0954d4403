# SPDX-License-Identifier: LGPL-2.1-or-later
"""A verity device set up after the daemon started: the second trusted root, a [Root] with its own
RootHash=, does not exist when modgated starts; then an erofs image made here is opened with
veritysetup and mounted there, and a module on it, named by the first root's index at its absolute
path (depmod's `external` directive), loads on verity evidence: the root is pinned at that first
load, and the hash was in the configuration before the device existed."""

import guest

MODULE = "tcp_hybla"
UNIT = "modgate-late-verity"
ADDRESS = "/run/modgate-late-verity.sock"
WORK = "/var/tmp/modgate-late-verity"
IMAGE = WORK + "/late.img"
LATE = "/run/modgate-late-verity/tree"
DEVICE = "modgate-late-verity"


def config(index, roothash):
    # The first root holds only the index: it lists the module at its path beneath the second.
    return ("[Trust]\nTrustedRoot=%s\nEvidence=verity\n\n[Root]\nPath=%s\nRootHash=%s\n"
            % (index, LATE, roothash))


def test_index_names_absolute_path(vm):
    """depmod's external directory: modules.dep lists the module by its absolute path"""
    path, deps = guest.dependencies(vm, MODULE)
    assert deps == [], deps
    # What will be mounted at LATE, staged at LATE itself for depmod to see it there, then made
    # into the image and removed: the directory is gone again when the daemon starts.
    vm.sh("mkdir -p %s && cp /usr/lib/modules/$(uname -r)/%s %s/" % (LATE, path, LATE))
    index, dep = guest.module_index(vm, WORK + "/index", external=[LATE])
    file = "%s/%s" % (LATE, path.rsplit("/", 1)[1])
    assert dep == file + ":\n", dep
    vm.late_verity = (index, file) + guest.erofs_verity(vm, LATE, IMAGE)
    vm.sh("rm -r %s" % LATE.rsplit("/", 1)[0])


def test_pinned_at_first_load(vm):
    """the root's directory missing at start, the device opened and mounted later: the module loads on verity"""
    index, file, roothash, size = vm.late_verity
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    guest.start_modgated(vm, UNIT, ADDRESS, config(index, roothash))
    try:
        vm.sh("! test -e %s" % LATE)
        log = vm.sh("journalctl -b -u %s.service -o cat --no-pager" % UNIT).out
        assert "Trusted root %s is not there yet; it is pinned when a module beneath it is first loaded. " \
            "It accepts: verity." % LATE in log, log
        vm.sh("""set -e
            veritysetup open --hash-offset=%(size)d %(img)s %(dev)s %(img)s %(hash)s
            mkdir -p %(late)s
            mount -t erofs -o ro /dev/mapper/%(dev)s %(late)s
            """ % {"img": IMAGE, "dev": DEVICE, "size": size, "hash": roothash, "late": LATE})
        reply, error = guest.load(vm, MODULE, address=ADDRESS)
    finally:
        guest.stop_modgated(vm, UNIT)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    recs = guest.records(vm, MODULE, "loaded", unit=UNIT + ".service")
    assert len(recs) == 1, recs
    r = recs[0]
    device = guest.dm_kernel_name(vm, "/dev/mapper/" + DEVICE)
    assert r["MODGATE_PATH"] == file and r["MODGATE_FSTYPE"] == "erofs", r
    assert r["MODGATE_EVIDENCE"] == "verity" and r["MODGATE_VERITY"] == "dm-verity", r
    assert r["MODGATE_DM_DEVICE"] == device and r["MODGATE_DM_TARGET"] == "verity", r
    assert r["MODGATE_VERITY_ROOT_HASH"] == roothash, r
    assert guest.initstate(vm, MODULE) == "live"


def cleanup(vm):
    guest.stop_modgated(vm, UNIT)
    vm.sh("""
        umount %(late)s 2>/dev/null
        dmsetup info %(dev)s >/dev/null 2>&1 && veritysetup close %(dev)s
        for l in $(losetup -n -O NAME -j %(img)s); do losetup -d $l; done
        rm -rf %(work)s %(top)s
        rmmod %(mod)s
        """ % {"late": LATE, "dev": DEVICE, "img": IMAGE, "work": WORK, "top": LATE.rsplit("/", 1)[0],
               "mod": MODULE}, check=False)
