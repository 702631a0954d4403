# SPDX-License-Identifier: LGPL-2.1-or-later
"""fs-verity: an ext4 made here with the verity feature (on a loop device) holds two module trees
with the same module file, once with fs-verity enabled and once without. With the file's fs-verity
digest (as `fsverity measure` prints it) in FsVerityDigest= and verity evidence only, the file with
fs-verity loads; the same bytes without it are refused for having no fs-verity, and the file with
fs-verity is refused while the allowlist holds another digest."""

import hashlib

import guest

MODULE = "tcp_illinois"
UNIT = "modgate-fs-verity"
ADDRESS = "/run/modgate-fs-verity.sock"
WORK = "/var/tmp/modgate-fs-verity"
IMAGE = WORK + "/ext4.img"
MOUNT = "/run/modgate-fs-verity"
OTHER_DIGEST = "sha256:" + hashlib.sha256(b"modgate: not this module's fs-verity digest").hexdigest()


def config(tree, digest):
    return "[Trust]\nTrustedRoot=%s\nEvidence=verity\nFsVerityDigest=%s\n" % (tree, digest)


def test_setup(vm):
    """an ext4 with the verity feature: one tree's copy gets fs-verity, the other's does not"""
    path, deps = guest.dependencies(vm, MODULE)
    assert deps == [], deps
    vm.sh("""set -e
        mkdir -p %(work)s %(mnt)s
        truncate -s 32M %(img)s
        # fs-verity on ext4 wants the block size to be the page size.
        mkfs.ext4 -q -b 4096 -O verity %(img)s
        loop=$(losetup --find --show %(img)s)
        mount -t ext4 $loop %(mnt)s
        """ % {"work": WORK, "mnt": MOUNT, "img": IMAGE})
    trees = {}
    for name in ("with", "without"):
        trees[name], dep = guest.module_index(vm, "%s/%s" % (MOUNT, name), modules=[path])
        assert dep == path + ":\n", dep
    with_file, without_file = ("%s/%s" % (trees[n], path) for n in ("with", "without"))
    out = vm.sh("""set -e
        cmp %(with)s %(without)s
        fsverity enable %(with)s
        fsverity measure %(with)s
        fsverity digest %(without)s
        if fsverity measure %(without)s 2>/dev/null; then echo "%(without)s has fs-verity" >&2; exit 1; fi
        """ % {"with": with_file, "without": without_file}).out.splitlines()
    # "sha256:HEX PATH" each: the measured digest of the enabled file is the one computed for the
    # same bytes of the other.
    measured, computed = out[0].split()[0], out[1].split()[0]
    assert measured.startswith("sha256:") and len(measured) == 7 + 64, out
    assert measured == computed, out
    vm.fs_verity = trees, measured


def test_without_fs_verity_refused(vm):
    """the same bytes in a file without fs-verity: refused, it has no fs-verity"""
    trees, digest = vm.fs_verity
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    reply, error = guest.load_with(vm, UNIT + "-without", ADDRESS, config(trees["without"], digest), MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    assert reply["module"] == MODULE and "has no fs-verity" in reply["reason"], reply
    recs = guest.records(vm, MODULE, "denied", unit=UNIT + "-without.service")
    assert len(recs) == 1 and "has no fs-verity" in recs[0]["MODGATE_REASON"], recs
    assert recs[0]["MODGATE_FSTYPE"] == "ext4" and "MODGATE_FSVERITY_DIGEST" not in recs[0], recs
    assert guest.initstate(vm, MODULE) == "absent"


def test_other_digest_refused(vm):
    """the file with fs-verity, another digest allowlisted: refused, naming the file's digest"""
    trees, digest = vm.fs_verity
    reply, error = guest.load_with(vm, UNIT + "-other", ADDRESS, config(trees["with"], OTHER_DIGEST), MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    assert "fs-verity digest %s is not allowed" % digest in reply["reason"], reply
    assert guest.initstate(vm, MODULE) == "absent"


def test_with_fs_verity_loads(vm):
    """the file with fs-verity and its digest allowlisted: loaded, the record carries the digest"""
    trees, digest = vm.fs_verity
    reply, error = guest.load_with(vm, UNIT + "-with", ADDRESS, config(trees["with"], digest), MODULE)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    recs = guest.records(vm, MODULE, "loaded", unit=UNIT + "-with.service")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_EVIDENCE"] == "verity" and r["MODGATE_VERITY"] == "fs-verity", r
    assert r["MODGATE_FSVERITY_DIGEST"] == digest, r
    assert r["MODGATE_FSTYPE"] == "ext4" and r["MODGATE_SUPERBLOCK_RO"] == "0", r
    assert r["MODGATE_PATH"] == "%s/%s" % (trees["with"], guest.dependencies(vm, MODULE)[0]), r
    # On a loop device: no device-mapper table to name.
    assert "MODGATE_VERITY_ROOT_HASH" not in r and "MODGATE_DM_DEVICE" not in r, r
    assert guest.initstate(vm, MODULE) == "live"


def cleanup(vm):
    for suffix in ("-without", "-other", "-with"):
        guest.stop_modgated(vm, UNIT + suffix)
    vm.sh("""
        umount %(mnt)s 2>/dev/null
        for l in $(losetup -n -O NAME -j %(img)s); do losetup -d $l; done
        rm -rf %(work)s; rmdir %(mnt)s
        rmmod %(mod)s
        """ % {"mnt": MOUNT, "img": IMAGE, "work": WORK, "mod": MODULE}, check=False)
