# SPDX-License-Identifier: LGPL-2.1-or-later
"""varlinkctl against the socket-activated modgated: a module with dependencies is loaded for real,
from the dm-verity tree, and recorded in the journal."""

import guest

MODULE = "vxlan"        # not loaded at boot; needs udp_tunnel and ip6_udp_tunnel


def test_introspect(vm):
    """varlinkctl introspect lists the Load method"""
    out = vm.sh("varlinkctl introspect %s io.modgate.Manager" % guest.SOCKET).out
    assert "interface io.modgate.Manager" in out and "method Load(" in out, out


def test_load(vm):
    """Load loads the module and every dependency, dependencies first"""
    path, deps = guest.dependencies(vm, MODULE)
    live = guest.live_modules(vm)
    assert not any(live[m] for m in deps + [MODULE]), "already loaded before the test: %s" % live

    reply, error = guest.load(vm, MODULE)
    assert error is None, (error, reply)
    mods = reply["modules"]
    assert [m["name"] for m in mods][-1] == MODULE and {m["name"] for m in mods} == {MODULE, *deps}, mods
    assert all(m["outcome"] == "loaded" for m in mods), mods
    assert mods[-1]["path"] == vm.sh("echo /usr/lib/modules/$(uname -r)/" + path).out.strip(), mods


def test_live(vm):
    """the module and its dependencies are live in /proc/modules and /sys/module"""
    _, deps = guest.dependencies(vm, MODULE)
    live = guest.live_modules(vm)
    for m in deps + [MODULE]:
        assert live[m] == 1, "%s appears %d times in /proc/modules" % (m, live[m])
        assert guest.initstate(vm, m) == "live", (m, guest.initstate(vm, m))


def test_journal_record(vm):
    """the journal records the load: erofs on the dm-verity device, path, inode, flags"""
    recs = guest.records(vm, MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_FSTYPE"] == "erofs" and r["MODGATE_SUPERBLOCK_RO"] == "1", r
    assert r["MODGATE_DEVICE"] == guest.device_of(vm, guest.MODULES_DEVICE), r
    dm = vm.sh("dmsetup info -c --noheadings -o major,minor --separator : modgate-modules").out.strip()
    assert r["MODGATE_DEVICE"] == dm, (r["MODGATE_DEVICE"], dm)
    assert r["MODGATE_INODE"] == vm.sh("stat -c %i " + guest.quote(r["MODGATE_PATH"])).out.strip(), r
    assert r["MODGATE_REQUEST_NAME"] == MODULE and r["MODGATE_PEER_UID"] == "0", r
    assert r["MESSAGE_ID"] == "9f556e7045894398898a0967ca80c0b2", r


def test_load_again(vm):
    """a second Load answers already_loaded and loads nothing"""
    _, deps = guest.dependencies(vm, MODULE)
    reply, error = guest.load(vm, MODULE)
    assert error is None, (error, reply)
    assert all(m["outcome"] == "already_loaded" for m in reply["modules"]), reply
    for m in deps + [MODULE]:
        assert len(guest.records(vm, m, "loaded")) == 1, "%s was recorded as loaded again" % m
    assert len(guest.records(vm, MODULE, "already_loaded")) == 1
    assert guest.live_modules(vm)[MODULE] == 1
