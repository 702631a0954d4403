# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guest's own module tree, erofs on the dm-verity device /dev/mapper/modgate-modules, served by
a second modgated that accepts verity evidence only (read-only, which also holds there, may not
vouch): with the tree's root hash in RootHash= a module loads, and its record names the verity
device and the root hash the kernel's table has; with another hash in the allowlist instead it is
refused. The guest boots without roothash= or usrhash=, so the kernel command line allows nothing."""

import hashlib

import guest

MODULE = "tcp_htcp"
UNIT = "modgate-verity-tree"
ADDRESS = "/run/modgate-verity-tree.sock"
# A well-formed root hash that is no device's.
OTHER_HASH = hashlib.sha256(b"modgate: not the guest's module tree").hexdigest()


def config(*hashes):
    # TrustedRoot= unset: the default root, /usr/lib/modules/$(uname -r).
    return "[Trust]\nEvidence=verity\nRootHash=%s\n" % " ".join(hashes)


def tree_hash(vm):
    """The module volume's root hash as the guest knows it: the kernel command line word the
    initramfs opened it with, which is also the image's and the live table's."""
    words = vm.sh("cat /proc/cmdline").out.split()
    assert not [w for w in words if w.startswith(("roothash=", "usrhash="))], words
    cmdline = [w.split("=", 1)[1] for w in words if w.startswith("modgate_vm.verity=")]
    assert cmdline == [vm.manifest["roothash"]], (cmdline, vm.manifest["roothash"])
    table = vm.sh("dmsetup table %s" % guest.MODULES_DEVICE).out.split()
    assert table[2] == "verity" and vm.manifest["roothash"] in table, table
    return vm.manifest["roothash"]


def test_no_hash_unasked(vm):
    """no root hash allowed anywhere: refused without asking the prober (no table could vouch), and said so"""
    tree_hash(vm)
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    reply, error = guest.load_with(vm, UNIT + "-none", ADDRESS, "[Trust]\nEvidence=verity\n", MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    device = guest.dm_kernel_name(vm, guest.MODULES_DEVICE)
    assert "no RootHash= is set, and the kernel command line names none, for %s" % device in reply["reason"], reply
    recs = guest.records(vm, MODULE, "denied", unit=UNIT + "-none.service")
    assert len(recs) == 1, recs
    r = recs[0]
    # The device is named (sysfs says it is device-mapper); its table was not read.
    assert r["MODGATE_DM_DEVICE"] == device and "MODGATE_DM_TARGET" not in r, r
    assert "MODGATE_VERITY_ROOT_HASH" not in r and r["MODGATE_PROBE_USEC"] == "0", r
    assert guest.initstate(vm, MODULE) == "absent"


def test_other_hash_refused(vm):
    """another root hash allowlisted: the module on the verity tree is refused, naming its hash"""
    roothash = tree_hash(vm)
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    reply, error = guest.load_with(vm, UNIT + "-other", ADDRESS, config(OTHER_HASH), MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    assert reply["module"] == MODULE, reply
    assert "verity: " in reply["reason"] and "root hash %s is not allowed" % roothash in reply["reason"], reply
    # Only verity may vouch: the reason names no other kind.
    assert "read-only:" not in reply["reason"] and "manifest:" not in reply["reason"], reply
    recs = guest.records(vm, MODULE, "denied", unit=UNIT + "-other.service")
    assert len(recs) == 1 and "root hash %s is not allowed" % roothash in recs[0]["MODGATE_REASON"], recs
    # The record names what the kernel's table says, refused or not.
    r = recs[0]
    assert r["MODGATE_DM_TARGET"] == "verity" and r["MODGATE_VERITY_ROOT_HASH"] == roothash, r
    assert r["MODGATE_DM_DEVICE"] == guest.dm_kernel_name(vm, guest.MODULES_DEVICE), r
    assert guest.initstate(vm, MODULE) == "absent"


def test_tree_hash_loads(vm):
    """the tree's root hash allowlisted: the module loads on verity evidence, the record names dm-N and the hash"""
    roothash = tree_hash(vm)
    reply, error = guest.load_with(vm, UNIT + "-ok", ADDRESS, config(OTHER_HASH, roothash), MODULE)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    recs = guest.records(vm, MODULE, "loaded", unit=UNIT + "-ok.service")
    assert len(recs) == 1, recs
    r = recs[0]
    device = guest.dm_kernel_name(vm, guest.MODULES_DEVICE)
    assert r["MODGATE_EVIDENCE"] == "verity" and r["MODGATE_VERITY"] == "dm-verity", r
    assert r["MODGATE_DM_TARGET"] == "verity", r
    assert r["MODGATE_VERITY_ROOT_HASH"] == roothash and r["MODGATE_DM_DEVICE"] == device, r
    assert r["MODGATE_FSTYPE"] == "erofs" and r["MODGATE_BACKING"].startswith(device), r
    assert r["MODGATE_PATH"] == "/usr/lib/modules/%s/%s" % (
        guest.kernel_release(vm), guest.dependencies(vm, MODULE)[0]), r
    assert "MODGATE_FSVERITY_DIGEST" not in r, r
    # The check's stages: the prober was asked (a root hash is allowed), and the parts add up to at
    # most the whole (disjoint parts of the check).
    stages = [int(r["MODGATE_%s_USEC" % s]) for s in ("OPEN", "ORIGIN", "PROBE", "HASH", "NAME")]
    assert stages[2] > 0 and sum(stages) <= int(r["MODGATE_CHECK_USEC"]), r
    # dm-verity fixes names with bytes: the file's name was checked, its .modinfo read after the load
    # (before the daemon stopped) is in the record.
    assert r["MODGATE_NAME_CHECK"] == "path" and r["MODGATE_FILE_MODULE"] == MODULE, r
    assert r["MODGATE_SIGNER"] and "MODGATE_AFTER_LOAD" not in r, r
    assert guest.initstate(vm, MODULE) == "live"


def cleanup(vm):
    for suffix in ("-other", "-ok"):
        guest.stop_modgated(vm, UNIT + suffix)
    vm.sh("rmmod %s" % MODULE, check=False)
