#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The manifests (docs/manifest.md) and what writes them: modgate-manifest on the real Debian 13 module
tree, checked against hashlib, sha256sum and kmod's modinfo(8); symlinks, odd files and mounts in a
tree; atomic replacement, --if-missing and --remove; the kernel-install plugin under the real
kernel-install, and the Debian hooks under the real linux-run-hooks, in a root where modgate is
installed with meson install; and the first-use unit, verified offline and then run by systemd 257
booted in systemd-nspawn.

Reading a file's .modinfo through libkmod takes about 60 times as long in the sanitizer build (the
whole Debian tree: 6 min 46 s against 6 s). There the version 2 comparison with modinfo(8) reads one
directory of the real tree (NET_SUBTREE, some 470 files) instead of all of it: the same assertions on
fewer files. The digests alone (--digests-only, the first-use unit) are still checked on the whole
tree in both builds. The plugin, the hooks and the default output write the manifest of a small kernel
release staged from real modules (SMALL_MODULES) in both builds: what they show is who runs the tool,
with which origin and where it writes, which does not depend on the tree's size."""

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
LIBEXEC = "/usr/libexec/modgate"
MANIFEST_DIR = "/var/lib/modgate/manifests"
EXPOSURE_MAX = 2.0
# Under the sanitizers, the directory of the real tree whose .modinfo the comparison reads.
NET_SUBTREE = "kernel/drivers/net"
# The small release's modules (all signed; some with many aliases, some with dependencies), as
# they lie in the real tree.
SMALL_MODULES = ("dummy", "eql", "ifb", "nlmon", "e1000", "wireguard", "udp_tunnel", "ip6_udp_tunnel",
                 "libchacha20poly1305", "isofs")


def expected_entries(tree):
    """[(relpath bytes, sha256 hex)] of every regular file named *.ko* beneath tree, sorted by bytes:
    symlinks neither followed nor listed, other filesystems not entered. Independent of modgate."""
    root_dev = os.stat(tree).st_dev
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))
                       and os.stat(os.path.join(dirpath, d)).st_dev == root_dev]
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if not name.endswith(SUFFIXES) or not stat.S_ISREG(st.st_mode):
                continue
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out.append((os.path.relpath(full, tree).encode(), digest))
    return sorted(out)


def escape(value):
    """An info line's value: space, control characters, DEL and backslash as \\xHH."""
    return b"".join(b"\\x%02x" % c if c <= 0x20 or c in (0x7f, 0x5c) else bytes([c]) for c in value)


def expected_info(tree, entries):
    """{relpath bytes: info line fields} of the module files among entries, from what kmod's own
    modinfo(8) prints for them (one run over every file), independently of modgate's reader: the name
    (normalized, as the kernel takes it), the signature's fields when signed, then every alias."""
    paths = [os.path.join(tree, p.decode()) for p, _ in entries]
    if not paths:
        return {}
    out = subprocess.run(["modinfo", *paths], capture_output=True, check=False).stdout
    info, cur = {}, None
    for line in out.split(b"\n"):
        key, _, value = line.partition(b":")
        value = value.strip(b" \t")
        if key == b"filename":
            cur = {"path": os.path.relpath(value.decode(), tree).encode(), "alias": []}
            info[cur["path"]] = cur
        elif cur is not None and key in (b"name", b"sig_id", b"signer", b"sig_key", b"sig_hashalgo"):
            cur.setdefault(key.decode(), value)
        elif cur is not None and key == b"alias" and value:
            cur["alias"].append(value)
    lines = {}
    for path, f in info.items():
        if not f.get("name"):
            continue
        fields = [b"name=" + escape(f["name"].replace(b"-", b"_"))]
        if "sig_id" in f:
            fields.append(b"signature=" + escape(f["sig_id"]))
            fields += [k + b"=" + escape(f[n]) for k, n in ((b"signer", "signer"), (b"key", "sig_key"),
                                                            (b"hash", "sig_hashalgo")) if f.get(n)]
        fields += [b"alias=" + escape(a) for a in f["alias"]]
        lines[path] = b" ".join(fields)
    return lines


def expected_text(entries, kernel, origin, info=None):
    """The manifest of entries: version 2, with the info lines info has, or version 1 without info."""
    lines = [b"# modgate manifest %d kernel=%s origin=%s\n" % (1 if info is None else 2, kernel.encode(),
                                                               origin.encode())]
    for path, digest in entries:
        lines.append(b"%s  %s\n" % (digest.encode(), path))
        if info and path in info:
            lines.append(b"#: %s\n" % info[path])
    return b"".join(lines)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tool(*args, umask=None, **kwargs):
    def preexec():
        if umask is not None:
            os.umask(umask)
    return subprocess.run([h.helper("modgate-manifest"), *args], capture_output=True, text=True,
                          preexec_fn=preexec, **kwargs)


def check_written(path, text):
    """The file is exactly text, root's, mode 0644, and nothing else was left in its directory."""
    got = read(path)
    assert got == text, "differs from the expected manifest (%d vs %d bytes)" % (len(got), len(text))
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)
    others = [f for f in os.listdir(os.path.dirname(path)) if f != os.path.basename(path)]
    assert not others, "left behind: %s" % others


def sha256sum_check(manifest, tree):
    """sha256sum --strict -c run in the tree root: its exit status and how many files it checked."""
    res = subprocess.run(["sha256sum", "--strict", "-c", manifest], cwd=tree, capture_output=True, text=True)
    ok = [line for line in res.stdout.splitlines() if line.endswith(": OK")]
    return res, len(ok)


def main():
    h.require_root()
    h.unshare_mounts()
    work = tempfile.mkdtemp(prefix="modgate-manifest-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    real = expected_entries(tree)
    # What the version 2 comparison reads: the whole tree, or one directory of it (the docstring).
    if h.sanitizer_build():
        subject = os.path.join(tree, NET_SUBTREE)
        print("# the sanitizer build: the version 2 comparison reads %s, not the whole tree" % subject,
              flush=True)
    else:
        subject = tree
    subject_entries = real if subject == tree else expected_entries(subject)
    start = time.monotonic()
    subject_info = expected_info(subject, subject_entries)
    print("# modinfo(8) read %d module files in %.1f s" % (len(subject_info), time.monotonic() - start),
          flush=True)
    # The small release: the modules named, copied from the real tree with their paths.
    small_kver = kver + "+small"
    small_tree = os.path.join(work, "small", small_kver)
    by_name = {os.path.basename(p).split(b".")[0].decode().replace("-", "_"): p for p, _ in real}
    for name in SMALL_MODULES:
        dst = os.path.join(small_tree, by_name[name].decode())
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.join(tree, by_name[name].decode()), dst)
    small = expected_entries(small_tree)
    small_info = expected_info(small_tree, small)
    assert len(small) == len(small_info) == len(SMALL_MODULES), (small, small_info)
    t = h.Tap()
    installed = {}

    def case_real_tree():
        out = os.path.join(work, "real", kver + ".sha256")
        start = time.monotonic()
        res = tool("--origin=admin", "--output=" + out, kver,
                   *(() if subject == tree else ("--tree=" + subject,)))
        elapsed = time.monotonic() - start
        assert res.returncode == 0, res
        assert len(subject_entries) > 400, len(subject_entries)
        print("# modgate-manifest hashed and read %d module files of %s in %.2f s"
              % (len(subject_entries), subject, elapsed), flush=True)
        # Every file's .modinfo, as modinfo(8) reads it, after its digest.
        assert len(subject_info) == len(subject_entries), (len(subject_info), len(subject_entries))
        check_written(out, expected_text(subject_entries, kver, "admin", subject_info))
        wrote = "Wrote %s: %d module files of %s (origin admin, with their .modinfo)." % (
            out, len(subject_entries), subject)
        assert wrote in res.stderr, res.stderr
        assert b"signature=PKCS#7 signer=" in read(out), "no signed module in the tree?"

        # --digests-only: version 1, the digests alone, as before version 2; the whole tree.
        out1 = os.path.join(work, "real", kver + ".v1.sha256")
        start = time.monotonic()
        res = tool("--origin=admin", "--digests-only", "--output=" + out1, kver)
        print("# modgate-manifest --digests-only: %d module files in %.2f s"
              % (len(real), time.monotonic() - start), flush=True)
        assert res.returncode == 0, res
        assert "(origin admin, digests only)." in res.stderr, res.stderr
        assert len(real) > 1000, len(real)
        chk, n_ok = sha256sum_check(out1, tree)
        assert chk.returncode == 0 and not chk.stderr and n_ok == len(real), (n_ok, len(real), chk.stderr)
        got = read(out1)
        os.unlink(out1)
        assert got == expected_text(real, kver, "admin"), "--digests-only differs from version 1"

        # sha256sum takes version 2 as it is: it skips the '#' lines itself.
        chk, n_ok = sha256sum_check(out, subject)
        assert chk.returncode == 0 and not chk.stderr, chk
        assert n_ok == len(subject_entries), (n_ok, len(subject_entries))

        # busybox's sha256sum takes '#' for a file name: without the comments it accepts the file too.
        res = subprocess.run(["busybox", "sha256sum", "-c", out], cwd=subject, capture_output=True, text=True)
        assert res.returncode == 1, res
        assert "modgate manifest 2 kernel=%s origin=admin: FAILED" % kver in res.stdout, res
        res = subprocess.run("grep -v '^#' '%s' | busybox sha256sum -c" % out, shell=True, cwd=subject,
                             capture_output=True, text=True)
        assert res.returncode == 0 and res.stdout.count(": OK\n") == len(subject_entries), res.stdout[-300:]

        # Every module file, and nothing else: what find(1) sees, independently of the walk above.
        found = subprocess.run(["find", ".", "-type", "f", "(", "-name", "*.ko", "-o", "-name", "*.ko.xz", "-o",
                                "-name", "*.ko.zst", "-o", "-name", "*.ko.gz", ")"], cwd=tree,
                               capture_output=True, check=True).stdout.split(b"\n")
        assert sorted(p[2:] for p in found if p) == [p for p, _ in real]

        # One changed byte in the tree is one line sha256sum refuses.
        copy = os.path.join(work, "real-copy")
        shutil.copytree(subject, copy, symlinks=True)
        victim = subject_entries[len(subject_entries) // 2][0].decode()
        with open(os.path.join(copy, victim), "r+b") as f:
            b = f.read(1)
            f.seek(0)
            f.write(bytes([b[0] ^ 1]))
        chk, n_ok = sha256sum_check(out, copy)
        assert chk.returncode == 1 and n_ok == len(subject_entries) - 1, chk.stdout[-500:]
        assert "%s: FAILED" % victim in chk.stdout
        shutil.rmtree(copy)

    def case_default_output():
        # MANIFEST_DIR itself, on a tmpfs of this namespace: created 0755 whatever the umask.
        h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/var/lib")
        try:
            path = os.path.join(MANIFEST_DIR, small_kver + ".sha256")
            res = tool("--origin=kernel-install", "--tree=" + small_tree, small_kver, umask=0o077)
            assert res.returncode == 0, res
            for d in ("/var/lib/modgate", MANIFEST_DIR):
                assert stat.S_IMODE(os.stat(d).st_mode) == 0o755, (d, oct(os.stat(d).st_mode))
            text = expected_text(small, small_kver, "kernel-install", small_info)
            check_written(path, text)

            # Written again: a new file renamed over the old one, never the old one rewritten.
            before = os.stat(path).st_ino
            fd = os.open(path, os.O_RDONLY)
            res = tool("--origin=first-use", "--digests-only", "--tree=" + small_tree, small_kver)
            assert res.returncode == 0, res
            assert os.stat(path).st_ino != before
            assert os.read(fd, 1 << 20) == text, "the old file changed under its reader"
            os.close(fd)
            check_written(path, expected_text(small, small_kver, "first-use"))

            res = tool("--remove", small_kver)
            assert res.returncode == 0 and "Removed %s." % path in res.stderr, res
            assert not os.path.exists(path)
            res = tool("--remove", small_kver)
            assert res.returncode == 0 and res.stderr == "", res
            # Not even the directory: nothing to remove, nothing to create.
            shutil.rmtree("/var/lib/modgate")
            res = tool("--remove", small_kver)
            assert res.returncode == 0 and res.stderr == "" and not os.path.exists("/var/lib/modgate"), res
        finally:
            h.run("umount", "/var/lib")

    def case_if_missing():
        out = os.path.join(work, "if-missing", kver + ".sha256")
        os.makedirs(os.path.dirname(out))
        with open(out, "w") as f:
            f.write("sentinel\n")
        os.chmod(out, 0o644)
        res = tool("--if-missing", "--origin=first-use", "--output=" + out, kver)
        assert res.returncode == 0 and res.stderr == "", res
        assert read(out) == b"sentinel\n"
        os.unlink(out)
        res = tool("--if-missing", "--origin=first-use", "--digests-only", "--output=" + out, kver)
        assert res.returncode == 0, res
        check_written(out, expected_text(real, kver, "first-use"))

    def case_odd_trees():
        t_root = os.path.join(work, "odd")
        outside = os.path.join(work, "outside")
        module = os.path.join(tree, real[0][0].decode())
        for d in ("kernel/a", "kernel/dir.ko", "kernel/mnt", "updates"):
            os.makedirs(os.path.join(t_root, d))
        os.makedirs(outside)
        shutil.copy(module, os.path.join(t_root, "kernel/a/real.ko.xz"))
        os.symlink("real.ko.xz", os.path.join(t_root, "kernel/a/link.ko.xz"))
        os.symlink("/nonexistent.ko", os.path.join(t_root, "kernel/a/dangling.ko"))
        with open(os.path.join(outside, "hidden.ko"), "w") as f:
            f.write("outside the tree\n")
        os.symlink(outside, os.path.join(t_root, "kernel/linkdir"))
        os.symlink(outside, os.path.join(t_root, "updates/linkdir.ko"))
        os.mkfifo(os.path.join(t_root, "kernel/fifo.ko"))
        for name, text in (("kernel/b.ko", "b"), ("kernel/c.ko.zst", "c"), ("kernel/d.ko.gz", "d"),
                           ("kernel/e.ko.bz2", "e"), ("kernel/dir.ko/inner.ko", "inner"),
                           ("modules.alias", "x"), ("kernel/f.ko.xz.sig", "sig"), ("kernel/sp ace.ko", "space"),
                           ("kernel/back\\slash.ko", "b"),
                           ("kernel/new\nline.ko", "nl")):
            with open(os.path.join(t_root, name), "w") as f:
                f.write(text)
        h.run("mount", "-t", "tmpfs", "tmpfs", os.path.join(t_root, "kernel/mnt"))
        with open(os.path.join(t_root, "kernel/mnt/mounted.ko"), "w") as f:
            f.write("on another filesystem\n")
        # The tree's own path may go through a symlink; nothing below it does.
        os.symlink(t_root, os.path.join(work, "odd-link"))

        out = os.path.join(work, "odd-out", "x.sha256")
        res = tool("--tree=" + os.path.join(work, "odd-link"), "--output=" + out, "6.1.0-odd")
        assert res.returncode == 0, res
        want = sorted((p.encode(), hashlib.sha256(read(os.path.join(t_root, p))).hexdigest()) for p in
                      ("kernel/a/real.ko.xz", "kernel/b.ko", "kernel/c.ko.zst", "kernel/d.ko.gz",
                       "kernel/dir.ko/inner.ko"))
        # Only real.ko.xz is a module: the others are listed with their digest alone, and a warning.
        check_written(out, expected_text(want, "6.1.0-odd", "admin", expected_info(t_root, want)))
        assert len(expected_info(t_root, want)) == 1 and b"#: name=" in read(out), read(out)
        assert "Listing %s/kernel/b.ko without its .modinfo:" % os.path.join(work, "odd-link") in res.stderr, \
            res.stderr
        # The independent walk agrees, once the names no manifest can hold are left out.
        assert want == [e for e in expected_entries(t_root) if not re.search(rb"[\s\\\x00-\x1f\x7f]", e[0])]
        odd_link = os.path.join(work, "odd-link")
        for warning in ("Not listing %s/kernel/sp ace.ko: the path contains whitespace or a control character."
                        % odd_link,
                        "Not listing %s/kernel/back\\slash.ko: the path contains a backslash" % odd_link,
                        "Not listing %s/kernel/new?line.ko: the path contains whitespace" % odd_link,
                        "Not listing %s/kernel/mnt: another filesystem is mounted there." % odd_link):
            assert warning in res.stderr, (warning, res.stderr)
        assert "hidden" not in read(out).decode() and "link" not in read(out).decode()
        chk, n_ok = sha256sum_check(out, t_root)
        assert chk.returncode == 0 and n_ok == 5, chk
        h.run("umount", os.path.join(t_root, "kernel/mnt"))

        # A tree without module files: a manifest that lists none, and a warning.
        empty = os.path.join(work, "empty-tree")
        os.makedirs(empty)
        res = tool("--tree=" + empty, "--output=" + out, "6.1.0-empty")
        assert res.returncode == 0 and "No module files in %s" % empty in res.stderr, res
        assert read(out) == b"# modgate manifest 2 kernel=6.1.0-empty origin=admin\n"

    def case_unreadable():
        # A directory the tool cannot read fails the run, and the manifest there was stays: run as
        # nobody, which a 0700 directory of root's keeps out.
        t_root = os.path.join(work, "unreadable")
        os.makedirs(os.path.join(t_root, "kernel/secret"))
        for name in ("kernel/a.ko", "kernel/secret/b.ko"):
            with open(os.path.join(t_root, name), "w") as f:
                f.write(name)
        os.chmod(os.path.join(t_root, "kernel/secret"), 0o700)
        outdir = os.path.join(work, "unreadable-out")
        os.makedirs(outdir)
        out = os.path.join(outdir, "x.sha256")
        with open(out, "w") as f:
            f.write("the old manifest\n")
        os.chown(outdir, 65534, 65534)
        os.chmod(work, 0o755)
        res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              h.helper("modgate-manifest"), "--tree=" + t_root, "--output=" + out, "6.1.0-x"],
                             capture_output=True, text=True)
        assert res.returncode == 1, res
        assert "Failed to open %s/kernel/secret: Permission denied" % t_root in res.stderr, res
        assert read(out) == b"the old manifest\n" and os.listdir(outdir) == ["x.sha256"]
        # An output that cannot be written fails before the walk: the tree's error is never met.
        res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              h.helper("modgate-manifest"), "--tree=" + t_root,
                              "--output=/proc/version/sub/x.sha256", "6.1.0-x"], capture_output=True, text=True)
        assert res.returncode == 1 and res.stderr == "Failed to create /proc/version/sub: Not a directory\n", res
        # Root reads it; the file it writes is root's.
        res = tool("--tree=" + t_root, "--output=" + out, "6.1.0-x")
        assert res.returncode == 0, res
        entries = expected_entries(t_root)
        check_written(out, expected_text(entries, "6.1.0-x", "admin", expected_info(t_root, entries)))

    def case_errors():
        out = os.path.join(work, "errors", "x.sha256")
        os.makedirs(os.path.dirname(out))
        with open(out, "w") as f:
            f.write("the old manifest\n")
        for args, code, message in (
                ((), 2, "Expected exactly one kernel release, see --help."),
                (("a", "b"), 2, "Expected exactly one kernel release, see --help."),
                (("--origin=distro", kver), 2, "Unknown origin 'distro': use kernel-install, first-use or admin."),
                (("../etc",), 2, "'../etc' is not a kernel release"),
                (("6.1 x",), 2, "'6.1 x' is not a kernel release"),
                (("--remove", "--if-missing", kver), 2, "--remove takes no --if-missing, --tree= or --digests-only."),
                (("--remove", "--digests-only", kver), 2, "--remove takes no --if-missing, --tree= or --digests-only."),
                (("--output=", kver), 2, "--output= needs a file name."),
                (("--bogus", kver), 2, "unrecognized option"),
                (("--tree=/nonexistent", "--output=" + out, kver), 1,
                 "Failed to open the module tree /nonexistent: No such file or directory"),
                (("--tree=" + out, "--output=" + out, kver), 1,
                 "Failed to open the module tree %s: Not a directory" % out),
                (("--output=/proc/version/sub/x.sha256", kver), 1,
                 "Failed to create /proc/version/sub: Not a directory"),
                (("--output=" + os.path.dirname(out) + "/", kver), 1, "is not a file name."),
        ):
            res = tool(*args)
            assert res.returncode == code and message in res.stderr, (args, res)
        assert read(out) == b"the old manifest\n"
        assert os.listdir(os.path.dirname(out)) == ["x.sha256"]
        res = tool("--help")
        assert res.returncode == 0 and "--origin=ORIGIN" in res.stdout and MANIFEST_DIR in res.stdout, res

    def install_root():
        """meson install into a destdir, seen over this build root through an overlay, as on an
        installed system."""
        if installed:
            return installed["merged"]
        dest = os.path.join(work, "dest")
        h.meson_install(dest)
        merged = os.path.join(work, "merged")
        for d in ("merged", "upper", "ovl-work"):
            os.makedirs(os.path.join(work, d))
        h.run("mount", "-t", "overlay", "overlay", "-o",
              "lowerdir=%s:/,upperdir=%s/upper,workdir=%s/ovl-work" % (dest, work, work), merged)
        h.run("mount", "-t", "proc", "proc", merged + "/proc")
        # The small release, installed as a kernel package installs one.
        shutil.copytree(small_tree, merged + "/usr/lib/modules/" + small_kver)
        installed.update(dest=dest, merged=merged)
        return merged

    def chroot(root, *args, env=None):
        e = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        e.update(env or {})
        return subprocess.run(["chroot", root, *args], capture_output=True, text=True, env=e, timeout=300)

    def case_installed_layout():
        merged = install_root()
        dest = installed["dest"]
        for path in (LIBEXEC + "/modgate-manifest", "/usr/lib/kernel/install.d/50-modgate.install",
                     "/etc/kernel/postinst.d/zz-modgate", "/etc/kernel/postrm.d/zz-modgate"):
            st = os.stat(dest + path)
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755, (path, oct(st.st_mode))
            if not path.startswith(LIBEXEC):
                text = read(dest + path).decode()
                assert "MANIFEST=%s/modgate-manifest\n" % LIBEXEC in text and "@" not in text, path
        unit = read(dest + "/usr/lib/systemd/system/modgate-manifest.service").decode()
        assert "ExecStart=%s/modgate-manifest --origin=first-use --digests-only --if-missing %%v\n" % LIBEXEC \
            in unit, unit
        assert "ConditionPathExists=!%s/%%v.sha256\n" % MANIFEST_DIR in unit
        assert not os.path.exists(merged + MANIFEST_DIR), "the build root has manifests already"

    def case_kernel_install():
        merged = install_root()
        path = merged + os.path.join(MANIFEST_DIR, small_kver + ".sha256")
        image = "/boot/vmlinuz-" + kver
        res = chroot(merged, "kernel-install", "--verbose", "add", small_kver, image)
        assert res.returncode == 0, res
        out = res.stdout + res.stderr
        assert "/usr/lib/kernel/install.d/50-modgate.install add %s" % small_kver in out, out[-3000:]
        assert "+%s/modgate-manifest --origin=kernel-install %s" % (LIBEXEC, small_kver) in out, out[-3000:]
        check_written(path, expected_text(small, small_kver, "kernel-install", small_info))
        chk, n_ok = sha256sum_check(path, merged + "/usr/lib/modules/" + small_kver)
        assert chk.returncode == 0 and n_ok == len(small), chk

        # Without --verbose the plugin says nothing; run again, it writes the manifest again.
        os.unlink(path)
        res = chroot(merged, "kernel-install", "add", small_kver, image)
        assert res.returncode == 0 and "modgate" not in res.stdout + res.stderr, res
        check_written(path, expected_text(small, small_kver, "kernel-install", small_info))

        res = chroot(merged, "kernel-install", "--verbose", "remove", small_kver)
        assert res.returncode == 0, res
        assert "+%s/modgate-manifest --remove %s" % (LIBEXEC, small_kver) in res.stdout + res.stderr, res
        assert not os.path.exists(path)

        # A kernel whose module tree is gone: nothing to write, and kernel-install carries on.
        res = chroot(merged, "kernel-install", "--verbose", "add", "6.1.0-gone", "/boot/vmlinuz-" + kver)
        assert res.returncode == 0, res
        assert "No module tree /usr/lib/modules/6.1.0-gone, no modgate manifest." in res.stdout, res
        assert not os.path.exists(merged + os.path.join(MANIFEST_DIR, "6.1.0-gone.sha256"))

    def case_debian_hooks():
        merged = install_root()
        path = merged + os.path.join(MANIFEST_DIR, small_kver + ".sha256")
        image = "/boot/vmlinuz-" + kver
        # As the linux-image package's maintainer scripts run the hooks; INITRD=No keeps
        # initramfs-tools' hook from building an initramfs.
        env = {"INITRD": "No", "DPKG_MAINTSCRIPT_PACKAGE": "linux-image-" + small_kver}

        def hooks(script, *params):
            res = chroot(merged, "linux-run-hooks", "image", script, small_kver, image, "--", *params, env=env)
            assert res.returncode == 0, (script, params, res)
            return res

        hooks("postinst", "abort-upgrade", "6.12.0")
        assert not os.path.exists(path), "written for abort-upgrade"
        hooks("postinst", "configure", "")
        check_written(path, expected_text(small, small_kver, "kernel-install", small_info))
        hooks("postrm", "upgrade", "6.12.999")
        assert os.path.exists(path), "removed on upgrade"
        hooks("postrm", "remove")
        assert not os.path.exists(path)
        hooks("postrm", "remove")

        # Run by hand (as "make install" does): no DEB_MAINT_PARAMS.
        res = chroot(merged, "/etc/kernel/postinst.d/zz-modgate", small_kver, image)
        assert res.returncode == 0, res
        check_written(path, expected_text(small, small_kver, "kernel-install", small_info))
        res = chroot(merged, "/etc/kernel/postrm.d/zz-modgate", small_kver, image)
        assert res.returncode == 0 and not os.path.exists(path), res
        for hook in ("postinst", "postrm"):
            res = chroot(merged, "/etc/kernel/%s.d/zz-modgate" % hook, env=env)
            assert res.returncode == 2 and "E: modgate: linux-image-%s did not pass a kernel release" % small_kver \
                in res.stderr, res

        # modgate removed, its conffiles kept: the hooks do nothing.
        os.unlink(merged + LIBEXEC + "/modgate-manifest")
        try:
            res = chroot(merged, "/etc/kernel/postinst.d/zz-modgate", small_kver, image)
            assert res.returncode == 0 and res.stderr == "" and not os.path.exists(path), res
        finally:
            shutil.copy2(installed["dest"] + LIBEXEC + "/modgate-manifest",
                         merged + LIBEXEC + "/modgate-manifest")

    def case_unit_offline():
        merged = install_root()
        res = subprocess.run(["systemd-analyze", "verify", "--man=no", "--root=" + merged,
                              "modgate-manifest.service", "modgated.socket", "sysinit.target"],
                             capture_output=True, text=True)
        assert res.returncode == 0 and not res.stderr.strip() and not res.stdout.strip(), res
        res = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", "--root=" + merged,
                              "modgate-manifest.service"], capture_output=True, text=True)
        m = re.search(r"Overall exposure level for modgate-manifest.service: (\d+\.\d+)", res.stdout)
        assert m, res
        print("# systemd-analyze security --offline=yes: modgate-manifest.service exposure %s" % m.group(1),
              flush=True)
        assert float(m.group(1)) <= EXPOSURE_MAX, res.stdout
        res = subprocess.run(["systemctl", "--root=" + merged, "preset", "modgate-manifest.service"],
                             capture_output=True, text=True)
        assert res.returncode == 0, res
        link = merged + "/etc/systemd/system/modgated.socket.wants/modgate-manifest.service"
        assert os.path.islink(link), os.listdir(merged + "/etc/systemd/system")
        os.unlink(link)

    def case_first_use_boot():
        if subprocess.run(["which", "systemd-nspawn"], capture_output=True).returncode != 0:
            raise AssertionError("no systemd-nspawn (package systemd-container) to boot the unit")
        install_root()
        release = os.uname().release
        trusted = h.mount_trusted_tree(tree, work)

        def prepare(root):
            # A kernel installed before modgate: no manifest of it (the harness puts one in place for
            # the daemon), not even the state directory.
            shutil.rmtree(os.path.join(root, "var/lib/modgate"), ignore_errors=True)
            assert not os.path.exists(os.path.join(root, "var/lib/modgate"))
            res = subprocess.run(["systemctl", "--root=" + root, "preset", "modgate-manifest.service"],
                                 capture_output=True, text=True)
            assert res.returncode == 0, res
            # As the harness does for modgated: a sanitizer build's tool must get by without ptrace
            # and setrlimit, which the sandbox forbids.
            d = os.path.join(root, "etc/systemd/system/modgate-manifest.service.d")
            os.makedirs(d)
            with open(os.path.join(d, "50-test-sanitizers.conf"), "w") as f:
                f.write("[Service]\nEnvironment=ASAN_OPTIONS=%s:detect_leaks=0:disable_coredump=0\n"
                        % os.environ.get("ASAN_OPTIONS", ""))

        c = h.Container(os.path.join(work, "c"), installed["dest"], trusted, prepare=prepare)
        try:
            assert c.state in ("running", "degraded"), (c.state, c.console_text()[-3000:])
            unit = "modgate-manifest.service"
            assert c.show(unit, "UnitFileState") == "enabled"
            assert c.show(unit, "ConditionResult") == "yes", c.journal("-u", unit)
            assert c.show(unit, "Result") == "success", c.journal("-u", unit)
            assert c.show(unit, "ExecMainStatus") == "0"
            journal = c.journal()
            assert "ordering cycle" not in journal.lower(), [x for x in journal.splitlines() if "cycle" in x]

            # Written before the socket listened.
            done = int(c.show(unit, "ExecMainExitTimestampMonotonic"))
            listening = int(c.show("modgated.socket", "ActiveEnterTimestampMonotonic"))
            assert c.show("modgated.socket", "ActiveState") == "active"
            assert 0 < done <= listening, (done, listening)

            # /var/lib/modgate is bound in from the test's tmpfs (harness.Container).
            path = os.path.join(c.var_lib, os.path.relpath(MANIFEST_DIR, "/var/lib/modgate"), release + ".sha256")
            check_written(path, expected_text(expected_entries(trusted), release, "first-use"))
            assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o755
            assert expected_entries(trusted) == real
            chk, n_ok = sha256sum_check(path, trusted)
            assert chk.returncode == 0 and n_ok == len(real), chk

            # Once: started again, the condition keeps it from writing.
            mtime = os.stat(path).st_mtime_ns
            res = c.run("systemctl", "start", unit)
            assert res.returncode == 0, res
            assert c.show(unit, "ConditionResult") == "no"
            assert os.stat(path).st_mtime_ns == mtime
        finally:
            c.stop()

    t.case("modgate-manifest on the real module tree: every module file with its SHA-256, as hashlib and "
           "sha256sum --strict -c see it", case_real_tree)
    t.case("the default output below %s: directories made 0755, the file 0644, replaced by rename, removed"
           % MANIFEST_DIR, case_default_output)
    t.case("--if-missing keeps an existing manifest and writes a missing one", case_if_missing)
    t.case("symlinks, FIFOs, mounts and unlistable names in a tree are not listed", case_odd_trees)
    t.case("a tree that cannot be read fails the run and keeps the old manifest", case_unreadable)
    t.case("bad usage exits 2, failures exit 1, and the old manifest stays", case_errors)
    t.case("meson install puts the tool, the plugin, the hooks and the unit in place", case_installed_layout)
    t.case("the real kernel-install add writes the manifest (origin kernel-install), remove deletes it",
           case_kernel_install)
    t.case("Debian's linux-run-hooks: postinst configure writes, postrm remove deletes, upgrades keep it",
           case_debian_hooks)
    t.case("modgate-manifest.service passes systemd-analyze verify and security; the preset enables it",
           case_unit_offline)
    t.case("booted under systemd 257, the unit writes the first-use manifest once, before the socket listens",
           case_first_use_boot)
    t.run()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
