#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Per-root evidence, end to end on this host: the device-mapper prober's answers for what is not
device-mapper, verity evidence refused with both its reasons, a [Root] with its own evidence and
manifest that is mounted only after the daemon started, and the IMA attribute recorded and required.
This host has no device-mapper and no fs-verity: the VM tier shows verity holding (scenario 35)."""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

CONF = "/etc/modgate/modgate.conf"
LATE = "fjes"           # alone in its directory, the [Root] mounted late; no dependencies
PLAIN = "eql"           # beneath the first root; no dependencies
SIGNED = "ifb"          # carries a security.ima signature
UNSIGNED = "dummy"      # its module signature cut off for the signer rules' case; no dependencies
SIGNED_MOD = "nlmon"    # as Debian signed it; no dependencies
SIG_MAGIC = b"~Module signature appended~\n"
PROBE = "io.modgate.Probe.DescribeDevice"
LOOP = "io.modgate.Probe.DescribeLoop"
# security.ima: an IMA signature, version 2, SHA-256, key id 0x1234abcd, a 4-byte "signature".
IMA_SIGNATURE = bytes([0x03, 2, 4, 0x12, 0x34, 0xab, 0xcd, 0, 4, 1, 2, 3, 4])
IMA_DIGEST = bytes([0x04, 4]) + bytes(32)


def write_conf(text):
    os.makedirs(os.path.dirname(CONF), exist_ok=True)
    if text is None:
        if os.path.exists(CONF):
            os.unlink(CONF)
        return
    with open(CONF, "w") as f:
        f.write(text)
    os.chmod(CONF, 0o644)


def varlink(address, method, parameters, uid=None):
    """One call; as another uid when given (in a child, so that this process stays root)."""
    if uid is not None:
        code = ("import json,socket,os,sys\nos.setgid(%d); os.setuid(%d)\ns=socket.socket(socket.AF_UNIX)\n"
                "s.connect(%r)\ns.sendall(json.dumps({'method':%r,'parameters':%r}).encode()+b'\\0')\n"
                "print(s.recv(65536).decode().rstrip('\\0'))\n" % (uid, uid, address, method, parameters))
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        return json.loads(res.stdout) if res.stdout.strip() else {"closed": True, "stderr": res.stderr}
    c = h.Varlink(address)
    try:
        return c.call(method, parameters)
    finally:
        c.close()


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    deps = h.parse_modules_dep(tree)
    work = tempfile.mkdtemp(prefix="modgate-evidence-")
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", work)
    h.mount_sys_module()
    journal = h.Journal()
    t = h.Tap()
    daemons = []

    probe_addr = "/run/modgate/evidence-probe.sock"
    os.makedirs("/run/modgate", exist_ok=True)
    probe_log = open(os.path.join(work, "probe.stderr"), "w")
    probe = subprocess.Popen([os.environ["MODGATE_PROBE"], "--listen=" + probe_addr], stdout=probe_log,
                             stderr=probe_log)
    atexit.register(probe.kill)
    for _ in range(500):
        if os.path.exists(probe_addr) or probe.poll() is not None:
            break
        time.sleep(0.01)
    if not os.path.exists(probe_addr):
        probe_log.flush()
        with open(os.path.join(work, "probe.stderr")) as f:
            print("# modgate-probe did not listen: %s" % f.read().strip(), flush=True)

    # The first root: the tree, copied into a tmpfs, with the directory of LATE's file moved out.
    first = os.path.join(work, "tree")
    h.copy_tree(tree, first)
    late_rel = deps[LATE][0]
    late_dir = os.path.join(first, os.path.dirname(late_rel))
    late_src = os.path.join(work, "late-src")
    shutil.move(late_dir, late_src)
    late_image = os.path.join(work, "late.erofs")
    h.run("mkfs.erofs", "--quiet", "-T0", "--all-root", late_image, late_src)
    late_manifest = h.write_manifest(late_src, os.path.join(work, "late.sha256"), kernel=kver)

    def start(name, conf, args=(), env=None, store=None):
        write_conf(conf)
        try:
            d = h.Daemon(work, name, None, args=("--prober=" + probe_addr, *args), extra_env=env, store=store)
            daemons.append(d)
            assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        finally:
            write_conf(None)
        return d

    # --- the prober ------------------------------------------------------------------------------

    loop_file = os.path.join(work, "loop.img")
    with open(loop_file, "wb") as f:
        f.truncate(1 << 20)
    loop = subprocess.run(["losetup", "--find", "--show", "--read-only", loop_file], check=True,
                          capture_output=True, text=True).stdout.strip()
    atexit.register(subprocess.run, ["losetup", "--detach", loop], check=False)
    st = os.stat(loop)

    def case_prober():
        r = varlink(probe_addr, PROBE, {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)})
        assert r.get("error") == "io.modgate.Probe.NotDeviceMapper", r
        r = varlink(probe_addr, PROBE, {"major": 259, "minor": 1048575})
        assert r.get("error") == "io.modgate.Probe.NoSuchDevice", ("missing", r)
        r = varlink(probe_addr, PROBE, {"minor": 0})
        assert r.get("error") == "org.varlink.service.InvalidParameter", r
        r = varlink(probe_addr, PROBE, {"major": "seven", "minor": 0})
        assert r.get("error") == "org.varlink.service.InvalidParameter", r
        # Root only: another uid gets no answer (the socket is 0600 too; here it is opened up so that
        # the server's own check is what refuses).
        os.chmod(probe_addr, 0o666)
        r = varlink(probe_addr, PROBE, {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)}, uid=65534)
        assert r.get("error") != "io.modgate.Probe.NotDeviceMapper", ("uid 65534 was answered", r)
        assert r.get("closed") or r.get("error") == "org.varlink.service.PermissionDenied", r
        os.chmod(probe_addr, 0o600)
        assert probe.poll() is None, "the prober exited"

        # Which file a loop device reads, by the device and inode the kernel holds, whatever its path
        # names now: here another file is mounted over it.
        held = os.stat(loop_file)
        other = os.path.join(work, "other.img")
        open(other, "wb").close()
        h.run("mount", "--bind", other, loop_file)
        try:
            r = varlink(probe_addr, LOOP, {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)})
        finally:
            h.run("umount", loop_file)
        want = {"backingMajor": os.major(held.st_dev), "backingMinor": os.minor(held.st_dev),
                "backingInode": held.st_ino}
        assert {k: r.get("parameters", {}).get(k) for k in want} == want, (want, r)
        with open("/sys/dev/block/%d:%d/diskseq" % (os.major(st.st_rdev), os.minor(st.st_rdev))) as f:
            seq = int(f.read())
        assert r["parameters"]["diskseq"] == seq, r
        r = varlink(probe_addr, LOOP, {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev), "diskseq": seq + 1})
        assert r.get("error") == "io.modgate.Probe.DeviceChanged", r
        r = varlink(probe_addr, LOOP, {"major": 259, "minor": 1048575})
        assert r.get("error") == "io.modgate.Probe.NoSuchDevice", r
        r = varlink(probe_addr, LOOP, {"major": 1, "minor": 3})
        assert r.get("error") in ("io.modgate.Probe.NoSuchDevice", "io.modgate.Probe.NotLoop"), r
        print("# uid 65534: %s" % ("connection closed" if r.get("closed") else r["error"]), flush=True)

    # --- verity evidence refused, with both its reasons --------------------------------------------

    erofs_mnt = h.mount_erofs_tree(tree, work, "erofs")
    erofs_loop = os.path.basename(h.run("findmnt", "-n", "-o", "SOURCE", erofs_mnt, capture_output=True,
                                        text=True).stdout.strip())

    def case_verity_refused():
        d = start("verity", "[Trust]\nTrustedRoot=%s\nEvidence=verity\nRootHash=%s\n" % (erofs_mnt, "ab" * 32))
        p = h.error_of(d.load(PLAIN), "UntrustedOrigin")
        assert p["reason"] == ("verity: %s is not a device-mapper device, and the file has no fs-verity (erofs has "
                               "none)" % erofs_loop), p
        r = journal.records(MODGATE_MODULE=PLAIN, _PID=str(d.pid))
        assert [x["MODGATE_OUTCOME"] for x in r] == ["denied"], r
        assert "MODGATE_DM_DEVICE" not in r[0] and "MODGATE_VERITY" not in r[0], r
        assert "MODGATE_DISKSEQ" in r[0] and int(r[0]["MODGATE_DISKSEQ"]) > 0, r
        assert d.shim_records() == []
        d.stop()    # its pin would keep the mount busy

    # --- a [Root] of its own, mounted after the daemon started -------------------------------------

    late_conf = ("[Trust]\nTrustedRoot=%s\nEvidence=ownership\n\n[Root]\nPath=%s\nEvidence=manifest\nManifest=%s\n"
                 % (first, late_dir, late_manifest))

    def case_late_root():
        d = start("late", late_conf)
        assert "Trusted root %s is not there yet" % late_dir in d.stderr_text(), d.stderr_text()
        p = h.error_of(d.load(LATE), "LoadFailed")
        mods = {m["name"]: m for m in p["modules"]}
        assert mods[LATE]["reason"] == ("trusted root %s cannot be pinned: No such file or directory" % late_dir), p
        # Now it comes: an erofs image, on a loop device, at the path the index names.
        os.makedirs(late_dir)
        h.run("mount", "-t", "erofs", "-o", "ro,loop", late_image, late_dir)
        mods = h.modules_of(d.load(LATE))
        assert [(m["name"], m["outcome"]) for m in mods] == [(LATE, "loaded")], mods
        r = journal.records(MODGATE_MODULE=LATE, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert len(r) == 1 and r[0]["MODGATE_EVIDENCE"] == "manifest" and r[0]["MODGATE_FSTYPE"] == "erofs", r
        assert r[0]["MODGATE_PATH"] == os.path.join(first, late_rel), r
        # The first root keeps its own evidence: ownership, on the tmpfs.
        mods = h.modules_of(d.load(PLAIN))
        assert [(m["name"], m["outcome"]) for m in mods] == [(PLAIN, "loaded")], mods
        r = journal.records(MODGATE_MODULE=PLAIN, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert r[-1]["MODGATE_EVIDENCE"] == "ownership" and r[-1]["MODGATE_FSTYPE"] == "tmpfs", r
        # The pin holds the mount: it goes with the daemon.
        res = h.run("umount", late_dir, check=False, capture_output=True, text=True)
        assert res.returncode != 0 and "busy" in res.stderr, res
        d.stop()
        h.run("umount", late_dir)
        os.rmdir(late_dir)
        h.reset_sys_module()

    def case_late_root_refuses():
        # The same root with one byte of the image's file changed: its own manifest refuses it,
        # though the first root would have taken any root-owned file.
        bad_src = os.path.join(work, "late-bad")
        shutil.copytree(late_src, bad_src)
        with open(os.path.join(bad_src, os.path.basename(late_rel)), "r+b") as f:
            f.seek(200)
            b = f.read(1)
            f.seek(200)
            f.write(bytes([b[0] ^ 1]))
        bad_image = os.path.join(work, "late-bad.erofs")
        h.run("mkfs.erofs", "--quiet", "-T0", "--all-root", bad_image, bad_src)
        os.makedirs(late_dir)
        h.run("mount", "-t", "erofs", "-o", "ro,loop", bad_image, late_dir)
        try:
            d = start("late-bad", late_conf)
            p = h.error_of(d.load(LATE), "UntrustedOrigin")
            assert p["reason"] == ("manifest: the file's SHA-256 is not the manifest's for %s"
                                   % os.path.basename(late_rel)), p
            assert d.shim_records() == []
        finally:
            d.stop()
            h.run("umount", late_dir)
            os.rmdir(late_dir)

    def case_test_config_roots():
        write_conf(late_conf)
        try:
            res = h.run(os.environ["MODGATED"], "-n", capture_output=True, text=True, check=False)
        finally:
            write_conf(None)
        assert res.returncode == 0, res
        lines = res.stdout.splitlines()
        i = lines.index("Root %s accepts: ownership" % first)
        j = lines.index("Root %s accepts: manifest" % late_dir)
        assert lines[j + 1] == "  not there yet: pinned when a module beneath it is first loaded", lines[j:]
        assert i < j

    # --- IMA -------------------------------------------------------------------------------------

    signed = os.path.join(first, deps[SIGNED][0])
    plain = os.path.join(first, deps[PLAIN][0])
    os.setxattr(signed, "security.ima", IMA_SIGNATURE)

    def case_ima():
        h.reset_sys_module()
        d = start("ima", "[Trust]\nTrustedRoot=%s\nEvidence=ownership\nRequireIMASignature=yes\n" % first)
        mods = h.modules_of(d.load(SIGNED))
        assert [(m["name"], m["outcome"]) for m in mods] == [(SIGNED, "loaded")], mods
        r = journal.records(MODGATE_MODULE=SIGNED, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert len(r) == 1, r
        assert (r[0]["MODGATE_IMA"], r[0]["MODGATE_IMA_HASH_ALGORITHM"], r[0]["MODGATE_IMA_KEY_ID"]) == (
            "signature", "sha256", "1234abcd"), r
        p = h.error_of(d.load(PLAIN), "UntrustedOrigin")
        assert p["reason"] == "RequireIMASignature=yes: the file has no IMA signature (security.ima: none)", p
        os.setxattr(plain, "security.ima", IMA_DIGEST)
        h.reload(d)     # forgets the remembered denial
        assert d.wait_notify("RELOADING=1") and d.wait_ready()
        p = h.error_of(d.load(PLAIN), "UntrustedOrigin")
        assert p["reason"] == "RequireIMASignature=yes: the file has no IMA signature (security.ima: digest)", p
        r = journal.records(MODGATE_MODULE=PLAIN, MODGATE_OUTCOME="denied", _PID=str(d.pid))
        assert r[-1]["MODGATE_IMA"] == "digest" and "MODGATE_IMA_KEY_ID" not in r[-1], r
        assert [x["name"] for x in h.finit_records(d.shim_records())] == [SIGNED]
        os.removexattr(plain, "security.ima")
        h.reset_sys_module()

    # --- signer rules ------------------------------------------------------------------------------

    def strip_signature(path):
        """The module at path without its appended signature, recompressed as Debian does (xz, crc32):
        the trailer is the signature, a 12-byte struct module_signature ending in its big-endian
        length, and the magic string."""
        elf = subprocess.run(["xz", "-dc", path], check=True, capture_output=True).stdout
        assert elf.endswith(SIG_MAGIC), "not a signed module: " + path
        sig_len = int.from_bytes(elf[-len(SIG_MAGIC) - 4:-len(SIG_MAGIC)], "big")
        elf = elf[:-(len(SIG_MAGIC) + 12 + sig_len)]
        assert elf[:4] == b"\x7fELF" and SIG_MAGIC not in elf[-4096:]
        with open(path, "wb") as f:
            f.write(subprocess.run(["xz", "-C", "crc32", "-c"], input=elf, check=True, capture_output=True).stdout)

    def case_signer_rules():
        h.reset_sys_module()
        unsigned_path = os.path.join(first, deps[UNSIGNED][0])
        shutil.copy(unsigned_path, os.path.join(work, "signed-copy"))
        strip_signature(unsigned_path)
        # Manifest evidence, where the name is checked from the path and nothing is read of the file
        # before the load, unless a signer rule asks for its signature.
        man = h.write_manifest(first, os.path.join(work, "signer.sha256"), kernel=kver)
        base = "[Trust]\nTrustedRoot=%s\nEvidence=manifest\nManifest=%s\n" % (first, man)

        # No rule: the unsigned file loads (sig_enforce is the kernel's business), recorded as unsigned.
        d = start("nosig", base)
        assert h.modules_of(d.load(UNSIGNED))[0]["outcome"] == "loaded"
        r = journal.records(MODGATE_MODULE=UNSIGNED, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert len(r) == 1 and r[0]["MODGATE_SIGNATURE"] == "none", r
        signed = h.modules_of(d.load(SIGNED_MOD))
        assert signed[0]["outcome"] == "loaded", signed
        r = journal.records(MODGATE_MODULE=SIGNED_MOD, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        signer, key = r[0]["MODGATE_SIGNER"], r[0]["MODGATE_SIGNATURE_KEY"]
        d.stop()
        h.reset_sys_module()

        # RequireSignature=yes of the root: the unsigned file is refused before the load, naming the
        # setting, the root and the line; a signed one loads.
        d = start("require", base + "RequireSignature=yes\n")
        p = h.error_of(d.load(UNSIGNED), "UntrustedOrigin")
        assert p["reason"] == ("RequireSignature=yes of trusted root %s (%s:5): the module file carries no "
                               "signature" % (first, CONF)), p
        assert h.modules_of(d.load(SIGNED_MOD))[0]["outcome"] == "loaded"
        assert [x["name"] for x in h.finit_records(d.shim_records())] == [SIGNED_MOD]
        r = journal.records(MODGATE_MODULE=UNSIGNED, MODGATE_OUTCOME="denied", _PID=str(d.pid))
        assert len(r) == 1 and r[0]["MODGATE_SIGNATURE"] == "none" and "RequireSignature=yes" in r[0][
            "MODGATE_REASON"], r
        d.stop()
        h.reset_sys_module()

        # A version 2 manifest whose line says the unsigned file is signed: without a rule the line
        # names it (and the record says what the line says); a rule decides on the bytes' own
        # signature, never on the line, so RequireSignature=yes still refuses it.
        with open(man) as f:
            lines = f.readlines()
        lines[0] = lines[0].replace("manifest 1 ", "manifest 2 ")
        i = next(i for i, x in enumerate(lines) if x.endswith("  %s\n" % deps[UNSIGNED][0]))
        lines.insert(i + 1, "#: name=%s signature=PKCS#7 signer=Forged key=AB:CD hash=sha256\n" % UNSIGNED)
        forged = os.path.join(work, "signer-forged.sha256")
        with open(forged, "w") as f:
            f.writelines(lines)
        os.chmod(forged, 0o644)
        base2 = base.replace("Manifest=%s\n" % man, "Manifest=%s\n" % forged)
        d = start("forged-norule", base2)
        assert h.modules_of(d.load(UNSIGNED))[0]["outcome"] == "loaded"
        r = journal.records(MODGATE_MODULE=UNSIGNED, MODGATE_OUTCOME="loaded", _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "manifest" and r[0]["MODGATE_SIGNER"] == "Forged", r
        d.stop()
        h.reset_sys_module()
        d = start("forged-require", base2 + "RequireSignature=yes\n")
        p = h.error_of(d.load(UNSIGNED), "UntrustedOrigin")
        assert p["reason"] == ("RequireSignature=yes of trusted root %s (%s:5): the module file carries no "
                               "signature" % (first, CONF)), p
        assert h.finit_records(d.shim_records()) == []
        r = journal.records(MODGATE_MODULE=UNSIGNED, MODGATE_OUTCOME="denied", _PID=str(d.pid))
        assert r[0]["MODGATE_NAME_CHECK"] == "modinfo" and r[0]["MODGATE_SIGNATURE"] == "none", r
        d.stop()
        h.reset_sys_module()

        # AllowSigner= of a [Source]: admin's requests load only what another key signed, so Debian's
        # module is refused, for admin only; Explain names the same rule.
        other_key = "00:11:22:33:44:55:66:77"
        d = start("allow", base + "[Source]\nName=admin\nAllowSigner=%s\n" % other_key)
        p = h.error_of(d.load(SIGNED_MOD), "UntrustedOrigin")
        assert p["reason"] == ("AllowSigner= of [Source] admin (%s:7): the module is signed by \"%s\" with key "
                               "%s, which no AllowSigner= there names" % (CONF, signer, key)), p
        e = h.ok(d.call("io.modgate.Manager.Explain", {"name": SIGNED_MOD}))
        assert e["reason"] == p["reason"] and e["modules"][0]["origin"]["reason"] == p["reason"], e
        e = h.ok(d.call("io.modgate.Manager.Explain", {"name": SIGNED_MOD, "context": {"source": "udev"}}))
        assert "reason" not in e and e["modules"][0]["origin"]["trusted"], e
        p = h.error_of(d.load(UNSIGNED), "UntrustedOrigin")
        assert "AllowSigner= of [Source] admin" in p["reason"] and "carries no signature" in p["reason"], p
        assert h.finit_records(d.shim_records()) == []
        # admin's refusal is about admin's request, not the file: the boot list's request for the same
        # module, right after, is judged again, and loads.
        boot = h.call_as(h.in_unit("modgate-modules-load.service"), d.address, "io.modgate.Manager.Load",
                         {"name": SIGNED_MOD, "context": {"source": "boot"}})
        assert h.modules_of(boot)[0]["outcome"] == "loaded", boot
        assert [x["name"] for x in h.finit_records(d.shim_records())] == [SIGNED_MOD]
        d.stop()

        # The key as modinfo prints it, or the signer's name: Debian's module loads.
        for allow in (key, key.replace(":", "").lower(), signer):
            h.reset_sys_module()
            d = start("allow-" + allow[:8], base + "[Source]\nName=admin\nAllowSigner=%s\n" % allow)
            assert h.modules_of(d.load(SIGNED_MOD))[0]["outcome"] == "loaded", allow
            d.stop()
        shutil.copy(os.path.join(work, "signed-copy"), unsigned_path)
        h.reset_sys_module()

    # --- the root's identity across restarts, and a detached pin -------------------------------------

    ident_image = os.path.join(work, "erofs.erofs")     # made by mount_erofs_tree() above
    runtime = os.path.join(work, "runtime")
    os.makedirs(runtime, mode=0o700)
    ident_conf = "[Trust]\nTrustedRoot=%s\nEvidence=ownership\n" % erofs_mnt
    pinned_id, changed_id = "283c442698e34f96a0fb27a1446e33af", "6612a8c94965478dbfa239919e1ab334"

    # Kept in the service's fd store, as PID 1 keeps it across restarts and idle exits.
    ident_store = h.FdStore()

    def ident_daemon(name):
        h.reset_sys_module()
        return start(name, ident_conf, env={"RUNTIME_DIRECTORY": runtime}, store=ident_store)

    def stored_roots():
        assert ident_store.count("roots") == 1, ident_store.names()
        fd = ident_store.find("roots")
        return os.pread(fd, 65536, 0).decode()

    def root_records(d):
        return [r for r in journal.records(MODGATE_ROOT=erofs_mnt, _PID=str(d.pid))]

    def identity_now():
        src = h.run("findmnt", "-n", "-o", "SOURCE", erofs_mnt, capture_output=True, text=True).stdout.strip()
        st = os.stat(erofs_mnt)
        with open("/sys/block/%s/diskseq" % os.path.basename(src)) as f:
            seq = f.read().strip()
        return "dev=%d:%d diskseq=%s fstype=erofs" % (os.major(st.st_dev), os.minor(st.st_dev), seq)

    def case_identity():
        first = identity_now()
        d = ident_daemon("ident1")
        r = root_records(d)
        assert [(x["MESSAGE_ID"], x["MODGATE_ROOT_IDENTITY"], x.get("MODGATE_ROOT_RECORDED")) for x in r] == [
            (pinned_id, first, None)], r
        assert h.modules_of(d.load(PLAIN))[0]["outcome"] == "loaded"
        d.stop()
        assert stored_roots() == "%s\t%s\n" % (erofs_mnt, first)
        assert not os.path.exists(os.path.join(runtime, "trusted-roots"))
        # Sealed: nobody holding the fd (PID 1, a reader of its fds) changes it.
        fd = ident_store.find("roots")
        try:
            os.pwrite(fd, b"x", 0)
            raise AssertionError("the record is writable")
        except PermissionError:
            pass

        # After a restart (or an idle exit): checked, as recorded.
        d = ident_daemon("ident2")
        r = root_records(d)
        assert [(x["MESSAGE_ID"], x["MODGATE_ROOT_RECORDED"]) for x in r] == [(pinned_id, first)], r
        assert h.modules_of(d.load(PLAIN))[0]["outcome"] == "loaded"
        d.stop()

        # The same image on another loop device, mounted at the path: another device instance.
        h.run("umount", erofs_mnt)
        h.run("mount", "-t", "erofs", "-o", "ro,loop", ident_image, erofs_mnt)
        now = identity_now()
        assert now != first
        d = ident_daemon("ident3")
        r = root_records(d)
        assert [(x["MESSAGE_ID"], x["PRIORITY"], x["MODGATE_ROOT_RECORDED"], x["MODGATE_ROOT_IDENTITY"]) for x in r] \
            == [(changed_id, "3", first, now)], r
        p = h.error_of(d.load(PLAIN), "UntrustedOrigin")
        assert p["reason"] == ("trusted root %s is not what it was when first pinned this boot (recorded %s, now %s)"
                               % (erofs_mnt, first, now)), p
        # The history in the fd store had it loaded; the shim's /sys/module was reset since.
        rec = journal.records(MODGATE_MODULE=PLAIN, _PID=str(d.pid))
        assert [x["MODGATE_OUTCOME"] for x in rec] == ["unloaded_outside", "denied"], rec
        assert rec[1]["MODGATE_ERRNO_NAME"] == "ESTALE", rec
        assert d.shim_records() == []
        d.stop()

        # Forgotten (systemctl clean --what=fdstore): recorded anew.
        ident_store.clear()
        d = ident_daemon("ident4")
        r = root_records(d)
        assert [(x["MESSAGE_ID"], x["MODGATE_ROOT_IDENTITY"], x.get("MODGATE_ROOT_RECORDED")) for x in r] == [
            (pinned_id, now, None)], r
        assert h.modules_of(d.load(PLAIN))[0]["outcome"] == "loaded"
        d.stop()

    def case_detached():
        d = ident_daemon("detached")
        h.run("umount", "--lazy", erofs_mnt)
        p = h.error_of(d.load(PLAIN), "LoadFailed")
        mods = {m["name"]: m for m in p["modules"]}
        assert mods[PLAIN]["reason"] == (
            "trusted root %s is a detached mount (unmounted since it was pinned): its file system cannot be "
            "identified; restart modgated to pin what is there now" % erofs_mnt), p
        assert d.shim_records() == []
        d.stop()
        h.run("mount", "-t", "erofs", "-o", "ro,loop", ident_image, erofs_mnt)

    t.case("modgate-probe: a loop device is not device-mapper but names the file it reads by device and inode, a "
           "missing device is named, bad parameters and "
           "other uids are refused", case_prober)
    t.case("verity evidence alone on an erofs on a loop device: refused, for the device and the file's fs-verity",
           case_verity_refused)
    t.case("a [Root] with its own evidence and manifest, not there at start: pinned when first used, and loads",
           case_late_root)
    t.case("that [Root]'s manifest refuses a changed file the first root's evidence would take", case_late_root_refuses)
    t.case("modgated -n lists each root with its evidence, and a root not there yet as such", case_test_config_roots)
    t.case("security.ima is recorded (type, algorithm, key id); RequireIMASignature=yes refuses a file without a "
           "signature, a digest included", case_ima)
    t.case("signer rules: RequireSignature= of a root refuses an unsigned file, AllowSigner= of a [Source] a "
           "module another key signed, naming the rule; a key id or signer name that matches loads", case_signer_rules)
    t.case("a root's identity is recorded at its first pin, checked after a restart, and a changed one refuses "
           "everything beneath it, loudly, until forgotten", case_identity)
    t.case("a pinned root unmounted lazily is named a detached mount", case_detached)
    t.case("every daemon exits cleanly on SIGTERM (in the sanitizer build: no leak, no error)",
           lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()

    probe.terminate()
    probe.wait(10)
    journal.stop()
    if t.failed:
        h.dump_stderr(daemons, 15)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
