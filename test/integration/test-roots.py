#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Trusted roots and everything that may try to leave them, end to end.

Several roots, nested roots and a root that is a separate mount inside another; TrustedRoot=/ (the
daemon chrooted into an erofs image, so that / itself is a trusted filesystem);
RequireReadOnlySuperblock=no; owner and mode of the module file; every way out of a root (a relative
symlink with '..', a symlinked directory, a symlink through /proc, a magic link, a symlink loop, a
filesystem mounted inside the root, '..' in a request) and every file that is not a module file (a
FIFO, a socket, a device node); remembered denials and what makes them forgotten; a reload re-reading
modprobe.d and LoadAlone=; softdep loops.

Real socket activation, real libkmod over the real Debian module tree on real erofs loop mounts and
tmpfs, a real journald. Only finit_module/delete_module are faked (test/shim), over a private
/sys/module shared by every daemon of this test: each case uses module names of its own."""

import collections
import functools
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
LOAD = M + "Load"
CONF = "/etc/modgate/modgate.conf"
# The summaries of refusals counted rather than recorded (docs/journal.md).
REFUSALS_COUNTED = "bb53ea26cd364226b2ce5d3c142f7111"

# What the daemon says, as a user reads it (trust.c).
EXDEV_REASON = "path leaves the trusted root (absolute or escaping symlink, '..', or a mount crossing)"
ELOOP_REASON = "path contains a magic link or a symlink loop"
NOT_BENEATH = "file is not beneath a trusted root"
NOT_REGULAR = "not a regular file"
NOT_ROOT = "file is not owned by root"
WRITABLE = "file is writable by group or others"
# What the default evidence says of a file on a writable tmpfs with no manifest.
WRITABLE_SB = ("verity: the tmpfs file system is not on a block device, and the file has no fs-verity (tmpfs has "
               "none); read-only: file system type tmpfs is never "
               "read-only evidence; manifest: no manifest to check against: /var/lib/modgate/manifests/%s.sha256: "
               "No such file or directory" % os.uname().release)
NOT_NORMALIZED = "path is not normalized (contains '//', '.' or '..')"

ALONE_DELAY_MS = 1500   # a module's init in the LoadAlone= case: loads that may overlap do


def write_conf(text):
    """/etc/modgate/modgate.conf with this text, or none. Daemons read it when they start (at their
    first connection) and at a reload."""
    if text is None:
        if os.path.exists(CONF):
            os.unlink(CONF)
        return
    os.makedirs(os.path.dirname(CONF), exist_ok=True)
    with open(CONF, "w") as f:
        f.write(text)
    os.chmod(CONF, 0o644)


def load_path(d, path, **extra):
    return d.call(LOAD, dict(path=path, **extra))


def finit_names(d):
    return [r["name"] for r in h.finit_records(d.shim_records())]


def finit_of(d, name):
    recs = [r for r in h.finit_records(d.shim_records()) if r["name"] == name]
    assert len(recs) == 1, "expected one finit_module of %s, got %s" % (name, recs)
    return recs[0]


def devno(path):
    st = os.stat(path)
    return "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))


wait_for = functools.partial(h.wait_for, timeout=20)


def denied_entry(name, path, reason, errno_name):
    errnos = {"EPERM": 1, "ENXIO": 6, "EXDEV": 18, "ELOOP": 40}
    return {"name": name, "path": path, "outcome": "denied", "role": "requested", "reason": reason,
            "errno": errnos[errno_name], "errnoName": errno_name}


def loaded_entry(name, path, role="requested"):
    return {"name": name, "path": path, "outcome": "loaded", "role": role}


def copy_module(src, dst, mode=0o644, uid=0, gid=0):
    """src at dst, naming itself as dst's file name says (the daemon refuses a file that names
    another module than the one asked for)."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if h.module_name(src) == h.module_name(dst):
        shutil.copyfile(src, dst)
    else:
        with open(dst, "wb") as f:
            f.write(h.module_bytes_named(src, h.module_name(dst)))
    os.chown(dst, uid, gid)
    os.chmod(dst, mode)


def erofs(stage, work, name):
    """stage as a read-only erofs image mounted at work/name (mkfs.erofs keeps owner, mode, symlinks
    and special files)."""
    image = os.path.join(work, name + ".erofs")
    h.run("mkfs.erofs", "--quiet", image, stage)
    mnt = os.path.join(work, name)
    os.makedirs(mnt, exist_ok=True)
    h.run("mount", "-t", "erofs", "-o", "ro,loop", image, mnt)
    return mnt


def copy_index(tree, dst):
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(tree):
        if f.startswith("modules."):
            shutil.copy2(os.path.join(tree, f), os.path.join(dst, f))


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    kver = os.path.basename(tree)
    deps = h.parse_modules_dep(tree)
    work = tempfile.mkdtemp(prefix="modgate-roots-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    print("# module tree: %s" % tree, flush=True)
    started = time.monotonic()

    # Modules with no dependency and no softdep, each used by one case only.
    pool = h.independent_modules(tree, "kernel/drivers/net/", exclude={"dummy"})
    dir_counts = collections.Counter(os.path.dirname(p) for p, _ in deps.values())
    own_dir = [n for n in pool if dir_counts[os.path.dirname(deps[n][0])] == 1]
    ESC_DIR = own_dir[0]        # its directory is replaced by a symlink out of the root
    pool = [n for n in pool if n != ESC_DIR]
    (NAME_FIRST, ESC_REL, ESC_PROC, ESC_LOOP, MAGIC, W_MOD, TRAIL, *pool) = pool
    S = pool[:10]               # softdep loops
    ALONE, *ALONE_OTHERS = pool[10:17]
    ROOT_MODS = pool[17:19]     # in the image that is / for the chrooted daemons
    # Its options come from modprobe.d (not dummy: systemd's own modprobe.d sets numdummies=0 for it).
    OPT = pool[19]
    # Modules with a few dependencies (none of them used elsewhere, none with softdeps): a request by
    # path for such a file in the index gets the dependencies and options the index has for it.
    used = {ESC_DIR, NAME_FIRST, ESC_REL, ESC_PROC, ESC_LOOP, MAGIC, W_MOD, TRAIL, *pool,     # all of them
            "dummy", "vxlan", "udp_tunnel", "ip6_udp_tunnel"}
    softdep_names = h.parse_modules_softdep(tree)
    with_deps = []
    for n, (p, dl) in sorted(deps.items()):
        closure = {n, *dl}
        if p.startswith("kernel/drivers/net/") and 1 <= len(dl) <= 3 and not closure & (used | softdep_names):
            with_deps.append(n)
            used |= closure
    DEP_ROOT, DEP_TRAIL = with_deps[:2]
    # The file the mg* modules are made of: a module with no dependency and a name long enough
    # for each of theirs (copy_module renames it inside).
    dummy_src = os.path.join(tree, deps["nls_iso8859_13"][0])

    # modprobe.d for every daemon: options for case 7a, softdep loops for case 8.
    modprobe_conf = "/etc/modprobe.d/modgate-test.conf"
    softdeps = ("softdep {0} pre: {0}\n"
                "softdep {1} pre: {2}\nsoftdep {2} pre: {1}\n"
                "softdep {3} pre: {4}\nsoftdep {4} pre: {5}\nsoftdep {5} pre: {3}\n"
                "softdep {6} pre: {7}\nsoftdep {7} post: {6}\n"
                "softdep {8} post: {9}\nsoftdep {9} post: {8}\n"
                "softdep udp_tunnel pre: vxlan\nsoftdep ip6_udp_tunnel pre: vxlan\n").format(*S)
    h.mount_modprobe_d("options %s mgopt=3\n" % OPT + softdeps)

    # --- the main image: the real tree at main/tree, with a way out of it for each escape -------
    smain = os.path.join(work, "stage-main")
    h.copy_tree(tree, os.path.join(smain, "tree"))
    mnt_main = os.path.join(work, "main")
    A = os.path.join(mnt_main, "tree")
    sA = os.path.join(smain, "tree")
    outside = os.path.join(smain, "outside")
    os.makedirs(outside)

    # A relative symlink that climbs out of the root with '..' to a file on the same erofs.
    rel = deps[ESC_REL][0]
    os.rename(os.path.join(sA, rel), os.path.join(outside, os.path.basename(rel)))
    os.symlink(os.path.relpath(os.path.join(outside, os.path.basename(rel)), os.path.dirname(os.path.join(sA, rel))),
               os.path.join(sA, rel))
    # A symlinked directory: the module's own directory, moved out and linked to.
    rel = deps[ESC_DIR][0]
    d = os.path.dirname(rel)
    os.rename(os.path.join(sA, d), os.path.join(outside, os.path.basename(d)))
    os.symlink(os.path.join(mnt_main, "outside", os.path.basename(d)), os.path.join(sA, d))
    # A symlink through /proc/self/root to the very file, moved elsewhere in the root.
    rel = deps[ESC_PROC][0]
    os.makedirs(os.path.join(sA, "extra/moved"))
    os.rename(os.path.join(sA, rel), os.path.join(sA, "extra/moved", os.path.basename(rel)))
    proc_target = "/proc/self/root" + os.path.join(A, "extra/moved", os.path.basename(rel))
    os.symlink(proc_target, os.path.join(sA, rel))
    # A symlink loop.
    rel = deps[ESC_LOOP][0]
    os.unlink(os.path.join(sA, rel))
    os.symlink(os.path.basename(rel) + ".loop", os.path.join(sA, rel))
    os.symlink(os.path.basename(rel), os.path.join(sA, rel + ".loop"))
    # Files that are no module file: a FIFO, a socket, a device node.
    odd = os.path.join(sA, "extra/odd")
    os.makedirs(odd)
    os.mkfifo(os.path.join(odd, "mgfifo.ko"), 0o644)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(odd, "mgsock.ko"))
    s.close()
    os.chmod(os.path.join(odd, "mgsock.ko"), 0o644)
    os.mknod(os.path.join(odd, "mgnull.ko"), stat.S_IFCHR | 0o644, os.makedev(1, 3))
    # Owner and mode: only these differ from a file that loads.
    own = os.path.join(sA, "extra/owner")
    copy_module(dummy_src, os.path.join(own, "mguid.ko.xz"), uid=1000)
    copy_module(dummy_src, os.path.join(own, "mggw.ko.xz"), mode=0o664)
    copy_module(dummy_src, os.path.join(own, "mgow.ko.xz"), mode=0o646)
    copy_module(dummy_src, os.path.join(own, "mggid.ko.xz"), gid=1000)
    copy_module(dummy_src, os.path.join(own, "mgok.ko.xz"))
    copy_module(dummy_src, os.path.join(own, "mgro.ko.xz"), mode=0o400)
    os.makedirs(os.path.join(sA, "extra/inner"))             # where another erofs is mounted
    for name in ("mgmid", "mgfree", "mgtrail"):
        copy_module(dummy_src, os.path.join(sA, "extra", name + ".ko.xz"))
    # Beside the root, sharing its name as a prefix: main/tree2.
    copy_module(dummy_src, os.path.join(smain, "tree2", "mgsibling.ko.xz"))
    erofs(smain, work, "main")
    shutil.rmtree(smain)

    # A separate erofs mounted inside the main root.
    sinner = os.path.join(work, "stage-inner")
    copy_module(dummy_src, os.path.join(sinner, "mginner.ko.xz"))
    copy_module(dummy_src, os.path.join(sinner, "mginnerout.ko.xz"))
    inner = os.path.join(A, "extra/inner")
    h.run("mkfs.erofs", "--quiet", os.path.join(work, "inner.erofs"), sinner)
    h.run("mount", "-t", "erofs", "-o", "ro,loop", os.path.join(work, "inner.erofs"), inner)

    # A second root with an index of its own (depmod), holding modules the main tree does not have.
    ssecond = os.path.join(work, "stage-second")
    sB = os.path.join(ssecond, "lib/modules", kver)
    copy_module(dummy_src, os.path.join(sB, "extra/mgonlyb.ko.xz"))
    copy_module(dummy_src, os.path.join(sB, "extra/mgpathb.ko.xz"))
    for f in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if os.path.exists(os.path.join(tree, f)):
            shutil.copy2(os.path.join(tree, f), os.path.join(sB, f))
    h.run("depmod", "-b", ssecond, kver)
    mnt_second = erofs(ssecond, work, "second")
    B = os.path.join(mnt_second, "lib/modules", kver)

    # Nowhere trusted.
    elsewhere = os.path.join(work, "elsewhere")
    copy_module(dummy_src, os.path.join(elsewhere, "mgnowhere.ko.xz"))

    # --- a writable root: tmpfs, with a tmpfs mounted inside it ----------------------------------
    W = os.path.join(work, "writable")
    os.makedirs(W)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", W)
    copy_index(tree, W)
    copy_module(os.path.join(tree, deps[W_MOD][0]), os.path.join(W, deps[W_MOD][0]))
    for name, mode, uid in (("mgcache", 0o666, 0), ("mgcache2", 0o666, 0), ("mgcopy", 0o666, 0),
                            ("mguidw", 0o644, 1000), ("mgrwok", 0o644, 0)):
        copy_module(dummy_src, os.path.join(W, "extra", name + ".ko.xz"), mode=mode, uid=uid)
    copy_module(dummy_src, os.path.join(W, "extra/good/mgcopy.ko.xz"))
    W_SUB = os.path.join(W, "extra/sub")
    os.makedirs(W_SUB)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", W_SUB)
    copy_module(dummy_src, os.path.join(W_SUB, "mgsub.ko.xz"))

    h.mount_sys_module()
    journal = h.Journal()

    # --- an erofs image that is / for chrooted daemons: the module tree's index and two modules at
    # its top, empty directories where the system's own are bound -------------------------------
    srootfs = os.path.join(work, "stage-rootfs")
    copy_index(tree, srootfs)
    for n in [*ROOT_MODS, DEP_ROOT, *deps[DEP_ROOT][1]]:
        copy_module(os.path.join(tree, deps[n][0]), os.path.join(srootfs, deps[n][0]))
    # What the daemon needs of the system: its libraries, /etc (modprobe.d, modgate.conf), the kernel's
    # file systems, /run (sockets, journal), /tmp (this test's files), and where the build is.
    needed = {"usr", "etc", "proc", "sys", "dev", "run", "tmp", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}
    for v in ("MODGATED", "MODGATE_SHIM", "MODGATE_BUILD_ROOT"):
        needed.add(os.path.abspath(os.environ[v]).split("/")[1])
    bound = []
    for entry in sorted(needed):
        p = os.path.join("/", entry)
        if os.path.islink(p):
            os.symlink(os.readlink(p), os.path.join(srootfs, entry))
        elif os.path.isdir(p):
            os.makedirs(os.path.join(srootfs, entry))
            bound.append(entry)
    h.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/mnt")
    rootfs = "/mnt/rootfs"
    os.makedirs(rootfs)
    h.run("mkfs.erofs", "--quiet", os.path.join(work, "rootfs.erofs"), srootfs)
    h.run("mount", "-t", "erofs", "-o", "ro,loop", os.path.join(work, "rootfs.erofs"), rootfs)
    for entry in bound:
        h.run("mount", "--rbind", os.path.join("/", entry), os.path.join(rootfs, entry))
    chroot = ("/usr/sbin/chroot", rootfs)
    print("# set-up took %.1f s" % (time.monotonic() - started), flush=True)

    t = h.Tap()
    daemons = []

    # These cases are about where files are opened and which root holds them, not about what
    # vouches for their bytes (test-load.py and test-origin.py): their daemons accept ownership
    # alone unless a case says otherwise, so that any root here can serve a file.
    def start(name, args=(), conf=None, env=None, wrapper=(), evidence="ownership"):
        if evidence:
            conf = "[Trust]\nEvidence=%s\n%s" % (evidence, conf or "")
        write_conf(conf)
        try:
            d = h.Daemon(work, name, None, extra_env=env, args=args, wrapper=wrapper)
            daemons.append(d)
            assert d.activate(), "daemon %s did not send READY=1:\n%s" % (name, d.stderr_text())
        finally:
            write_conf(None)
        return d

    def reset_for(names):
        """Forgets these modules in /sys/module, as if unloaded, so that they load again."""
        for n in names:
            shutil.rmtree("/sys/module/" + n, ignore_errors=True)

    def records(d, module, **match):
        return journal.records(MODGATE_MODULE=module, _PID=str(d.pid), **match)

    def counted(d, module):
        """How many denials of module the summaries of refusals counted (repeats not recorded)."""
        recs = journal.records(MESSAGE_ID=REFUSALS_COUNTED, MODGATE_OUTCOME="denied", _PID=str(d.pid))
        return sum(int(n) for r in recs for k, n in re.findall(r"([^ ,=]+)=(\d+)", r.get("MODGATE_TOP", ""))
                   if k.endswith(module) or k.endswith("/%s.ko.xz" % module))

    def only_record(d, module):
        recs = records(d, module)
        assert len(recs) == 1, "expected one journal record of %s, got %s" % (module, recs)
        return recs[0]

    def assert_denied_record(d, name, path, reason, errno_name, origin=True):
        r = only_record(d, name)
        assert r["MESSAGE_ID"] == "3c67f0aec4794a73a35a7cb128a9d622", r
        assert (r["MODGATE_OUTCOME"], r["MODGATE_PATH"], r["MODGATE_REASON"], r["MODGATE_ERRNO_NAME"]) == (
            "denied", path, reason, errno_name), r
        assert ("MODGATE_INODE" in r) == origin and "MODGATE_CACHED" not in r, r
        return r

    def refused(d, name, path, reason, errno_name, by_path=True, origin=True, **extra):
        """A Load of one module that is refused for reason, with no finit_module, and its record."""
        n = len(finit_names(d))
        reply = load_path(d, path, **extra) if by_path else d.load(name)
        p = h.error_of(reply, "UntrustedOrigin")
        assert p == {"module": name, "path": path, "reason": reason,
                     "modules": [denied_entry(name, path, reason, errno_name)]}, p
        assert len(finit_names(d)) == n, "finit_module was called: %s" % d.shim_records()[n:]
        return assert_denied_record(d, name, path, reason, errno_name, origin)

    def loads(d, name, path, by_path=True):
        """A Load of one module that loads it from path: the reply, and the file the kernel got."""
        p = h.ok(load_path(d, path) if by_path else d.load(name))
        assert p == {"modules": [loaded_entry(name, path)]}, p
        rec = finit_of(d, name)
        assert rec["path"] == os.path.realpath(path) and rec["dev"] == devno(path), rec
        assert rec["ino"] == os.stat(path).st_ino, rec
        return rec

    def loads_with_deps(d, name, root, path_root):
        """A Load by path of a file in the index: planned from the index, dependencies first."""
        path = os.path.join(path_root, deps[name][0])
        p = h.ok(load_path(d, path))
        assert p["modules"][-1] == loaded_entry(name, path), p
        assert sorted((m["name"], m["path"], m["role"], m["outcome"]) for m in p["modules"][:-1]) == sorted(
            (n, os.path.join(path_root, deps[n][0]), "dependency", "loaded") for n in deps[name][1]), p
        got = [r["name"] for r in h.finit_records(d.shim_records())]
        assert sorted(got[-len(p["modules"]):]) == sorted([name, *deps[name][1]]) and got[-1] == name, got
        assert [r["path"] for r in h.finit_records(d.shim_records())][-1] == os.path.join(root, deps[name][0])

    modgated = os.environ["MODGATED"]

    def test_config(*args, conf):
        write_conf(conf)
        try:
            return h.run(modgated, "-n", *args, capture_output=True, text=True, check=False)
        finally:
            write_conf(None)

    # --- 1: several roots ------------------------------------------------------------------------

    def case_config_roots():
        res = test_config(conf="[Trust]\nTrustedRoot=%s %s\n" % (A, B))
        assert res.returncode == 0 and "TrustedRoot=%s %s" % (A, B) in res.stdout.splitlines(), res
        res = test_config(conf="[Trust]\nTrustedRoot=%s\nTrustedRoot=%s /\n" % (A, B))
        assert "TrustedRoot=%s %s /" % (A, B) in res.stdout.splitlines(), res
        # The option is not a list: a repeated --trusted-root= keeps only the last, and replaces the
        # file's list.
        res = test_config("--trusted-root=" + B, "--trusted-root=" + A, conf="[Trust]\nTrustedRoot=/ %s\n" % B)
        assert res.returncode == 0 and "TrustedRoot=" + A in res.stdout.splitlines(), res
        for bad in (A + "/", A + "/../tree", mnt_main + "//tree", "relative/dir"):
            res = test_config(conf="[Trust]\nTrustedRoot=%s /\n" % bad)
            why = "is not an absolute path" if bad[0] != "/" else \
                "is not a normalized path (it has '.', '..', '//' or a trailing '/')"
            assert res.returncode == 1 and res.stdout == "", res
            assert "Invalid configuration: %s:2: TrustedRoot=%s %s" % (CONF, bad, why) in res.stderr, res.stderr

    t.case("1a TrustedRoot= lists several roots; a repeated --trusted-root= keeps only the last; a root "
           "that is not normalized stops the start with file and line", case_config_roots)

    multi = None

    def case_two_roots():
        nonlocal multi
        multi = start("multi", conf="[Trust]\nTrustedRoot=%s %s\n" % (A, B))
        # Names resolve in the first root's index, and load from it.
        path = os.path.join(A, deps[NAME_FIRST][0])
        loads(multi, NAME_FIRST, path, by_path=False)
        assert only_record(multi, NAME_FIRST)["MODGATE_FSTYPE"] == "erofs"
        # The second root's index is not consulted for names ...
        p = h.error_of(multi.load("mgonlyb"), "ModuleNotFound")
        assert p == {"name": "mgonlyb"}, p
        # ... but a path beneath it loads from it.
        loads(multi, "mgpathb", os.path.join(B, "extra/mgpathb.ko.xz"))
        assert devno(B) != devno(A)
        assert "Trusted root %s (mount " % B in multi.stderr_text()

    t.case("1b two roots: names resolve in the first root's index; a path beneath the second loads from it",
           case_two_roots)

    def case_second_first():
        d = start("bfirst", conf="[Trust]\nTrustedRoot=%s %s\n" % (B, A))
        loads(d, "mgonlyb", os.path.join(B, "extra/mgonlyb.ko.xz"), by_path=False)
        p = h.error_of(d.load(NAME_FIRST), "ModuleNotFound")
        assert p == {"name": NAME_FIRST}, p

    t.case("1c listed first, the second root's own index resolves names, and the main tree's does not",
           case_second_first)

    def case_beneath_none():
        for name, path in (("mgnowhere", os.path.join(elsewhere, "mgnowhere.ko.xz")),
                           ("mgsibling", os.path.join(mnt_main, "tree2/mgsibling.ko.xz"))):
            assert os.path.isfile(path)
            refused(multi, name, path, NOT_BENEATH, "EXDEV", origin=False)

    t.case("1d a path beneath no root, or beside one with the root's name as its prefix, is refused and "
           "recorded; the file is never opened", case_beneath_none, needs=("1b",))

    def case_nested():
        mginner = os.path.join(inner, "mginner.ko.xz")
        # From the outer root alone, the inner mount is a crossing.
        refused(multi, "mginnerout", os.path.join(inner, "mginnerout.ko.xz"), EXDEV_REASON, "EXDEV", origin=False)
        # Listed as a root too, in any order, the innermost root holding the path is the one opened from.
        d = start("nested", conf="[Trust]\nTrustedRoot=%s %s %s\n" % (A, inner, os.path.join(A, "extra")))
        rec = loads(d, "mginner", mginner)
        assert rec["dev"] != devno(A), rec
        loads(d, "mgmid", os.path.join(A, "extra/mgmid.ko.xz"))
        assert only_record(d, "mginner")["MODGATE_FSTYPE"] == "erofs"

    t.case("1e nested roots: the innermost root wins, so a separate mount inside a root loads only when it "
           "is a root itself", case_nested, needs=("1b",))

    def case_no_index():
        sock = "/run/modgate/noindex.sock"
        write_conf("[Trust]\nTrustedRoot=%s %s\n" % (inner, A))
        try:
            res = h.run(modgated, "--listen=" + sock, capture_output=True, text=True, check=False,
                        env=dict(os.environ, LD_PRELOAD=os.environ["MODGATE_SHIM"]), timeout=60)
        finally:
            write_conf(None)
        assert res.returncode == 1, res
        assert "Failed to load the module index of %s: No such file or directory" % inner in res.stderr, res.stderr
        assert not os.path.exists(sock)

    t.case("1f a first root without a module index stops the start, naming it", case_no_index)

    # --- 2: TrustedRoot=/ ------------------------------------------------------------------------

    def case_slash():
        d = start("slash", conf="[Trust]\nTrustedRoot=/\n", wrapper=chroot)
        assert "Trusted root / (mount " in d.stderr_text(), d.stderr_text()
        by_name, by_path = ROOT_MODS
        p = h.ok(d.load(by_name))
        assert p == {"modules": [loaded_entry(by_name, "/" + deps[by_name][0])]}, p
        p = h.ok(load_path(d, "/" + deps[by_path][0]))
        assert p == {"modules": [loaded_entry(by_path, "/" + deps[by_path][0])]}, p
        for n in ROOT_MODS:
            rec = finit_of(d, n)
            inside = os.path.join(rootfs, deps[n][0])
            assert rec["path"] == "/" + deps[n][0] and rec["dev"] == devno(inside), rec
            assert rec["ino"] == os.stat(inside).st_ino, rec
            r = only_record(d, n)
            assert (r["MODGATE_OUTCOME"], r["MODGATE_FSTYPE"], r["MODGATE_SUPERBLOCK_RO"]) == (
                "loaded", "erofs", "1"), r
        # A path request for a file in the index is planned from the index: its dependencies first.
        loads_with_deps(d, DEP_ROOT, "/", "/")
        # A trusted file on another mount beneath / (the main erofs, through the bound /tmp) is a crossing.
        refused(d, MAGIC, os.path.join(A, deps[MAGIC][0]), EXDEV_REASON, "EXDEV", origin=False)

    t.case("2a TrustedRoot=/ (chrooted into an erofs image): a name and an absolute path load from /, a path "
           "in the index with its dependencies; a trusted file on another mount beneath / is a crossing", case_slash)

    def case_trailing_slashes():
        d = start("slashes", args=("--trusted-root=///",), wrapper=chroot)
        reset_for(ROOT_MODS)
        n = ROOT_MODS[0]
        # The paths in the reply are the ones a request by path names: no '//'.
        p = h.ok(d.load(n))
        assert p == {"modules": [loaded_entry(n, "/" + deps[n][0])]}, p
        p = h.ok(load_path(d, "/" + deps[ROOT_MODS[1]][0]))
        assert p == {"modules": [loaded_entry(ROOT_MODS[1], "/" + deps[ROOT_MODS[1]][0])]}, p
        reset_for([DEP_ROOT, *deps[DEP_ROOT][1]])
        loads_with_deps(d, DEP_ROOT, "/", "/")

        d = start("trailing", args=("--trusted-root=" + A + "//",))
        loads(d, TRAIL, os.path.join(A, deps[TRAIL][0]), by_path=False)
        loads(d, "mgtrail", os.path.join(A, "extra/mgtrail.ko.xz"))
        loads_with_deps(d, DEP_TRAIL, A, A)

    t.case("2b --trusted-root=/// and a root given with trailing slashes work: reply paths have no '//', and a "
           "path request for an indexed file gets its dependencies", case_trailing_slashes)

    # --- 3: RequireReadOnlySuperblock= -----------------------------------------------------------

    rw_lax = None

    def case_superblock():
        nonlocal rw_lax
        path = os.path.join(W, deps[W_MOD][0])
        strict = start("rw-strict", args=("--trusted-root=" + W,), evidence=None)
        r = refused(strict, W_MOD, path, WRITABLE_SB, "EPERM", by_path=False)
        assert (r["MODGATE_FSTYPE"], r["MODGATE_SUPERBLOCK_RO"]) == ("tmpfs", "0"), r

        res = test_config(conf="[Trust]\nRequireReadOnlySuperblock=no\n")
        assert "RequireReadOnlySuperblock=no" in res.stdout.splitlines(), res
        rw_lax = start("rw-lax", args=("--trusted-root=" + W,), conf="[Trust]\nRequireReadOnlySuperblock=no\n",
                       evidence=None)
        assert ("Trusted root %s: module files whose origin is not verified are trusted when root owns them "
                "(Evidence=ownership or RequireReadOnlySuperblock=no)." % W) in rw_lax.stderr_text(), \
            rw_lax.stderr_text()
        loads(rw_lax, W_MOD, path, by_path=False)
        r = only_record(rw_lax, W_MOD)
        assert (r["MODGATE_OUTCOME"], r["MODGATE_FSTYPE"], r["MODGATE_SUPERBLOCK_RO"], r["MODGATE_MOUNT_RO"]) == (
            "loaded", "tmpfs", "0", "0"), r
        loads(rw_lax, "mgrwok", os.path.join(W, "extra/mgrwok.ko.xz"))

    t.case("3 a module on a writable tmpfs is refused by default; with RequireReadOnlySuperblock=no it loads "
           "and its record says the superblock is writable", case_superblock)

    # --- 4: owner and mode -----------------------------------------------------------------------

    main_d = h.Lazy(lambda: start("main", args=("--trusted-root=" + A, "--workers=1")))

    def case_owner_mode():
        own = os.path.join(A, "extra/owner")
        assert os.stat(os.path.join(own, "mguid.ko.xz")).st_uid == 1000
        for name, reason in (("mguid", NOT_ROOT), ("mggw", WRITABLE), ("mgow", WRITABLE)):
            r = refused(main_d, name, os.path.join(own, name + ".ko.xz"), reason, "EPERM")
            assert (r["MODGATE_FSTYPE"], r["MODGATE_SUPERBLOCK_RO"]) == ("erofs", "1"), r
        # The same bytes on the same filesystem load when only root owns them and only root may write;
        # the group owner does not count, and neither does a mode that root alone can read.
        for name in ("mgok", "mggid", "mgro"):
            loads(main_d, name, os.path.join(own, name + ".ko.xz"))
        # On a writable root that trusts writable filesystems, the owner still counts.
        refused(rw_lax, "mguidw", os.path.join(W, "extra/mguidw.ko.xz"), NOT_ROOT, "EPERM")

    t.case("4 a module file not owned by root, or writable by group or others, is refused with its reason "
           "(erofs, and a tmpfs root with RequireReadOnlySuperblock=no); root-owned copies load", case_owner_mode,
           needs=("3",))

    # --- 5: escapes ------------------------------------------------------------------------------

    def case_relative_escape():
        path = os.path.join(A, deps[ESC_REL][0])
        assert os.readlink(path).startswith("../"), os.readlink(path)
        assert os.path.isfile(path), "the link's target is missing"
        refused(main_d, ESC_REL, path, EXDEV_REASON, "EXDEV", by_path=False, origin=False)

    def case_directory_escape():
        path = os.path.join(A, deps[ESC_DIR][0])
        assert os.path.islink(os.path.dirname(path)) and os.path.isfile(path)
        refused(main_d, ESC_DIR, path, EXDEV_REASON, "EXDEV", by_path=False, origin=False)

    def case_proc_links():
        path = os.path.join(A, deps[ESC_PROC][0])
        assert os.readlink(path) == proc_target and os.path.isfile(path)
        refused(main_d, ESC_PROC, path, EXDEV_REASON, "EXDEV", by_path=False, origin=False)
        path = os.path.join(A, deps[ESC_LOOP][0])
        assert os.path.islink(path)
        refused(main_d, ESC_LOOP, path, ELOOP_REASON, "ELOOP", by_path=False, origin=False)
        # A magic link on the path itself: a root on procfs, and /proc/self/root in the request.
        d = start("proc", conf="[Trust]\nTrustedRoot=%s /proc/self\n" % A)
        real = os.path.join(A, deps[MAGIC][0])
        refused(d, MAGIC, "/proc/self/root" + real, ELOOP_REASON, "ELOOP", origin=False)
        # The file itself is fine.
        loads(d, MAGIC, real)

    def case_dotdot():
        n = len(finit_names(main_d))
        for path in (os.path.join(A, "kernel/../", deps[NAME_FIRST][0]),
                     A + "/../outside/" + os.path.basename(deps[ESC_REL][0]),
                     A + "/./extra/owner/mgok.ko.xz", A + "//extra/owner/mgok.ko.xz",
                     A + "/extra/owner/../owner/mgok.ko.xz"):
            p = h.error_of(load_path(main_d, path), "InvalidPath")
            assert p == {"path": path, "reason": NOT_NORMALIZED}, p
            assert journal.records(MODGATE_REQUEST_PATH=path) == []
        assert len(finit_names(main_d)) == n

    def case_mount_inside():
        path = os.path.join(W_SUB, "mgsub.ko.xz")
        refused(rw_lax, "mgsub", path, EXDEV_REASON, "EXDEV", origin=False)
        # The file itself passes: with the inner mount as a root of its own, it loads.
        d = start("rw-nested", conf="[Trust]\nTrustedRoot=%s %s\nRequireReadOnlySuperblock=no\n" % (W, W_SUB))
        loads(d, "mgsub", path)

    def case_special_files():
        odd = os.path.join(A, "extra/odd")
        assert stat.S_ISFIFO(os.lstat(os.path.join(odd, "mgfifo.ko")).st_mode)
        # With one worker, an open that blocked would hold it: the request would get Timeout, and so
        # would every later one.
        start_t = time.monotonic()
        r = refused(main_d, "mgfifo", os.path.join(odd, "mgfifo.ko"), NOT_REGULAR, "EPERM", timeoutUSec=20_000_000)
        print("# FIFO refused after %.0f ms" % ((time.monotonic() - start_t) * 1000))
        assert (r["MODGATE_FSTYPE"], r["MODGATE_SUPERBLOCK_RO"]) == ("erofs", "1"), r
        assert stat.S_ISSOCK(os.lstat(os.path.join(odd, "mgsock.ko")).st_mode)
        # A socket cannot even be opened (ENXIO): that is no less a verdict on the file.
        refused(main_d, "mgsock", os.path.join(odd, "mgsock.ko"), NOT_REGULAR, "ENXIO", origin=False,
                timeoutUSec=20_000_000)
        assert stat.S_ISCHR(os.lstat(os.path.join(odd, "mgnull.ko")).st_mode)
        refused(main_d, "mgnull", os.path.join(odd, "mgnull.ko"), NOT_REGULAR, "EPERM", timeoutUSec=20_000_000)
        # The only worker is free.
        path = os.path.join(A, "extra/mgfree.ko.xz")
        p = h.ok(main_d.call(LOAD, {"path": path, "timeoutUSec": 20_000_000}))
        assert p == {"modules": [loaded_entry("mgfree", path)]}, p

    t.case("5a a relative symlink that leaves the root with '..' is refused, though its target is trusted",
           case_relative_escape)
    t.case("5b a symlinked directory that leads out of the root is refused", case_directory_escape)
    t.case("5c a symlink through /proc/self/root is refused as leaving the root, a symlink loop and a magic "
           "link in the path as such", case_proc_links)
    t.case("5d a path with '..', '.' or '//' is InvalidPath before anything is opened or recorded", case_dotdot)
    t.case("5e a filesystem mounted inside a root is refused (RESOLVE_NO_XDEV) although its file passes",
           case_mount_inside, needs=("3",))
    t.case("5f a FIFO, a socket and a device node named .ko are refused as not regular files, without "
           "blocking the only worker", case_special_files)

    # --- 6: remembered denials -------------------------------------------------------------------

    def case_remembered():
        path = os.path.join(W, "extra/mgcache.ko.xz")
        refused(rw_lax, "mgcache", path, WRITABLE, "EPERM")
        os.chmod(path, 0o644)
        # Fixed, but the answer is the remembered one: the file is not opened again (no origin in the
        # record), and nothing is loaded.
        n = len(finit_names(rw_lax))
        p = h.error_of(load_path(rw_lax, path), "UntrustedOrigin")
        assert p == {"module": "mgcache", "path": path, "reason": WRITABLE,
                     "modules": [denied_entry("mgcache", path, WRITABLE, "EPERM")]}, p
        # The repeat is counted, not recorded (a flood of it must not crowd out others' records);
        # the summary written at the reload below says so.
        recs = records(rw_lax, "mgcache")
        assert [(r["MODGATE_OUTCOME"], r.get("MODGATE_CACHED"), "MODGATE_INODE" in r) for r in recs] == [
            ("denied", None, True)], recs
        assert len(finit_names(rw_lax)) == n
        # Remembered per file: the same module from another, good file loads ...
        copy = os.path.join(W, "extra/mgcopy.ko.xz")
        refused(rw_lax, "mgcopy", copy, WRITABLE, "EPERM")
        loads(rw_lax, "mgcopy", os.path.join(W, "extra/good/mgcopy.ko.xz"))
        # ... and once it is live, asking for the refused file answers already_loaded without looking.
        p = h.ok(load_path(rw_lax, copy))
        assert p == {"modules": [{"name": "mgcopy", "path": copy, "outcome": "already_loaded",
                                  "role": "requested"}]}, p
        # A reload forgets: the file is looked at again, and now it loads.
        h.reload(rw_lax)
        assert rw_lax.wait_notify("RELOADING=1"), "no RELOADING=1"
        assert rw_lax.wait_ready(), "no READY=1 after the reload"
        # RequireReadOnlySuperblock=no is gone from the files now; it counts only at the next start.
        assert "the trust settings ([Trust], [Root]) take effect at the next start." in rw_lax.stderr_text()
        p = h.ok(load_path(rw_lax, path))
        assert p == {"modules": [loaded_entry("mgcache", path)]}, p
        assert finit_of(rw_lax, "mgcache")["path"] == path
        assert [r["MODGATE_OUTCOME"] for r in records(rw_lax, "mgcache")] == ["denied", "loaded"]
        assert counted(rw_lax, "mgcache") == 1

    def case_index_change_forgets():
        path = os.path.join(W, "extra/mgcache2.ko.xz")
        refused(rw_lax, "mgcache2", path, WRITABLE, "EPERM")
        os.chmod(path, 0o644)
        p = h.error_of(load_path(rw_lax, path), "UntrustedOrigin")
        assert p["reason"] == WRITABLE and p["modules"][0]["outcome"] == "denied", p
        assert [r.get("MODGATE_CACHED") for r in records(rw_lax, "mgcache2")] == [None]
        # The index changes on disk (as depmod leaves it): the next request reloads it and forgets.
        dep = os.path.join(W, "modules.dep.bin")
        st = os.stat(dep)
        os.utime(dep, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        before = rw_lax.stderr_text().count("Module index changed on disk, reloaded.")
        p = h.ok(load_path(rw_lax, path))
        assert p == {"modules": [loaded_entry("mgcache2", path)]}, p
        assert rw_lax.stderr_text().count("Module index changed on disk, reloaded.") == before + 1
        assert [(r["MODGATE_OUTCOME"], r.get("MODGATE_CACHED")) for r in records(rw_lax, "mgcache2")] == [
            ("denied", None), ("loaded", None)]
        # The index change began a new count: the remembered refusal's repeat is in its summary.
        assert counted(rw_lax, "mgcache2") == 1

    t.case("6a a denial is remembered per file: fixed, the file is still refused without being opened, until "
           "a reload; a live module answers already_loaded first", case_remembered, needs=("3",))
    t.case("6b a remembered denial is forgotten when the module index changes on disk", case_index_change_forgets,
           needs=("3",))

    # --- 8: softdep loops (before 7, which rewrites modprobe.d) -----------------------------------

    def case_softdep_loops():
        d = start("soft", args=("--trusted-root=" + A, "--workers=4"))
        want = [
            (S[0], [(S[0], "requested", "loaded")]),
            (S[1], [(S[2], "softdep_pre", "loaded"), (S[1], "requested", "loaded")]),
            (S[2], [(S[1], "softdep_pre", "already_loaded"), (S[2], "requested", "already_loaded")]),
            (S[3], [(S[5], "softdep_pre", "loaded"), (S[4], "softdep_pre", "loaded"),
                    (S[3], "requested", "loaded")]),
            (S[6], [(S[7], "softdep_pre", "loaded"), (S[6], "requested", "loaded")]),
            (S[8], [(S[8], "requested", "loaded"), (S[9], "softdep_post", "loaded")]),
            # vxlan needs both: as their softdep it cannot come first, and is left out with whatever it
            # had pulled in before the loop showed.
            ("ip6_udp_tunnel", [("ip6_udp_tunnel", "requested", "loaded")]),
            ("udp_tunnel", [("udp_tunnel", "requested", "loaded")]),
        ]
        bad = []
        for name, expect in want:
            c = h.Varlink(d.address, timeout=30)
            try:
                reply = c.call(LOAD, {"name": name})
            finally:
                c.close()
            got = [(m["name"], m["role"], m["outcome"]) for m in reply.get("parameters", {}).get("modules", [])]
            if "error" in reply or got != expect:
                bad.append("%s: %s, expected %s" % (name, reply.get("error") or got, expect))
        # Asked for itself, vxlan comes after both, which are live by now.
        p = h.ok(d.load("vxlan"))
        assert sorted((m["name"], m["role"], m["outcome"]) for m in p["modules"][:-1]) == [
            ("ip6_udp_tunnel", "dependency", "already_loaded"), ("udp_tunnel", "dependency", "already_loaded")], p
        assert (p["modules"][-1]["name"], p["modules"][-1]["outcome"]) == ("vxlan", "loaded"), p
        assert not bad, "\n".join(bad)
        counts = collections.Counter(finit_names(d))
        assert counts == {n: 1 for n in (*S, "ip6_udp_tunnel", "udp_tunnel", "vxlan")}, counts
        # Each started only once what it comes after had ended.
        recs = {r["name"]: r for r in h.finit_records(d.shim_records())}
        for before, after in ((S[2], S[1]), (S[5], S[4]), (S[4], S[3]), (S[7], S[6]), (S[8], S[9]),
                              ("ip6_udp_tunnel", "vxlan"), ("udp_tunnel", "vxlan")):
            assert recs[after]["start"] >= recs[before]["end"], "%s started before %s ended" % (after, before)
        assert d.proc.poll() is None
        h.ok(d.call("org.varlink.service.GetInfo"))

    t.case("8 softdep loops (self, two, three, pre/post, post/post, over a hard dependency) are each answered "
           "at once, every module loaded once, in order", case_softdep_loops)

    # --- 7: a reload re-reads modprobe.d and LoadAlone= --------------------------------------------

    def params_handed(d):
        """Loads OPT afresh; the parameters of the reply, which must be those handed to the kernel."""
        reset_for([OPT])
        n = len(finit_names(d))
        p = h.ok(d.load(OPT))
        recs = h.finit_records(d.shim_records())[n:]
        assert [r["name"] for r in recs] == [OPT], recs
        assert p["modules"][0].get("parameters") == recs[0]["params"], (p, recs)
        return recs[0]["params"]

    def case_reload_modprobe():
        d = start("opts", args=("--trusted-root=" + A,))
        got = [params_handed(d)]
        # Edited in place: libkmod watches only the directories' mtimes, so nothing is noticed.
        with open(modprobe_conf, "w") as f:
            f.write("options %s mgopt=5\n" % OPT + softdeps)
        got.append(params_handed(d))
        h.reload(d)
        assert d.wait_notify("RELOADING=1"), "no RELOADING=1"
        assert d.wait_ready(), "no READY=1 after the reload"
        got.append(params_handed(d))
        # A file added to modprobe.d changes the directory: noticed at the next request, without a reload.
        before = d.stderr_text().count("Module index changed on disk, reloaded.")
        with open(os.path.join(os.path.dirname(modprobe_conf), "zz-more.conf"), "w") as f:
            f.write("options %s mgmore=1\n" % OPT)
        got.append(params_handed(d))
        assert got == ["mgopt=3", "mgopt=3", "mgopt=5", "mgopt=5 mgmore=1"], got
        assert d.stderr_text().count("Module index changed on disk, reloaded.") == before + 1
        recs = records(d, OPT, MODGATE_OUTCOME="loaded")
        assert [r["MODGATE_PARAMETERS"] for r in recs] == got, recs

    t.case("7a a reload re-reads modprobe.d: the next load hands the kernel the new options (an edit in place "
           "is not noticed before; a file added is noticed at the next request)", case_reload_modprobe)

    def alone_round(d, later):
        """Three loads in flight, then ALONE and then `later`; returns the shim records by name."""
        reset_for([ALONE, *ALONE_OTHERS])
        n = len(d.shim_records())
        first = ALONE_OTHERS[:3]
        conns = []
        for name in first:
            c = h.AsyncVarlink(d.address)
            c.send(LOAD, {"name": name})
            conns.append(c)
        wait_for("the first loads to start", lambda: all(h.module_state(x) == "coming" for x in first))
        for name in [ALONE] + later:
            c = h.AsyncVarlink(d.address)
            c.send(LOAD, {"name": name})
            conns.append(c)
        for c in conns:
            h.ok(c.receive())
            c.close()
        return {r["name"]: r for r in h.finit_records(d.shim_records()[n:])}, first

    def case_reload_load_alone():
        d = start("alone", args=("--trusted-root=" + A, "--workers=4"),
                  env={"MODGATE_SHIM_DELAY_MS": str(ALONE_DELAY_MS)})
        recs, first = alone_round(d, [])
        a = recs[ALONE]
        overlapped = [x for x in first if recs[x]["start"] < a["end"] and recs[x]["end"] > a["start"]]
        assert overlapped, "before the reload %s did not overlap %s: %s" % (ALONE, first, recs)

        write_conf("[Load]\nLoadAlone=%s\n" % ALONE)
        try:
            h.reload(d)
            assert d.wait_notify("RELOADING=1"), "no RELOADING=1"
            assert d.wait_ready(), "no READY=1 after the reload"
        finally:
            write_conf(None)
        later = ALONE_OTHERS[3:]
        recs, first = alone_round(d, later)
        a = recs[ALONE]
        others = [recs[x] for x in first + later]
        overlapping = [r["name"] for r in others if r["start"] < a["end"] and r["end"] > a["start"]]
        assert not overlapping, "%s overlapped %s after the reload" % (ALONE, overlapping)
        assert a["start"] >= max(recs[x]["end"] for x in first), recs
        assert h.max_in_flight([recs[x] for x in first]) == 3, "the first loads did not overlap"
        print("# %s alone for %.0f ms after the reload; before it, it overlapped %s"
              % (ALONE, (a["end"] - a["start"]) / 1e6, overlapped))

    t.case("7b a reload applies LoadAlone= from modgate.conf at once: that module no longer overlaps others",
           case_reload_load_alone)

    # --- teardown --------------------------------------------------------------------------------

    def case_clean_exit():
        bad = []
        for d in daemons:
            if any(r["call"] == "init_module" for r in d.shim_records()):
                bad.append("%s called init_module" % d.address)
            alive = d.proc.poll() is None
            d.stop()
            if not alive or d.proc.returncode != 0:
                bad.append("%s %s with %s:\n%s" % (d.address, "exited" if alive else "had died", d.proc.returncode,
                                                    d.stderr_text()[-3000:]))
        assert not bad, "\n".join(bad)

    t.case("every daemon ran to the end, called no init_module, and exits 0 on SIGTERM", case_clean_exit,
           always=True)
    t.run()

    for d in daemons:
        d.stop()
    journal.stop()
    print("# whole run took %.1f s" % (time.monotonic() - started))
    if t.failed or os.environ.get("MODGATE_TEST_VERBOSE"):
        h.dump_stderr(daemons, 30)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
