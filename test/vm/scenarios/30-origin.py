# SPDX-License-Identifier: LGPL-2.1-or-later
"""A second modgated whose trusted root is a copy of the module tree on the writable ext4 root
refuses to load from it: the file's superblock is not read-only."""

import guest

MODULE = "dummy"
COPY = "/var/tmp/modgate-copy"
ADDRESS = "/run/modgate-test.sock"
UNIT = "modgate-origin-test.service"


def test_refused(vm):
    """a module from a copy of the tree on ext4 is refused with UntrustedOrigin"""
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
        systemd-run --quiet --unit=%(unit)s /usr/libexec/modgate/modgated \
                --listen=%(addr)s --trusted-root=%(copy)s
        for i in $(seq 100); do test -S %(addr)s && exit 0; sleep 0.2; done
        echo "modgated did not listen on %(addr)s" >&2; exit 1
        """ % {"copy": COPY, "path": path, "unit": UNIT, "addr": ADDRESS})

    reply, error = guest.load(vm, MODULE, address=ADDRESS)
    assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
    assert reply["module"] == MODULE and "superblock" in reply["reason"], reply


def test_denied_record(vm):
    """the journal has a denied record naming the ext4 file system and the reason"""
    recs = guest.records(vm, MODULE, "denied", unit=UNIT)
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_FSTYPE"] == "ext4" and r["MODGATE_SUPERBLOCK_RO"] == "0", r
    assert r["MODGATE_PATH"].startswith(COPY + "/") and "superblock" in r["MODGATE_REASON"], r
    assert r["MESSAGE_ID"] == "3c67f0aec4794a73a35a7cb128a9d622", r


def test_not_loaded(vm):
    """the refused module is not in the kernel"""
    assert guest.live_modules(vm)[MODULE] == 0
    assert guest.initstate(vm, MODULE) == "absent"
    assert guest.records(vm, MODULE, "loaded", unit=None) == []


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


def cleanup(vm):
    vm.sh("systemctl stop %s; rm -rf %s /var/tmp/modgate-path" % (UNIT, COPY), check=False)
