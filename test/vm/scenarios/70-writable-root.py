# SPDX-License-Identifier: LGPL-2.1-or-later
"""A boot whose module tree is an ordinary directory on the writable ext4 root, as a kernel package
unpacks it (modgate_vm.modules=writable: no verity volume), with the shipped defaults: no modgate
configuration at all, the system's modgated under its own units. Neither verity nor read-only
evidence can hold there; the manifest the kernel-install plugin wrote vouches for the bytes as
installed. Coldplug and hotplug load through it, and a module file changed afterwards is refused."""

import time

import guest

APPEND = "modgate_vm.modules=writable"
TIMEOUT = 240
HOTPLUG_MODULE = "e1000"        # this boot's own: 15-takeover hotplugs it in the other boot
CHANGED_MODULE = "tcp_scalable"
NIC = "modgate-writable-nic"
MANIFEST = "/var/lib/modgate/manifests/%s.sha256"
SAVED = "/var/tmp/modgate-writable-saved.ko.xz"
HELD_MODULE = "nlmon"           # its file made to hold OTHER_MODULE's bytes
OTHER_MODULE = "ifb"
HELD_SAVED = "/var/tmp/modgate-writable-held.ko.xz"


def tree(vm):
    return "/usr/lib/modules/" + guest.kernel_release(vm)


def manifest_entries(vm):
    """{path: sha256} of the guest's manifest of the running kernel."""
    entries = {}
    for line in vm.sh("cat " + MANIFEST % guest.kernel_release(vm)).out.splitlines():
        if not line.startswith("#"):
            digest, path = line.split("  ", 1)
            entries[path] = digest
    return entries


def test_tree_on_writable_root(vm):
    """/usr/lib/modules/$(uname -r) is a directory of the writable ext4 root, no device-mapper device exists"""
    mount = vm.sh("findmnt -n -o TARGET,FSTYPE,OPTIONS -T %s" % tree(vm)).out.split()
    assert mount[0] == "/" and mount[1] == "ext4" and "rw" in mount[2].split(","), mount
    assert vm.sh("dmsetup ls").out.strip() == "No devices found"
    assert vm.sh("test -e /usr/lib/modgate-vm/modules/$(uname -r)", check=False).rc != 0
    kmsg = vm.sh("journalctl -k -b SYSLOG_IDENTIFIER=modgate-initrd -o cat --no-pager").out
    assert "module tree %s: a directory on the writable root file system" % tree(vm) in kmsg, kmsg
    files = int(vm.sh("find %s -name '*.ko*' -type f | wc -l" % tree(vm)).out)
    assert files == len(manifest_entries(vm)), files


def test_shipped_defaults(vm):
    """no modgate configuration anywhere: modgated -n shows the defaults and the kernel-install manifest"""
    conf = vm.sh("ls -d /etc/modgate /run/modgate/modgate.conf* /usr/local/lib/modgate /usr/lib/modgate "
                 "2>/dev/null || true").out.split()
    assert conf == [], conf
    out = vm.sh("/usr/libexec/modgate/modgated -n").out
    assert "Evidence=verity read-only manifest" in out, out
    assert "module files of kernel %s, written by kernel-install" % guest.kernel_release(vm) in out, out
    assert vm.sh("systemctl show -P FragmentPath modgated.service").out.strip() == \
        "/usr/lib/systemd/system/modgated.service"
    assert vm.sh("systemctl show -P DropInPaths modgated.service").out.strip() == ""


def test_manifest_is_kernel_installs(vm):
    """the image's manifest is what the kernel-install plugin writes for the tree on the root, byte for byte"""
    release = guest.kernel_release(vm)
    manifest = MANIFEST % release
    header = vm.sh("head -n1 " + manifest).out.strip()
    assert header == "# modgate manifest 2 kernel=%s origin=kernel-install" % release, header
    # The installed kernel-install plugin run here on the tree as it is ("kernel-install add" runs
    # it so), in a mount namespace of its own where it writes to a tmpfs instead of over the
    # image's manifest; and sha256sum on its own.
    start = time.monotonic()
    vm.sh("""set -e
        unshare --mount --propagation private sh -ec '
                mount -t tmpfs tmpfs /var/lib/modgate/manifests
                KERNEL_INSTALL_VERBOSE=1 /usr/lib/kernel/install.d/50-modgate.install add %(rel)s
                cp /var/lib/modgate/manifests/%(rel)s.sha256 /tmp/kernel-install.sha256'
        cmp %(manifest)s /tmp/kernel-install.sha256
        cd %(tree)s && sha256sum --quiet --strict -c %(manifest)s
        rm /tmp/kernel-install.sha256
        """ % {"rel": release, "manifest": manifest, "tree": tree(vm)}, timeout=300)
    print("# the tree hashed twice in the guest in %.1f s" % (time.monotonic() - start))


def test_coldplug_on_manifest(vm):
    """coldplug's modules were loaded by the system's modgated from the root, on manifest evidence"""
    recs = vm.journal("MODGATE_OUTCOME=loaded", "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
    assert recs, "modgated loaded nothing in this boot"
    assert [r for r in recs if r.get("MODGATE_SOURCE") == "udev"], "no load for udev in this boot"
    entries = manifest_entries(vm)
    for r in recs:
        rel = r["MODGATE_PATH"][len(tree(vm)) + 1:]
        assert r["MODGATE_EVIDENCE"] == "manifest" and r["MODGATE_FSTYPE"] == "ext4", r
        assert r["MODGATE_PATH"].startswith(tree(vm) + "/") and r["MODGATE_SHA256"] == entries[rel], r
        # Named and signed by what the manifest lists for these bytes, read from them at kernel
        # install: nothing in the guest decompressed the file but the kernel.
        assert r["MODGATE_NAME_CHECK"] == "manifest" and r["MODGATE_FILE_MODULE"] == r["MODGATE_MODULE"], r
        assert r["MODGATE_SIGNER"] and "MODGATE_AFTER_LOAD" not in r and r["PRIORITY"] == "5", r
    denied = vm.journal("MODGATE_OUTCOME=denied", "_BOOT_ID=" + vm.boot_id)
    assert not denied, denied
    # No load here asks the prober (no device-mapper, no loop device), so nothing started it this boot.
    assert all(r["MODGATE_PROBE_USEC"] == "0" for r in recs), [r["MODGATE_PROBE_USEC"] for r in recs]
    started = vm.sh("systemctl show -P ExecMainStartTimestampMonotonic modgate-probe.service").out.strip()
    assert started in ("", "0"), "modgate-probe.service started at %s us" % started
    print("# loaded from the writable root on the manifest: %s" % " ".join(sorted(r["MODGATE_MODULE"] for r in recs)))


def test_hotplug(vm):
    """a hotplugged e1000 gets its driver through modgate-udev, on manifest evidence"""
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0, "e1000 is loaded already"
    vm.qmp("device_add", driver="e1000", id=NIC)
    vm.sh("for i in $(seq 600); do [ \"$(cat /sys/module/%s/initstate 2>/dev/null)\" = live ] && break; "
          "sleep 0.1; done; udevadm settle" % HOTPLUG_MODULE, timeout=120)
    assert guest.initstate(vm, HOTPLUG_MODULE) == "live"
    recs = guest.records(vm, HOTPLUG_MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    path, _ = guest.dependencies(vm, HOTPLUG_MODULE)
    assert r["MODGATE_SOURCE"] == "udev" and r["MODGATE_MODALIAS"].startswith("pci:v00008086d0000100E"), r
    assert r["MODGATE_EVIDENCE"] == "manifest" and r["MODGATE_PATH"] == "%s/%s" % (tree(vm), path), r
    assert r["MODGATE_FSTYPE"] == "ext4" and r["MODGATE_SUPERBLOCK_RO"] == "0", r
    assert r["MODGATE_SHA256"] == manifest_entries(vm)[path], r
    nics = vm.sh("for n in /sys/class/net/*; do readlink $n/device/driver; done | grep -c '/e1000$' || true")
    assert nics.out.strip() == "1", nics.out


def test_changed_module_refused(vm):
    """one module file changed on the root: the system's modgated refuses it with the manifest's reason"""
    path, deps = guest.dependencies(vm, CHANGED_MODULE)
    assert deps == [] and guest.live_modules(vm)[CHANGED_MODULE] == 0, deps
    file = "%s/%s" % (tree(vm), path)
    vm.sh("cp -a %s %s && printf '\\x00' | dd of=%s bs=1 seek=100 conv=notrunc status=none" % (file, SAVED, file))
    reply, error = guest.load(vm, CHANGED_MODULE)
    assert error == guest.UNTRUSTED, (error, reply)
    assert reply["module"] == CHANGED_MODULE, reply
    assert "manifest: the file's SHA-256 is not the manifest's for %s" % path in reply["reason"], reply
    assert "read-only: the ext4 file system is writable" in reply["reason"], reply
    recs = guest.records(vm, CHANGED_MODULE, "denied")
    assert len(recs) == 1, recs
    sha = vm.sh("sha256sum %s" % file).out.split()[0]
    assert recs[0]["MODGATE_SHA256"] == sha != manifest_entries(vm)[path], recs
    assert guest.initstate(vm, CHANGED_MODULE) == "absent"


def test_other_module_bytes_refused(vm):
    """nlmon's file holding ifb's bytes (a Debian 13 guest once said "nlmon loaded" while the kernel loaded ifb): the manifest refuses it, neither module loads"""
    path, deps = guest.dependencies(vm, HELD_MODULE)
    other, _ = guest.dependencies(vm, OTHER_MODULE)
    live = guest.live_modules(vm)
    assert deps == [] and live[HELD_MODULE] == 0 and live[OTHER_MODULE] == 0, (deps, live)
    file = "%s/%s" % (tree(vm), path)
    vm.sh("cp -a %s %s && cp %s/%s %s" % (file, HELD_SAVED, tree(vm), other, file))
    reply, error = guest.load(vm, HELD_MODULE)
    assert error == guest.UNTRUSTED and reply["module"] == HELD_MODULE, (error, reply)
    assert "manifest: the file's SHA-256 is not the manifest's for %s" % path in reply["reason"], reply
    recs = guest.records(vm, HELD_MODULE, "denied")
    assert len(recs) == 1 and "MODGATE_FILE_MODULE" not in recs[0], recs
    assert guest.initstate(vm, HELD_MODULE) == "absent" and guest.initstate(vm, OTHER_MODULE) == "absent"
    print("# %s" % reply["reason"])


def cleanup(vm):
    try:
        vm.qmp("device_del", id=NIC)
    except Exception:  # noqa: BLE001 - not added when its case failed early
        pass
    path, _ = guest.dependencies(vm, CHANGED_MODULE)
    # The file as installed again, and a daemon that has not seen it changed (denials are remembered).
    held, _ = guest.dependencies(vm, HELD_MODULE)
    vm.sh("test -f %(saved)s && mv %(saved)s %(tree)s/%(path)s; test -f %(held_saved)s && mv %(held_saved)s "
          "%(tree)s/%(held)s; systemctl stop modgated.service"
          % {"saved": SAVED, "tree": tree(vm), "path": path, "held_saved": HELD_SAVED, "held": held}, check=False)
