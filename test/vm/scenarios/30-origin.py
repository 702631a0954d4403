# SPDX-License-Identifier: LGPL-2.1-or-later
"""A copy of the module tree on the guest's ordinary writable ext4 root, served by a second modgated:
read-only evidence never holds there (the ext4 superblock is writable); with the shipped default
evidence the manifest vouches for the bytes as installed, and a file changed afterwards is refused."""

import guest

MODULE = "dummy"
VERITY_MODULE = "ifb"   # loaded by the system's modgated from its own tree
COPY = "/var/tmp/modgate-copy"
ADDRESS = "/run/modgate-test.sock"
UNIT = "modgate-origin-test"


def start(vm, name, *args):
    """A second modgated on the copy, as a transient unit NAME."""
    vm.sh("""set -e
        rm -f %(addr)s
        systemd-run --quiet --unit=%(unit)s /usr/libexec/modgate/modgated \
                --listen=%(addr)s --trusted-root=%(copy)s %(args)s
        for i in $(seq 100); do test -S %(addr)s && exit 0; sleep 0.2; done
        echo "modgated did not listen on %(addr)s" >&2; exit 1
        """ % {"copy": COPY, "unit": name, "addr": ADDRESS, "args": " ".join(args)})


def stop(vm, name):
    vm.sh("systemctl stop %s" % name, check=False)


def test_read_only_refused(vm):
    """read-only evidence alone: the copy on ext4 is refused, its superblock is writable"""
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    # The indexes and the module's own file: copying all of the tree's 100 MB through dm-verity
    # takes most of a minute under TCG and proves nothing more.
    path, deps = guest.dependencies(vm, MODULE)
    assert deps == [], deps
    vm.sh("""set -e
        tree=/usr/lib/modules/$(uname -r)
        mkdir -p %(copy)s/$(dirname %(path)s)
        cp -a $tree/modules.* %(copy)s/
        cp -a $tree/%(path)s %(copy)s/%(path)s
        findmnt -n -o FSTYPE -T %(copy)s | grep -qx ext4
        """ % {"copy": COPY, "path": path})
    start(vm, UNIT + "-ro", "--evidence=read-only")
    try:
        reply, error = guest.load(vm, MODULE, address=ADDRESS)
    finally:
        stop(vm, UNIT + "-ro")
    assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
    assert reply["module"] == MODULE and reply["reason"] == \
        "read-only: the ext4 file system is writable (superblock not read-only)", reply
    recs = guest.records(vm, MODULE, "denied", unit=UNIT + "-ro.service")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_FSTYPE"] == "ext4" and r["MODGATE_SUPERBLOCK_RO"] == "0", r
    assert r["MODGATE_PATH"].startswith(COPY + "/") and "superblock" in r["MODGATE_REASON"], r
    assert r["MESSAGE_ID"] == "3c67f0aec4794a73a35a7cb128a9d622", r


def test_changed_file_refused(vm):
    """the shipped defaults: one byte of the copy changed, the manifest refuses it"""
    path, _ = guest.dependencies(vm, MODULE)
    manifest = vm.sh("echo /var/lib/modgate/manifests/$(uname -r).sha256").out.strip()
    assert vm.sh("test -f %s" % manifest, check=False).rc == 0, "the guest has no manifest %s" % manifest
    vm.sh("printf '\\x00' | dd of=%s/%s bs=1 seek=100 conv=notrunc status=none" % (COPY, path))
    start(vm, UNIT + "-changed")
    try:
        reply, error = guest.load(vm, MODULE, address=ADDRESS)
    finally:
        stop(vm, UNIT + "-changed")
    assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
    assert "manifest: the file's SHA-256 is not the manifest's for %s" % path in reply["reason"], reply
    assert "read-only: the ext4 file system is writable" in reply["reason"], reply
    r = guest.records(vm, MODULE, "denied", unit=UNIT + "-changed.service")
    assert len(r) == 1 and len(r[0]["MODGATE_SHA256"]) == 64, r
    assert guest.live_modules(vm)[MODULE] == 0
    assert guest.initstate(vm, MODULE) == "absent"


def test_path_outside_root(vm):
    """the module copied to /var/tmp and asked for by path is refused by the system's modgated"""
    path, _ = guest.dependencies(vm, MODULE)
    outside = "/var/tmp/modgate-path/" + path.rsplit("/", 1)[-1]
    vm.sh("mkdir -p /var/tmp/modgate-path && cp /usr/lib/modules/$(uname -r)/%s %s" % (path, outside))
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"path": outside})
    assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
    assert reply["module"] == MODULE and "not beneath a trusted root" in reply["reason"], reply
    recs = [r for r in guest.records(vm, MODULE, "denied") if r.get("MODGATE_REQUEST_PATH") == outside]
    assert len(recs) == 1 and recs[0]["MODGATE_PATH"] == outside, recs
    assert guest.live_modules(vm)[MODULE] == 0


def test_installed_bytes_load(vm):
    """the shipped defaults on the writable copy: the bytes as installed load, by the manifest"""
    path, _ = guest.dependencies(vm, MODULE)
    vm.sh("cp -a /usr/lib/modules/$(uname -r)/%s %s/%s" % (path, COPY, path))
    start(vm, UNIT + "-ok")
    try:
        reply, error = guest.load(vm, MODULE, address=ADDRESS)
    finally:
        stop(vm, UNIT + "-ok")
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    r = guest.records(vm, MODULE, "loaded", unit=UNIT + "-ok.service")
    assert len(r) == 1 and r[0]["MODGATE_EVIDENCE"] == "manifest" and r[0]["MODGATE_FSTYPE"] == "ext4", r
    sha = vm.sh("sha256sum %s/%s" % (COPY, path)).out.split()[0]
    assert r[0]["MODGATE_SHA256"] == sha and r[0]["MODGATE_FILE_MODULE"] == MODULE, r
    assert guest.initstate(vm, MODULE) == "live"
    # The image's manifest was written as the kernel-install plugin writes it (version 2: the record's
    # name and signer are the manifest's line for these bytes).
    log = vm.sh("journalctl --no-pager -o cat -u %s-ok.service" % UNIT).out
    assert "module files of kernel %s, written by kernel-install, with what each file's .modinfo says." \
        % vm.sh("uname -r").out.strip() in log, log
    assert r[0]["MODGATE_NAME_CHECK"] == "manifest" and r[0]["MODGATE_SIGNER"], r


def test_verity_tree_is_read_only(vm):
    """the system's own tree, erofs on dm-verity on a read-only disk: read-only evidence holds"""
    reply, error = guest.load(vm, VERITY_MODULE)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    recs = guest.records(vm, VERITY_MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_EVIDENCE"] == "read-only" and r["MODGATE_BACKING"].startswith("dm-"), r
    # The system's manifest (version 2) lists these bytes with their .modinfo, but it did not vouch
    # for them: read-only evidence did, and the name is the file's own .modinfo, read before the
    # load (a line in /var may not name what a read-only tree holds, docs/trust.md).
    assert r["MODGATE_NAME_CHECK"] == "modinfo" and r["MODGATE_FILE_MODULE"] == VERITY_MODULE, r
    # Read-only evidence needs no hash, and every record has one all the same (for the audit).
    sha = vm.sh("sha256sum %s" % r["MODGATE_PATH"]).out.split()[0]
    assert r["MODGATE_SHA256"] == sha, (r, sha)


def cleanup(vm):
    vm.sh("rm -rf %s /var/tmp/modgate-path; rmmod %s %s" % (COPY, MODULE, VERITY_MODULE), check=False)
