#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Evidence of origin below the superblock, on real loop devices and mounts: read-only evidence
follows a loop device to its backing file and a file-backed erofs to its image, and refuses what
anyone could change below a read-only superblock (an image in a tmpfs, LOOP_CHANGE_FD, overlayfs,
FUSE, tmpfs remounted read-only); manifest evidence compares the SHA-256 of the bytes read from the
opened fd with the tree's manifest; a file that names another module than the one asked for is
refused. This host has no device-mapper or fs-verity: the VM tier covers those, and read-only
evidence that holds (a read-only disk)."""

import atexit
import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

LOOP_CHANGE_FD = 0x4C06
MS_RDONLY = 1
MODULE = "eql"          # no dependencies, used by no other case here
OTHER = "ifb"           # its bytes under MODULE's name, for the name check
MISSING = "pktgen"      # left out of the manifest
LISTED = "dummy"        # named by a version 2 manifest's info line; no dependencies
ALIASED = "nlmon"       # asked for by its alias, named by that info line too; no dependencies
ALIAS = "rtnl-link-nlmon"

VERITY = "verity: "


def stage_tree(tree, dst):
    """The module tree as it is: the index and the files, in dst."""
    h.copy_tree(tree, dst)
    return dst


def erofs_image(stage, path):
    h.run("mkfs.erofs", "--quiet", "-T0", "--all-root", path, stage)
    return path


def mount(*args):
    h.run("mount", *args)


def losetup(image, read_only=True):
    """A loop device for image, detached when the test exits (a mounted one as its mount goes: the
    kernel turns LOOP_CLR_FD on a busy device into autoclear). Left attached, each would keep its
    image, and the tmpfs around it, in memory after the namespace is gone."""
    args = ["losetup", "--find", "--show"] + (["--read-only"] if read_only else []) + [image]
    dev = subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()
    atexit.register(subprocess.run, ["losetup", "--detach", dev], check=False)
    return dev


def mount_file_backed(image, target):
    """erofs straight from a file (Linux 6.12, CONFIG_EROFS_FS_BACKED_BY_FILE): mount(2) itself, as
    mount(8) would set up a loop device for a regular file."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(image.encode(), target.encode(), b"erofs", MS_RDONLY, None) != 0:
        raise OSError(ctypes.get_errno(), "mount -t erofs %s %s" % (image, target))


def drop_caches():
    """Makes the next read of any file come from its backing store, as after memory pressure."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    deps = h.parse_modules_dep(tree)
    rel = deps[MODULE][0]
    work = tempfile.mkdtemp(prefix="modgate-origin-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    daemons = []

    # The tree once, and a second image of the same size where MODULE's file has one byte changed.
    stage = stage_tree(tree, os.path.join(work, "stage"))
    manifest = h.write_manifest(stage, os.path.join(work, "tree.sha256"), kernel=kver)
    image = erofs_image(stage, os.path.join(work, "tree.erofs"))
    with open(os.path.join(stage, rel), "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xff]))
    evil = erofs_image(stage, os.path.join(work, "evil.erofs"))
    assert os.path.getsize(evil) == os.path.getsize(image)

    def daemon(name, root, evidence, man=None):
        args = ["--evidence=" + evidence] + (["--manifest=" + man] if man else [])
        d = h.Daemon(work, name, root, args=args)
        daemons.append(d)
        assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        return d

    def denied(d, name, *parts):
        p = h.error_of(d.load(name), "UntrustedOrigin")
        for part in parts:
            assert part in p["reason"], (part, p)
        return p

    def finits(d):
        return [r for r in d.shim_records() if r["call"] == "finit_module"]

    # --- a loop device whose image is in a tmpfs -------------------------------------------------

    loop_mnt = os.path.join(work, "loop")
    os.makedirs(loop_mnt)
    loop = losetup(image)
    mount("-t", "erofs", "-o", "ro", loop, loop_mnt)
    loop_name = os.path.basename(loop)

    def case_loop_writable_backing():
        d = daemon("loop-ro", loop_mnt, "read-only")
        p = denied(d, MODULE, "read-only: %s's backing file %s: file system type tmpfs is never read-only evidence"
                   % (loop_name, image))
        assert VERITY not in p["reason"] and "manifest" not in p["reason"], p
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert [x["MODGATE_OUTCOME"] for x in r] == ["denied"], r
        assert r[0]["MODGATE_BACKING"] == "%s <- %s on tmpfs" % (loop_name, image), r
        assert r[0]["MODGATE_SUPERBLOCK_RO"] == "1" and r[0]["MODGATE_FSTYPE"] == "erofs", r

    def case_loop_rewritten():
        # The manifest vouches for the bytes as they were: it loads; then the image is rewritten
        # below the read-only erofs, and the bytes read after the page cache is dropped are refused.
        d = daemon("loop-manifest", loop_mnt, "manifest", manifest)
        mods = h.modules_of(d.load(MODULE))
        assert [(m["name"], m["outcome"]) for m in mods] == [(MODULE, "loaded")], mods
        with open(image, "r+b") as f, open(evil, "rb") as g:
            f.write(g.read())
        drop_caches()
        shutil.rmtree("/sys/module/" + MODULE)
        p = denied(d, MODULE, "manifest: the file's SHA-256 is not the manifest's for " + rel)
        assert p["modules"][0]["outcome"] == "denied", p
        assert [r["name"] for r in finits(d)] == [MODULE], "loaded from the new bytes"
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        with open(os.path.join(stage, rel), "rb") as f:
            changed = hashlib.sha256(f.read()).hexdigest()
        assert [x["MODGATE_OUTCOME"] for x in r] == ["loaded", "denied"], r
        assert r[1]["MODGATE_SHA256"] == changed and r[0]["MODGATE_SHA256"] != changed, r

    # --- LOOP_CHANGE_FD on a read-only loop device -----------------------------------------------

    swap_mnt = os.path.join(work, "swap")
    os.makedirs(swap_mnt)
    good = os.path.join(work, "good.erofs")
    shutil.copy(os.path.join(work, "evil.erofs"), os.path.join(work, "evil2.erofs"))
    erofs_image(stage_tree(tree, os.path.join(work, "stage2")), good)
    swap = losetup(good)
    mount("-t", "erofs", "-o", "ro", swap, swap_mnt)

    def case_loop_change_fd():
        d = daemon("swap", swap_mnt, "read-only manifest", manifest)
        assert h.modules_of(d.load(MODULE))[0]["outcome"] == "loaded"
        shutil.rmtree("/sys/module/" + MODULE)
        # Write access to the device node is all LOOP_CHANGE_FD needs; it swaps the backing file of a
        # read-only loop device for another of the same size.
        new = os.path.join(work, "evil2.erofs")
        dev = os.open(swap, os.O_RDWR)
        newfd = os.open(new, os.O_RDONLY)
        try:
            fcntl.ioctl(dev, LOOP_CHANGE_FD, newfd)
        finally:
            os.close(newfd)
            os.close(dev)
        drop_caches()
        with open("/sys/block/%s/loop/backing_file" % os.path.basename(swap)) as f:
            assert f.read().strip() == new
        p = denied(d, MODULE, "read-only: %s's backing file %s: file system type tmpfs" % (os.path.basename(swap), new),
                   "manifest: the file's SHA-256 is not the manifest's for " + rel)
        assert [r["name"] for r in finits(d)] == [MODULE], "loaded from the swapped bytes"

    # --- no loop device at all, or no block device -----------------------------------------------

    file_mnt = os.path.join(work, "file")
    os.makedirs(file_mnt)
    # erofs reads its image through the page cache's read_folio, which tmpfs files lack: the image
    # is on the disk file system below /var/tmp.
    disk_dir = tempfile.mkdtemp(prefix="modgate-origin-", dir="/var/tmp")
    disk_image = os.path.join(disk_dir, "tree.erofs")
    shutil.copy(good, disk_image)
    mount_file_backed(disk_image, file_mnt)

    def case_file_backed_erofs():
        # The kernel names the file it reads by the string given to mount(2) only: never followed.
        assert not any(line.split()[0].startswith("/dev/loop") and line.split()[1] == file_mnt
                       for line in open("/proc/mounts")), "mounted with a loop device after all"
        d = daemon("file", file_mnt, "read-only")
        p = denied(d, MODULE, "read-only: the file system's backing file %s cannot be checked: the kernel does "
                   "not say which file an erofs mounted from a file reads (the mount's source is only the path "
                   "given at mount time); put the image on a loop device" % disk_image)
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_BACKING"] == " <- %s" % disk_image, r
        print("# %s" % p["reason"], flush=True)
        assert finits(d) == []

    # --- a loop device whose backing file's path names another file --------------------------------

    held_mnt = os.path.join(work, "held")
    os.makedirs(held_mnt)
    held_image = os.path.join(work, "held.erofs")
    shutil.copy(good, held_image)
    held = losetup(held_image)
    mount("-t", "erofs", "-o", "ro", held, held_mnt)
    held_name = os.path.basename(held)
    held_st = os.stat(held_image)

    def case_loop_path_names_another_file():
        # Another file over the path, in the daemon's mount namespace: the kernel still names the file it
        # reads by that path, and the daemon opening the path would check the other file.
        decoy = os.path.join(disk_dir, "decoy.erofs")
        shutil.copy(good, decoy)
        mount("--bind", decoy, held_image)
        try:
            with open("/sys/block/%s/loop/backing_file" % held_name) as f:
                assert f.read().strip() == held_image
            decoy_st = os.stat(held_image)
            assert (decoy_st.st_dev, decoy_st.st_ino) != (held_st.st_dev, held_st.st_ino)
            d = daemon("held", held_mnt, "read-only")
            p = denied(d, MODULE, "read-only: %s's backing file %s cannot be checked: that path now names another "
                       "file (device %d:%d, inode %d) than the one the loop device reads (device %d:%d, inode %d)"
                       % (held_name, held_image, os.major(decoy_st.st_dev), os.minor(decoy_st.st_dev), decoy_st.st_ino,
                          os.major(held_st.st_dev), os.minor(held_st.st_dev), held_st.st_ino))
            r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
            assert [x["MODGATE_OUTCOME"] for x in r] == ["denied"] and r[0]["MODGATE_BACKING"] == "%s <- %s" % (
                held_name, held_image), r
            assert finits(d) == []
            print("# %s" % p["reason"], flush=True)
            d.stop()
        finally:
            h.run("umount", held_image)

        # Renamed away, and another file put at the old path: the kernel's path follows the file it reads,
        # and that file is what is checked.
        renamed = os.path.join(work, "held-renamed.erofs")
        os.rename(held_image, renamed)
        shutil.copy(decoy, held_image)
        with open("/sys/block/%s/loop/backing_file" % held_name) as f:
            assert f.read().strip() == renamed
        d = daemon("held-renamed", held_mnt, "read-only")
        denied(d, MODULE, "read-only: %s's backing file %s: file system type tmpfs is never read-only evidence"
               % (held_name, renamed))
        assert finits(d) == []

    ovl = os.path.join(work, "ovl")
    os.makedirs(ovl)
    # No upper directory: read-only through and through, and still never evidence.
    mount("-t", "overlay", "overlay", "-o", "ro,lowerdir=%s:%s" % (swap_mnt, os.path.join(work, "stage2")), ovl)

    ro_tmpfs = os.path.join(work, "rotmpfs")
    os.makedirs(ro_tmpfs)
    mount("-t", "tmpfs", "-o", "mode=755", "tmpfs", ro_tmpfs)
    h.copy_tree(tree, os.path.join(ro_tmpfs, "tree"))
    mount("-o", "remount,ro", ro_tmpfs)

    fuse = os.path.join(work, "fuse")
    os.makedirs(fuse)
    squash = os.path.join(work, "tree.squashfs")
    h.run("mksquashfs", stage, squash, "-quiet", "-no-progress", "-all-root", stdout=subprocess.DEVNULL)
    h.run("squashfuse", "-o", "allow_other", squash, fuse)

    def case_never_evidence():
        # Read-only superblocks all, and never evidence: the layers of an overlay are not followed,
        # FUSE and tmpfs bytes are whatever their owner says.
        for name, root, fstype in (("ovl", ovl, "overlay"), ("rotmpfs", os.path.join(ro_tmpfs, "tree"), "tmpfs"),
                                   ("fuse", fuse, "fuse")):
            d = daemon(name, root, "read-only")
            p = denied(d, MODULE, "read-only: file system type %s is never read-only evidence" % fstype)
            r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
            assert r and r[0]["MODGATE_FSTYPE"] == fstype, (name, r)
            assert finits(d) == [], name

    # --- the manifest ----------------------------------------------------------------------------

    rw = os.path.join(work, "rw")
    os.makedirs(rw)
    mount("-t", "tmpfs", "-o", "mode=755", "tmpfs", rw)
    rw_tree = stage_tree(tree, os.path.join(rw, "tree"))
    rw_manifest = os.path.join(work, "rw.sha256")
    with open(manifest) as f:
        lines = [x for x in f if not x.endswith("  %s\n" % deps[MISSING][0])]
    with open(rw_manifest, "w") as f:
        f.writelines(lines)
    os.chmod(rw_manifest, 0o644)

    # Manifests on such trees, for the module tree on tmpfs below (a local file system).
    man_lower = os.path.join(work, "manlower")
    os.makedirs(man_lower)
    shutil.copy(manifest, os.path.join(man_lower, "tree.sha256"))
    os.chmod(os.path.join(man_lower, "tree.sha256"), 0o644)
    man_ovl = os.path.join(work, "manovl")
    os.makedirs(man_ovl)
    mount("-t", "overlay", "overlay", "-o", "ro,lowerdir=%s:%s" % (man_lower, os.path.join(work, "stage2")), man_ovl)
    man_fuse = os.path.join(work, "manfuse")
    os.makedirs(man_fuse)
    man_squash = os.path.join(work, "manifest.squashfs")
    h.run("mksquashfs", man_lower, man_squash, "-quiet", "-no-progress", "-all-root", stdout=subprocess.DEVNULL)
    h.run("squashfuse", "-o", "allow_other", man_squash, man_fuse)

    def case_manifest_not_local():
        # The manifest lists OTHER's bytes as they are on both trees, and still does not vouch: a
        # FUSE server may hand the kernel other bytes than it handed the hash, and an overlay's
        # layers are not followed.
        for name, root, fstype in (("ovl-manifest", ovl, "overlay"), ("fuse-manifest", fuse, "fuse")):
            d = daemon(name, root, "manifest", manifest)
            p = denied(d, OTHER, "manifest: file system type %s is not a local disk file system: the bytes hashed "
                       "need not be the bytes the kernel reads" % fstype)
            assert "SHA-256" not in p["reason"], p
            r = journal.records(MODGATE_MODULE=OTHER, _PID=str(d.pid))
            assert [x["MODGATE_OUTCOME"] for x in r] == ["denied"], r
            assert "is not a local disk file system" in r[0]["MODGATE_REASON"] and r[0]["MODGATE_FSTYPE"] == fstype, r
            assert finits(d) == [], name
        # The manifest itself on such a tree is no manifest, for a tree on a local file system.
        for name, path, fstype in (("manifest-ovl", os.path.join(man_ovl, "tree.sha256"), "overlay"),
                                   ("manifest-fuse", os.path.join(man_fuse, "tree.sha256"), "fuse")):
            d = daemon(name, rw_tree, "manifest", path)
            why = "%s: refusing a manifest on a %s file system: manifest evidence needs a local disk file system" \
                % (path, fstype)
            assert "Manifest %s of %s cannot be used: %s" % (path, rw_tree, why.split(": ", 1)[1]) \
                in d.stderr_text(), d.stderr_text()
            p = denied(d, OTHER, "manifest: no manifest to check against: " + why)
            r = journal.records(MODGATE_MODULE=OTHER, _PID=str(d.pid))
            assert r and why in r[-1]["MODGATE_REASON"], r
            assert finits(d) == [], name
        # The same manifest on the tmpfs it was written to vouches for the same tree.
        d = daemon("manifest-local", rw_tree, "manifest", manifest)
        assert h.modules_of(d.load(OTHER))[0]["outcome"] == "loaded"
        assert [r["name"] for r in finits(d)] == [OTHER]
        shutil.rmtree("/sys/module/" + OTHER, ignore_errors=True)

    def case_manifest():
        d = daemon("rw", rw_tree, "read-only manifest", rw_manifest)
        assert "Manifest %s: %d module files of kernel %s, written by admin." % (rw_manifest, len(lines) - 1, kver) \
            in d.stderr_text(), d.stderr_text()
        # The file as installed loads, with the manifest as its evidence.
        mods = h.modules_of(d.load(OTHER))
        assert [(m["name"], m["outcome"]) for m in mods] == [(OTHER, "loaded")], mods
        r = journal.records(MODGATE_MODULE=OTHER, _PID=str(d.pid))
        assert r[0]["MODGATE_EVIDENCE"] == "manifest", r
        # Named by its path, which the manifest binds to these bytes; its .modinfo read after the load
        # is in the record all the same.
        assert r[0]["MODGATE_NAME_CHECK"] == "path" and r[0]["MODGATE_FILE_MODULE"] == OTHER, r
        assert r[0]["MODGATE_SIGNATURE_TYPE"] == "PKCS#7" and r[0]["MODGATE_SIGNER"], r
        assert r[0]["PRIORITY"] == "5" and "MODGATE_AFTER_LOAD" not in r[0], r
        c = h.ok(d.call("io.modgate.Manager.Status"))["counters"]
        assert (c["namesFromPath"], c["namesFromModinfo"]) == (1, 0), c
        # One byte changed: refused, with the path the manifest knows.
        path = os.path.join(rw_tree, rel)
        with open(path, "r+b") as f:
            f.seek(200)
            b = f.read(1)
            f.seek(200)
            f.write(bytes([b[0] ^ 1]))
        denied(d, MODULE, "read-only: file system type tmpfs is never read-only evidence",
               "manifest: the file's SHA-256 is not the manifest's for " + rel)
        # Not in the manifest at all.
        denied(d, MISSING, "manifest: the manifest has no entry for " + deps[MISSING][0])
        assert [r["name"] for r in finits(d)] == [OTHER], finits(d)

    def case_manifest_refused():
        # A manifest that others may write, or that root does not own, is no manifest.
        shutil.rmtree("/sys/module/" + OTHER, ignore_errors=True)
        for name, mode, uid in (("mw", 0o666, 0), ("mu", 0o644, 1000)):
            bad = os.path.join(work, name + ".sha256")
            shutil.copy(rw_manifest, bad)
            os.chmod(bad, mode)
            os.chown(bad, uid, 0)
            d = daemon(name, rw_tree, "manifest", bad)
            assert "Manifest %s of %s cannot be used: " % (bad, rw_tree) in d.stderr_text(), d.stderr_text()
            p = denied(d, OTHER, "manifest: no manifest to check against: %s: " % bad)
            assert finits(d) == [], name
            print("# %s: %s" % (name, p["reason"]), flush=True)
        d = daemon("none", rw_tree, "manifest", os.path.join(work, "absent.sha256"))
        denied(d, OTHER, "manifest: no manifest to check against: %s: No such file or directory"
               % os.path.join(work, "absent.sha256"))

    # --- the name inside the file ----------------------------------------------------------------

    named = os.path.join(work, "named")
    os.makedirs(named)
    mount("-t", "tmpfs", "-o", "mode=755", "tmpfs", named)
    named_tree = stage_tree(tree, os.path.join(named, "tree"))
    shutil.copy(os.path.join(tree, deps[OTHER][0]), os.path.join(named_tree, rel))
    named_manifest = h.write_manifest(named_tree, os.path.join(work, "named.sha256"), kernel=kver)
    # MODULE's own bytes with "name=" in its .modinfo turned into another key of the same length.
    nameless = os.path.join(named, "nameless")
    h.copy_tree(tree, nameless)
    elf = subprocess.run(["xz", "-dc", os.path.join(tree, rel)], check=True, capture_output=True).stdout
    key = b"\0name=%s\0" % MODULE.encode()
    assert elf.count(key) == 1, elf.count(key)
    elf = elf.replace(key, b"\0nome=%s\0" % MODULE.encode())
    with open(os.path.join(nameless, rel), "wb") as f:
        f.write(subprocess.run(["xz", "-C", "crc32", "-c"], input=elf, check=True, capture_output=True).stdout)
    # A link at MODULE's path to OTHER's file, in a tree the manifest of the real one vouches for.
    linked_tree = stage_tree(tree, os.path.join(named, "linked"))
    os.unlink(os.path.join(linked_tree, rel))
    os.symlink(os.path.relpath(os.path.join(linked_tree, deps[OTHER][0]), os.path.dirname(os.path.join(linked_tree, rel))),
               os.path.join(linked_tree, rel))
    # MODULE's file cut after its xz stream's header, and a manifest that lists it so.
    cut_tree = stage_tree(tree, os.path.join(named, "cut"))
    with open(os.path.join(cut_tree, rel), "r+b") as f:
        f.truncate(64)
    cut_manifest = h.write_manifest(cut_tree, os.path.join(work, "cut.sha256"), kernel=kver)
    # Version 2 of it, as modgate-manifest writes it: each file's digest with what its .modinfo says,
    # MODULE's cut file (which cannot be read as a module) with its digest alone.
    v2_manifest = os.path.join(work, "cut-v2.sha256")
    res = h.run(os.environ["MODGATE_MANIFEST"], "--tree=" + cut_tree, "--output=" + v2_manifest, kver,
                capture_output=True, text=True)
    assert "Listing %s/%s without its .modinfo" % (cut_tree, rel) in res.stderr, res.stderr

    def with_info(path, name, info):
        """A version 2 manifest: the version 1 manifest at path, with info as MODULE's info line."""
        with open(path) as f:
            lines = f.readlines()
        lines[0] = lines[0].replace("manifest 1 ", "manifest 2 ")
        i = next(i for i, x in enumerate(lines) if x.endswith("  %s\n" % rel))
        lines.insert(i + 1, "#: %s\n" % info)
        out = os.path.join(work, name)
        with open(out, "w") as f:
            f.writelines(lines)
        os.chmod(out, 0o644)
        return out

    forged = with_info(cut_manifest, "forged.sha256", "name=%s signature=PKCS#7 signer=Named\\x20by\\x20the\\x20test "
                       "key=AB:CD hash=sha256 alias=%s-alias" % (MODULE, MODULE))
    renamed = with_info(cut_manifest, "renamed.sha256", "name=%s" % OTHER)

    def case_embedded_name():
        # Ownership evidence says nothing of which bytes a name holds: the file's .modinfo is read
        # before the load, and the file is another module than the index says (the kernel would load
        # OTHER as MODULE's request).
        d = daemon("named", named_tree, "ownership")
        p = denied(d, MODULE, "the file is module %s, not %s" % (OTHER, MODULE))
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_FILE_MODULE"] == OTHER and r[0]["MODGATE_OUTCOME"] == "denied", r
        assert r[0]["MODGATE_NAME_CHECK"] == "modinfo", r
        # By path too.
        h.error_of(d.call("io.modgate.Manager.Load", {"path": os.path.join(named_tree, rel)}), "UntrustedOrigin")
        assert finits(d) == []
        print("# %s" % p["reason"], flush=True)
        # The kernel package's manifest lists MODULE's own bytes at that path: the manifest refuses.
        d = daemon("named-manifest", named_tree, "manifest", manifest)
        p = denied(d, MODULE, "manifest: the file's SHA-256 is not the manifest's for " + rel)
        assert finits(d) == []
        print("# %s" % p["reason"], flush=True)

    def case_manifest_lists_other():
        # A manifest that lists OTHER's bytes at MODULE's path vouches for them there: the name is the
        # file's, the load goes ahead, and the .modinfo read after it finds the other module: an
        # error-priority record naming both.
        d = daemon("named-listed", named_tree, "manifest", named_manifest)
        mods = h.modules_of(d.load(MODULE))
        assert [(m["name"], m["outcome"]) for m in mods] == [(MODULE, "loaded")], mods
        assert [r["name"] for r in finits(d)] == [MODULE], finits(d)
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert [x["MODGATE_OUTCOME"] for x in r] == ["loaded"], r
        assert r[0]["PRIORITY"] == "3" and r[0]["MODGATE_NAME_CHECK"] == "path", r
        assert r[0]["MODGATE_AFTER_LOAD"] == "the file is module %s, not %s" % (OTHER, MODULE), r
        assert r[0]["MODGATE_FILE_MODULE"] == OTHER and r[0]["MODGATE_SIGNER"], r
        e = h.ok(d.call("io.modgate.Manager.Describe", {"name": MODULE}))["module"]
        assert e["afterLoad"] == r[0]["MODGATE_AFTER_LOAD"] and "modinfoPending" not in e, e
        out = h.run(os.environ["MODGATECTL"], "--address=" + d.address, "describe", MODULE, capture_output=True,
                    text=True).stdout
        assert " After load: the file is module %s, not %s\n" % (OTHER, MODULE) in out, out
        shutil.rmtree("/sys/module/" + MODULE, ignore_errors=True)
        print("# %s" % r[0]["MESSAGE"], flush=True)

    def case_link_to_other():
        # Under manifest evidence the name is the file's own, symlinks in the tree followed as the
        # manifest is matched: a link from MODULE's path to OTHER's file is OTHER, refused before the
        # load without reading it.
        d = daemon("linked", linked_tree, "manifest", manifest)
        p = denied(d, MODULE, "the file is %s, not module %s: with manifest evidence the file's name is the "
                   "module's" % (deps[OTHER][0], MODULE))
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "path" and "MODGATE_FILE_MODULE" not in r[0], r
        print("# %s" % p["reason"], flush=True)

    def case_not_read_before_load():
        # MODULE's file with its xz stream cut after the header, which the manifest lists: nothing
        # before the load decompresses it (it would fail to), the kernel gets it, and the .modinfo read
        # after the load says why the record has no name or signer.
        d = daemon("cut", cut_tree, "manifest", cut_manifest)
        mods = h.modules_of(d.load(MODULE))
        assert [(m["name"], m["outcome"]) for m in mods] == [(MODULE, "loaded")], mods
        assert [r["name"] for r in finits(d)] == [MODULE], finits(d)
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["PRIORITY"] == "3" and r[0]["MODGATE_NAME_CHECK"] == "path", r
        assert r[0]["MODGATE_AFTER_LOAD"].startswith("cannot read the module's information after the load: "), r
        assert "MODGATE_FILE_MODULE" not in r[0], r
        c = h.ok(d.call("io.modgate.Manager.Status"))
        assert (c["counters"]["namesFromPath"], c["counters"]["namesFromModinfo"]) == (1, 0), c
        assert c["unrecordedLoads"] == 0, c
        shutil.rmtree("/sys/module/" + MODULE, ignore_errors=True)

    def modinfo_fields(path):
        """What modinfo(8) of kmod says of a file: {key: first value}."""
        out = h.run("modinfo", path, capture_output=True, text=True).stdout
        fields = {}
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key, value.strip())
        return fields

    def case_manifest_info():
        # A version 2 manifest lists, with each file's digest, what its .modinfo says: a file whose
        # bytes hash to that digest is named and signed by it before the load, and nothing reads the
        # file but the hash. Its name, signer and alias are in the record as modinfo(8) reads them.
        d = daemon("v2", cut_tree, "manifest", v2_manifest)
        assert h.modules_of(d.load(LISTED))[0]["outcome"] == "loaded"
        assert h.modules_of(d.load(ALIAS))[0]["outcome"] == "loaded"
        assert [r["name"] for r in finits(d)] == [LISTED, ALIASED], finits(d)
        for name, alias in ((LISTED, None), (ALIASED, ALIAS)):
            r = journal.records(MODGATE_MODULE=name, _PID=str(d.pid))
            assert [x["MODGATE_OUTCOME"] for x in r] == ["loaded"], r
            want = modinfo_fields(os.path.join(cut_tree, deps[name][0]))
            assert r[0]["MODGATE_EVIDENCE"] == "manifest" and r[0]["MODGATE_NAME_CHECK"] == "manifest", r
            assert r[0]["MODGATE_FILE_MODULE"] == name and r[0]["PRIORITY"] == "5", r
            assert (r[0]["MODGATE_SIGNATURE_TYPE"], r[0]["MODGATE_SIGNER"], r[0]["MODGATE_SIGNATURE_KEY"],
                    r[0]["MODGATE_SIGNATURE_HASH"]) == (want["sig_id"], want["signer"], want["sig_key"],
                                                       want["sig_hashalgo"]), (r, want)
            assert "MODGATE_AFTER_LOAD" not in r[0], r
            assert r[0].get("MODGATE_ALIAS") == alias, r
        c = h.ok(d.call("io.modgate.Manager.Status"))
        assert (c["counters"]["namesFromManifest"], c["counters"]["namesFromPath"],
                c["counters"]["namesFromModinfo"]) == (2, 0, 0), c
        assert c["unrecordedLoads"] == 0, c
        # MODULE's cut file has no info line: named by its path, its .modinfo read after the load, as
        # with a version 1 manifest.
        assert h.modules_of(d.load(MODULE))[0]["outcome"] == "loaded"
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "path" and r[0]["PRIORITY"] == "3", r
        c = h.ok(d.call("io.modgate.Manager.Status"))["counters"]
        assert (c["namesFromManifest"], c["namesFromPath"]) == (2, 1), c
        # Under ownership evidence the manifest is not accepted, and vouches for nothing: read from the file.
        for name in (LISTED, ALIASED, MODULE):
            shutil.rmtree("/sys/module/" + name, ignore_errors=True)
        d = daemon("v2-ownership", cut_tree, "ownership", v2_manifest)
        assert h.modules_of(d.load(LISTED))[0]["outcome"] == "loaded"
        r = journal.records(MODGATE_MODULE=LISTED, _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "modinfo", r
        shutil.rmtree("/sys/module/" + LISTED, ignore_errors=True)

    def case_manifest_info_trusted():
        # What the info line says is what the record says, and what the name and signer checks decide
        # on: the file is never decompressed (MODULE's is cut, and could not be). The manifest is
        # trusted for it as for the digest: whoever writes it can have any bytes loaded at any path.
        d = daemon("forged", cut_tree, "manifest", forged)
        assert h.modules_of(d.load(MODULE))[0]["outcome"] == "loaded"
        assert [r["name"] for r in finits(d)] == [MODULE], finits(d)
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "manifest" and r[0]["PRIORITY"] == "5", r
        assert (r[0]["MODGATE_FILE_MODULE"], r[0]["MODGATE_SIGNER"], r[0]["MODGATE_SIGNATURE_KEY"]) == (
            MODULE, "Named by the test", "AB:CD"), r
        assert "MODGATE_AFTER_LOAD" not in r[0], r
        shutil.rmtree("/sys/module/" + MODULE, ignore_errors=True)
        # The line names another module: refused before the load, naming both, without reading the file.
        d = daemon("renamed", cut_tree, "manifest", renamed)
        p = denied(d, MODULE, "the file is module %s, not %s (as the manifest lists its bytes)" % (OTHER, MODULE))
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "manifest" and r[0]["MODGATE_FILE_MODULE"] == OTHER, r
        print("# %s" % p["reason"], flush=True)
        # The line goes with its digest: a file changed since is another file, refused by the manifest;
        # where other evidence takes it (ownership here), the line says nothing of it and the file is
        # read itself (its xz stream, changed, does not decompress).
        changed = os.path.join(cut_tree, deps[LISTED][0])
        saved = open(changed, "rb").read()
        try:
            with open(changed, "r+b") as f:
                f.seek(100)
                f.write(bytes([saved[100] ^ 1]))
            d = daemon("v2-changed", cut_tree, "manifest", v2_manifest)
            denied(d, LISTED, "manifest: the file's SHA-256 is not the manifest's for " + deps[LISTED][0])
            assert finits(d) == []
            d = daemon("v2-changed-ownership", cut_tree, "manifest ownership", v2_manifest)
            h.error_of(d.load(LISTED), "LoadFailed")
            assert finits(d) == []
            r = journal.records(MODGATE_MODULE=LISTED, _PID=str(d.pid))
            assert r[0]["MODGATE_EVIDENCE"] == "ownership" and r[0].get("MODGATE_NAME_CHECK") != "manifest", r
            assert "cannot read the module's information" in r[0]["MODGATE_REASON"], r
        finally:
            with open(changed, "wb") as f:
                f.write(saved)
        # Another module's bytes at a path, with a version 2 manifest that lists the path's own bytes:
        # the manifest does not hold, ownership does, and the file's .modinfo refuses it before the load.
        d = daemon("v2-named-ownership", named_tree, "manifest ownership", v2_manifest)
        denied(d, MODULE, "the file is module %s, not %s" % (OTHER, MODULE))
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_EVIDENCE"] == "ownership" and r[0]["MODGATE_NAME_CHECK"] == "modinfo", r

    def case_no_name():
        # Every origin check passes (ownership), and the file does not say which module it is: the
        # kernel would take the name from the module's struct, unchecked.
        d = daemon("nameless", nameless, "ownership")
        p = denied(d, MODULE, "the file's .modinfo has no name=: which module it is cannot be checked against "
                   + MODULE)
        assert finits(d) == []
        r = journal.records(MODGATE_MODULE=MODULE, _PID=str(d.pid))
        assert r[0]["MODGATE_OUTCOME"] == "denied" and "has no name=" in r[0]["MODGATE_REASON"], r
        h.error_of(d.call("io.modgate.Manager.Load", {"path": os.path.join(nameless, rel)}), "UntrustedOrigin")
        assert finits(d) == []
        print("# %s" % p["reason"], flush=True)

    def case_test_config():
        # -n says, per root, what it accepts and what holds there now.
        res = h.run(os.environ["MODGATED"], "-n", "--trusted-root=" + loop_mnt, "--manifest=" + manifest,
                    capture_output=True, text=True, check=False)
        assert res.returncode == 0, res
        lines = res.stdout.splitlines()
        i = lines.index("Root %s accepts: verity, read-only, manifest" % loop_mnt)
        assert lines[i + 1] == "  dm-verity: %s is not a device-mapper device" % loop_name, lines[i:]
        assert lines[i + 2] == "  verity allows: 0 root hashes, 0 from the kernel command line, 0 fs-verity digests", \
            lines[i:]
        assert lines[i + 3] == ("  read-only: %s's backing file %s: file system type tmpfs is never read-only "
                                "evidence" % (loop_name, image)), lines[i:]
        with open(manifest) as f:
            n = sum(1 for x in f if not x.startswith("#"))
        assert lines[i + 4] == "  manifest: %s: %d module files of kernel %s, written by admin" % (
            manifest, n, kver), lines[i:]
        # The options in either order (--trusted-root= after --manifest= once freed the latter).
        res = h.run(os.environ["MODGATED"], "-n", "--manifest=" + manifest, "--trusted-root=" + loop_mnt,
                    capture_output=True, text=True, check=False)
        assert res.returncode == 0 and "Manifest=%s" % manifest in res.stdout.splitlines(), res
        res = h.run(os.environ["MODGATED"], "-n", "--trusted-root=" + loop_mnt, "--evidence=read-only ownership",
                    "--manifest=/nonexistent.sha256", capture_output=True, text=True, check=False)
        lines = res.stdout.splitlines()
        i = lines.index("Root %s accepts: read-only, ownership" % loop_mnt)
        assert not any("manifest:" in x for x in lines[i:]), lines[i:]
        assert "Evidence=read-only ownership" in lines, lines
        res = h.run(os.environ["MODGATED"], "-n", "--evidence=read-only tpm", capture_output=True, text=True,
                    check=False)
        assert res.returncode != 0 and "--evidence= takes verity, read-only, manifest and ownership" in res.stderr, res

    pin_mnt = os.path.join(work, "pin")
    os.makedirs(pin_mnt)
    pin_image = os.path.join(work, "pin.erofs")
    shutil.copy(good, pin_image)
    mount("-t", "erofs", "-o", "ro,loop", pin_image, pin_mnt)

    def case_pinned():
        # The root is pinned as a directory fd at start, and the index is read through it: a
        # mount over the root's path afterwards changes neither what resolves nor what is opened.
        dev = os.stat(pin_mnt).st_dev
        d = daemon("pin", pin_mnt, "manifest", manifest)
        mount("-t", "tmpfs", "-o", "mode=755", "tmpfs", pin_mnt)
        try:
            assert os.listdir(pin_mnt) == []
            shutil.rmtree("/sys/module/" + MODULE, ignore_errors=True)
            mods = h.modules_of(d.load(MODULE))
            assert [(m["name"], m["outcome"], m["path"]) for m in mods] == [
                (MODULE, "loaded", os.path.join(pin_mnt, rel))], mods
            f = finits(d)
            assert [r["dev"] for r in f] == ["%d:%d" % (os.major(dev), os.minor(dev))], f
        finally:
            h.run("umount", pin_mnt)
            shutil.rmtree("/sys/module/" + MODULE, ignore_errors=True)

    t.case("modgated -n prints per root the evidence it accepts and what it finds there", case_test_config)
    t.case("a mount over the root's path after start: the pinned index and files are used", case_pinned)
    t.case("an erofs on a read-only loop device whose image is in a tmpfs: refused under read-only, naming "
           "the loop device, its backing file and the tmpfs", case_loop_writable_backing)
    t.case("the image rewritten below the mounted erofs: the manifest refuses the new bytes", case_loop_rewritten)
    t.case("LOOP_CHANGE_FD swaps the backing file of a read-only loop device: never loaded from the new bytes",
           case_loop_change_fd)
    t.case("erofs mounted straight from a file: the kernel does not name the file it reads, so it is never "
           "read-only evidence, and the reason says to use a loop device", case_file_backed_erofs)
    t.case("a loop device whose backing path names another file (mounted over) is refused, naming both "
           "identities; renamed, the file the device reads is what is checked", case_loop_path_names_another_file)
    t.case("overlayfs, tmpfs remounted read-only and FUSE are never read-only evidence", case_never_evidence)
    t.case("manifest evidence is refused on FUSE and an overlay, for the module and for the manifest, naming the "
           "type", case_manifest_not_local)
    t.case("manifest: the installed bytes load; one byte changed, or a file not listed, is refused", case_manifest)
    t.case("a manifest writable by others, not owned by root, or missing is no manifest", case_manifest_refused)
    t.case("a file that names another module than the index: refused, naming both", case_embedded_name)
    t.case("a file whose .modinfo has no name=: refused, by name and by path", case_no_name)
    t.case("manifest evidence: a manifest that lists another module's bytes at a path vouches for them; the "
           ".modinfo read after the load finds it, in an error-priority record", case_manifest_lists_other)
    t.case("manifest evidence: a link to another module's file is that module, refused by its name",
           case_link_to_other)
    t.case("manifest evidence: the file is not decompressed before the load; what its .modinfo says is read "
           "after it", case_not_read_before_load)
    t.case("a version 2 manifest names and signs each file before the load without decompressing it, as "
           "modinfo(8) reads it; an entry without its line falls back; ownership evidence does not use it",
           case_manifest_info)
    t.case("a version 2 manifest's line is what the record and the name check use, with its digest only: "
           "another name is refused before the load", case_manifest_info_trusted)
    t.case("every daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()

    # squashfuse outlives the test otherwise, and with it this mount namespace and its tmpfs copies.
    h.run("umount", fuse, check=False)
    h.run("umount", man_fuse, check=False)
    h.run("umount", file_mnt, check=False)
    shutil.rmtree(disk_dir, ignore_errors=True)
    journal.stop()
    if t.failed:
        h.dump_stderr(daemons, 15)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
