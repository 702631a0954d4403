# SPDX-License-Identifier: LGPL-2.1-or-later
"""Debian's xz-compressed modules go to the kernel as they are, with MODULE_INIT_COMPRESSED_FILE."""

import guest

MODULE = "macvlan"
XZ_MAGIC = "fd377a585a00"


def test_kernel_decompresses_xz(vm):
    """/sys/module/compression reads xz"""
    assert vm.sh("cat /sys/module/compression").out.strip() == "xz"


def test_loaded_from_ko_xz(vm):
    """a module is loaded from its .ko.xz file with finit_module flags 4"""
    reply, error = guest.load(vm, MODULE)
    assert error is None, (error, reply)
    assert guest.initstate(vm, MODULE) == "live"
    recs = guest.records(vm, MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_PATH"].endswith(".ko.xz"), r
    magic = vm.sh("head -c 6 %s | od -An -tx1 | tr -d ' \\n'" % guest.quote(r["MODGATE_PATH"])).out
    assert magic == XZ_MAGIC, magic
    assert r["MODGATE_COMPRESSION"] == "xz" and r["MODGATE_FINIT_FLAGS"] == "4", r


def test_every_load_compressed(vm):
    """every module modgated loaded in this boot went in compressed"""
    recs = vm.journal("MODGATE_OUTCOME=loaded", "_BOOT_ID=" + vm.boot_id)
    assert recs, "no loaded records at all"
    bad = [r for r in recs if r["MODGATE_FINIT_FLAGS"] != "4" or not r["MODGATE_PATH"].endswith(".ko.xz")]
    assert not bad, bad
