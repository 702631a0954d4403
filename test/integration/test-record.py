#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a record says of the file it was about, checked against the file by other means: the
SHA-256 of the bytes (hashlib), the device and inode (os.stat), and the module signature (modinfo
-F, which reads the file itself). Every record of an opened file has the SHA-256, whether the
manifest check computed it or not and whatever the decision; the signature is read once the
origin check passed, and an unsigned module says MODGATE_SIGNATURE=none."""

import fnmatch
import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"
SMALL = "eql"           # a typical module file, 5 KB, no dependencies
# With eight dependencies. Not the largest file (amdgpu): libkmod's decompression for the name check
# takes minutes for it in the sanitizer build (ASan's realloc copies, every time).
DEPS = "wireguard"
UNSIGNED = "ifb"        # its signature stripped in the writable copy
EXPLAINED = "nlmon"     # asked about, never loaded
FAILED_ID = "13e53cc4fa4c4374879d2a1775a89733"
NIC = "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"      # QEMU's e1000
WITH_DEPS = "vxlan"     # needs udp_tunnel and ip6_udp_tunnel
OPTIONS = "dummy"
EKEYREJECTED, ENODEV = 129, 19
SIG_MAGIC = b"~Module signature appended~\n"
SIGNATURE_FIELDS = ("MODGATE_SIGNATURE", "MODGATE_SIGNATURE_TYPE", "MODGATE_SIGNER", "MODGATE_SIGNATURE_KEY",
                    "MODGATE_SIGNATURE_HASH")


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def modinfo(field, path):
    """modinfo -F FIELD, its continuation lines joined as libkmod gives the value."""
    out = h.run("modinfo", "-F", field, path, capture_output=True, text=True).stdout
    return "".join(line.strip() for line in out.splitlines())


def strip_signature(path):
    """The module file at path, its appended signature cut off (struct module_signature: 12 bytes
    before the magic, the signature's length in its last four, big-endian) and compressed again."""
    elf = subprocess.run(["xz", "-dc", path], check=True, capture_output=True).stdout
    assert elf.endswith(SIG_MAGIC), path
    info = elf[-len(SIG_MAGIC) - 12:-len(SIG_MAGIC)]
    sig_len = struct.unpack(">I", info[8:12])[0]
    elf = elf[:-len(SIG_MAGIC) - 12 - sig_len]
    data = subprocess.run(["xz", "-C", "crc32", "-c"], input=elf, check=True, capture_output=True).stdout
    with open(path, "wb") as f:
        f.write(data)


def assert_file(rec, path):
    """The record describes the file at path: its bytes, its device and inode."""
    st = os.stat(path)
    assert rec["MODGATE_PATH"] == path, rec
    assert rec["MODGATE_SHA256"] == sha256_of(path), (path, rec)
    assert rec["MODGATE_DEVICE"] == "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), (path, rec)
    assert rec["MODGATE_INODE"] == str(st.st_ino), (path, rec)


def assert_signed(rec, path):
    """The record's signature is the one modinfo reads from the file."""
    assert modinfo("sig_id", path) == "PKCS#7", path
    assert rec["MODGATE_SIGNATURE_TYPE"] == "PKCS#7", rec
    assert rec["MODGATE_SIGNER"] == modinfo("signer", path), (path, rec)
    assert rec["MODGATE_SIGNATURE_KEY"] == modinfo("sig_key", path), (path, rec)
    assert rec["MODGATE_SIGNATURE_HASH"] == modinfo("sig_hashalgo", path), (path, rec)
    assert "MODGATE_SIGNATURE" not in rec, rec


def options_lines(module):
    """FILE:LINE of each "options MODULE" line of modprobe.d, read here as kmod documents it: *.conf of
    each directory, a name in a higher directory hiding it in a lower one, in the order of the names."""
    files = {}
    for d in ("/etc/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d"):
        if os.path.isdir(d):
            for name in os.listdir(d):
                if name.endswith(".conf") and name not in files:
                    files[name] = os.path.join(d, name)
    out = []
    for name in sorted(files):
        with open(files[name]) as f:
            for n, line in enumerate(f, 1):
                words = line.split()
                if len(words) >= 2 and words[0] == "options" and words[1].replace("-", "_") == module:
                    out.append("%s:%d" % (files[name], n))
    return out


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-record-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    daemons = []

    # The tree on a read-only erofs with its manifest (the manifest check hashes), and a copy in a
    # tmpfs trusted by ownership (nothing else hashes) or refused under read-only.
    erofs = h.mount_trusted_tree(tree, work)
    rw = os.path.join(work, "rw")
    os.makedirs(rw)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", rw)
    copy = os.path.join(rw, "tree")
    h.copy_tree(tree, copy)
    deps = h.parse_modules_dep(tree)
    strip_signature(os.path.join(copy, deps[UNSIGNED][0]))

    def daemon(name, root, *args, env=None):
        d = h.Daemon(work, name, root, extra_env=env, args=args)
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        return d

    def loaded_records(d, root, names):
        """The loaded records of d, one per name, each checked against its file."""
        recs = journal.records(MESSAGE_ID=LOADED_ID, _PID=str(d.pid))
        by_name = {r["MODGATE_MODULE"]: r for r in recs}
        assert sorted(by_name) == sorted(names), (sorted(by_name), sorted(names))
        for name, rec in by_name.items():
            assert_file(rec, os.path.join(root, deps[name][0]))
        return by_name

    def loaded_names(reply):
        mods = h.modules_of(reply)
        assert mods and all(m["outcome"] == "loaded" for m in mods), reply
        return [m["name"] for m in mods]

    def case_manifest_root():
        h.reset_sys_module()
        d = daemon("manifest", erofs)
        names = loaded_names(d.load(SMALL)) + loaded_names(d.load(DEPS))
        assert DEPS in names and len(names) > 5, names
        recs = loaded_records(d, erofs, names)
        for name, rec in recs.items():
            assert rec["MODGATE_EVIDENCE"] == "manifest", rec
            assert_signed(rec, os.path.join(erofs, deps[name][0]))
        print("# %d records; %s: %s, key %s" % (len(recs), DEPS, recs[DEPS]["MODGATE_SIGNER"],
                                                recs[DEPS]["MODGATE_SIGNATURE_KEY"]), flush=True)

    def case_stages():
        # Every init takes 200 ms: a module that needs others waits at least that long, and its own
        # init takes that long. The stages come one after another, so they add up to no more than the
        # call took, and the checks and init to no more than the duration (which adds the checks made
        # while it waited).
        h.reset_sys_module()
        d = daemon("stages", erofs, env={"MODGATE_SHIM_DELAY_MS": "200"})
        begin = time.monotonic()
        names = loaded_names(d.load(DEPS))
        took = int((time.monotonic() - begin) * 1000000)
        recs = loaded_records(d, erofs, names)
        for name, rec in recs.items():
            stage = {f: int(rec["MODGATE_%s_USEC" % f]) for f in ("WAIT", "CHECK", "INIT", "DURATION")}
            assert min(stage.values()) >= 0, (name, stage)
            assert stage["CHECK"] + stage["INIT"] <= stage["DURATION"], (name, stage)
            assert stage["WAIT"] + stage["CHECK"] + stage["INIT"] <= took, (name, stage, took)
            assert stage["INIT"] >= 200000, (name, stage)
            # The check divided: disjoint parts of it, so no more than the whole; every load opens,
            # looks at the origin and hashes the file.
            part = {f: int(rec["MODGATE_%s_USEC" % f]) for f in ("OPEN", "ORIGIN", "PROBE", "HASH", "NAME")}
            assert sum(part.values()) <= stage["CHECK"], (name, part, stage)
            assert part["HASH"] > 0 and part["OPEN"] + part["ORIGIN"] > 0, (name, part)
        top = {f: int(recs[DEPS]["MODGATE_%s_USEC" % f]) for f in ("WAIT", "CHECK", "INIT")}
        assert top["WAIT"] >= 200000, top
        print("# %s: waited %d us, checks %d us, init %d us; the call %d us" %
              (DEPS, top["WAIT"], top["CHECK"], top["INIT"], took), flush=True)

    def case_ownership_root():
        # No manifest check: the SHA-256 is computed for the record alone.
        h.reset_sys_module()
        d = daemon("ownership", copy, "--evidence=ownership")
        names = loaded_names(d.load(SMALL)) + loaded_names(d.load(UNSIGNED))
        recs = loaded_records(d, copy, names)
        assert recs[SMALL]["MODGATE_EVIDENCE"] == "ownership", recs[SMALL]
        assert_signed(recs[SMALL], os.path.join(copy, deps[SMALL][0]))
        unsigned = os.path.join(copy, deps[UNSIGNED][0])
        assert modinfo("sig_id", unsigned) == "" and modinfo("name", unsigned) == UNSIGNED, unsigned
        rec = recs[UNSIGNED]
        assert rec["MODGATE_SIGNATURE"] == "none" and rec["MODGATE_FILE_MODULE"] == UNSIGNED, rec
        assert not any(k in rec for k in SIGNATURE_FIELDS[1:]), rec

    def case_denied():
        # Refused on its origin: the file was opened, so its bytes are named; it was never read as
        # a module, so there is no signature field at all (not "none").
        h.reset_sys_module()
        d = daemon("denied", copy, "--evidence=read-only")
        h.error_of(d.load(SMALL), "UntrustedOrigin")
        recs = journal.records(MESSAGE_ID=DENIED_ID, _PID=str(d.pid))
        assert [(r["MODGATE_MODULE"], r["MODGATE_VERDICT"]) for r in recs] == [(SMALL, "origin")], recs
        assert_file(recs[0], os.path.join(copy, deps[SMALL][0]))
        assert not any(k in recs[0] for k in SIGNATURE_FIELDS + ("MODGATE_FILE_MODULE",)), recs[0]
        assert d.shim_records() == [], d.shim_records()

    def case_explain():
        for name, root, args, trusted in (("explain", erofs, (), True),
                                          ("explain-denied", copy, ("--evidence=read-only",), False)):
            d = daemon(name, root, *args)
            r = h.ok(d.call("io.modgate.Manager.Explain", {"name": EXPLAINED}))
            path = os.path.join(root, deps[EXPLAINED][0])
            o = r["modules"][0]["origin"]
            assert o["trusted"] == trusted and o["sha256"] == sha256_of(path), (name, o)
            if trusted:
                assert o["signer"] == modinfo("signer", path), o
                assert o["signatureKey"] == modinfo("sig_key", path), o
            else:
                assert o.get("signer") is None and o.get("signatureKey") is None, o
            assert d.shim_records() == [], d.shim_records()

    def case_requester():
        # Who asked, as the daemon saw this very process; what the modalias is, as udev's hardware
        # database says (systemd-hwdb); which of the file's alias patterns matched (modinfo -F alias).
        h.reset_sys_module()
        d = daemon("requester", erofs)
        names = loaded_names(d.call("io.modgate.Manager.Load", {"modalias": NIC}))
        assert names == ["e1000"], names
        [rec] = journal.records(MESSAGE_ID=LOADED_ID, _PID=str(d.pid))
        with open("/proc/self/comm") as f:
            comm = f.read().strip()
        with open("/proc/self/cgroup") as f:
            cgroup = [line.strip()[3:] for line in f if line.startswith("0::")][0]
        assert rec["MODGATE_PEER_PID"] == str(os.getpid()) and rec["MODGATE_PEER_UID"] == "0", rec
        assert rec["MODGATE_PEER_COMM"] == comm and rec["MODGATE_PEER_CGROUP"] == cgroup, (rec, comm, cgroup)
        hwdb = dict(line.split("=", 1) for line in h.run("systemd-hwdb", "query", NIC, capture_output=True,
                                                          text=True).stdout.splitlines() if "=" in line)
        assert hwdb["ID_VENDOR_FROM_DATABASE"] == "Intel Corporation", hwdb
        assert rec["MODGATE_DEVICE_VENDOR"] == hwdb["ID_VENDOR_FROM_DATABASE"], rec
        assert rec["MODGATE_DEVICE_MODEL"] == hwdb["ID_MODEL_FROM_DATABASE"], rec
        path = os.path.join(erofs, deps["e1000"][0])
        aliases = h.run("modinfo", "-F", "alias", path, capture_output=True, text=True).stdout.split()
        matching = [a for a in aliases if fnmatch.fnmatchcase(NIC, a)]
        assert matching and rec["MODGATE_ALIAS"] == matching[0], (rec.get("MODGATE_ALIAS"), matching)
        assert rec["MODGATE_MODALIAS"] == NIC and rec["MODGATE_ROLE"] == "requested", rec
        e = h.ok(d.call("io.modgate.Manager.Describe", {"name": "e1000"}))["module"]
        assert (e["alias"], e["deviceVendor"], e["peerCommand"]) == (matching[0], hwdb["ID_VENDOR_FROM_DATABASE"],
                                                                    comm), e

    def case_resolution():
        # Which module needed which, where each option is written, and what a kernel error says.
        # The configuration is in place before the daemon starts: libkmod reads it then.
        h.reset_sys_module()
        h.mount_modprobe_d("# options for the record test\noptions dummy numdummies=2\n")
        with open("/proc/cmdline") as f:
            cmdline = f.read().strip()
        h.mount_file_over("/proc/cmdline", cmdline + " dummy.modgate_test=1\n", work)
        fail = "%s:%d,%s:%d" % (SMALL, EKEYREJECTED, EXPLAINED, ENODEV)
        d = h.Daemon(work, "resolution", erofs, extra_env={"MODGATE_SHIM_FAIL": fail})
        daemons.append(d)
        assert d.activate(), d.stderr_text()
        loaded_names(d.load(WITH_DEPS))
        loaded_names(d.load(OPTIONS))
        recs = {r["MODGATE_MODULE"]: r for r in journal.records(MESSAGE_ID=LOADED_ID, _PID=str(d.pid))}
        assert sorted(deps[WITH_DEPS][1]) == ["ip6_udp_tunnel", "udp_tunnel"], deps[WITH_DEPS]
        for dep in deps[WITH_DEPS][1]:
            assert recs[dep]["MODGATE_REQUIRED_BY"] == WITH_DEPS and recs[dep]["MODGATE_ROLE"] == "dependency", \
                recs[dep]
        assert "MODGATE_REQUIRED_BY" not in recs[WITH_DEPS], recs[WITH_DEPS]
        rec = recs[OPTIONS]
        sources = options_lines(OPTIONS)
        assert sources[0] == "/etc/modprobe.d/modgate-test.conf:2", sources
        assert rec["MODGATE_OPTIONS_SOURCE"] == ", ".join(sources + ["the kernel command line"]), (rec, sources)
        assert "numdummies=2" in rec["MODGATE_PARAMETERS"].split(), rec
        assert rec["MODGATE_PARAMETERS"].split()[-1] == "modgate_test=1", rec
        shim = {r["name"]: r for r in h.finit_records(d.shim_records())}
        assert shim[OPTIONS]["params"] == rec["MODGATE_PARAMETERS"], (shim[OPTIONS], rec)
        h.error_of(d.load(SMALL), "LoadFailed")
        h.error_of(d.load(EXPLAINED), "LoadFailed")
        failed = {r["MODGATE_MODULE"]: r for r in journal.records(MESSAGE_ID=FAILED_ID, _PID=str(d.pid))}
        assert (failed[SMALL]["MODGATE_ERRNO_NAME"], failed[SMALL]["MODGATE_ERRNO_CLASS"]) == \
            ("EKEYREJECTED", "signature"), failed[SMALL]
        assert (failed[EXPLAINED]["MODGATE_ERRNO_NAME"], failed[EXPLAINED]["MODGATE_ERRNO_CLASS"]) == \
            ("ENODEV", "init"), failed[EXPLAINED]
        e = h.ok(d.call("io.modgate.Manager.Describe", {"name": SMALL}))["module"]
        assert e["errnoClass"] == "signature", e

    t.case("manifest evidence: each loaded record's SHA-256, device, inode and signature are the file's, "
           "a module's dependencies too", case_manifest_root)
    t.case("ownership evidence, no manifest: the SHA-256 is still there; an unsigned module says "
           "MODGATE_SIGNATURE=none", case_ownership_root)
    t.case("a loaded module's record has its stages (the wait for what it needs, its checks, its init), each "
           "at least 0 and adding up to no more than the whole", case_stages)
    t.case("a file refused on its origin (a writable tmpfs): its SHA-256, device and inode, no signature field",
           case_denied)
    t.case("Explain's origin has the SHA-256 of every opened file, and the signer and key once trusted",
           case_explain)
    t.case("who asked (pid, uid, command, cgroup), the device as udev's hardware database names it, and the "
           "alias pattern the modalias matched", case_requester)
    t.case("which module needed a dependency, where each option is written (modprobe.d file and line, the kernel "
           "command line), and the class of a kernel error", case_resolution)
    t.case("every daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()

    journal.stop()
    if t.failed:
        h.dump_stderr(daemons, 15)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
