# SPDX-License-Identifier: LGPL-2.1-or-later
"""Builds the VM tier's guest from Debian's packages and caches it outside the source tree.

Five layers, each cached under its own key so that only what changed is rebuilt:

  base     mmdebstrap of Debian 13 with test/vm/guest/packages      (about half a minute)
  modules  the build root's /usr/lib/modules/$KVER as an erofs image with its dm-verity hash
           tree appended
  initrd   busybox, veritysetup with its libraries, test/vm/guest/initrd-init and the few
           modules needed to mount the root and the verity volume
  root     an ext4 image: base + test/vm/guest/rootfs + modgate's `meson install` + the module
           tree as plain files, for boots that want it on the writable root (a few seconds)
  stock    the same without modgate, for scenarios that install its Debian package (IMAGE = "stock")

A key hashes the layer's inputs together with the source of the function that builds it, so an
edit to one step of this file rebuilds that step only. The kernel is the build root's own
/boot/vmlinuz-$KVER, the same package whose modules tree the integration tier uses.
"""

import fcntl
import glob
import hashlib
import inspect
import json
import os
import shutil
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.join(HERE, "guest")
SUITE = "trixie"
CACHE = os.environ.get("MODGATE_VM_CACHE", "/var/cache/modgate/vm")
KEEP = 2        # entries kept per layer, so that a run still using the previous one keeps it

# What the initramfs loads: the root disk and its file system, and the verity volume. crc32c is
# first because ext4 and libcrc32c ask the crypto API for it, and nothing can modprobe it there.
INITRD_MODULES = ["crc32c_generic", "virtio_blk", "ext4", "dm_verity", "erofs"]

# Programs of the build that only tests use, copied to /usr/lib/modgate-vm where built.
TEST_PROGRAMS = ["src/daemon/modgated-test-wrong-hash"]
# Where the root image keeps its copy of the module tree (see build_root).
WRITABLE_TREE = "/usr/lib/modgate-vm/modules"

ROOT_SERIAL = "modgate-root"
MODULES_SERIAL = "modgate-modules"


class ImageError(Exception):
    pass


def log(msg):
    print("image: " + msg, file=sys.stderr, flush=True)


def run(*args, **kwargs):
    try:
        return subprocess.run(list(args), check=True, **kwargs)
    except subprocess.CalledProcessError as e:
        out = e.stderr or e.stdout or b""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        raise ImageError("%s failed with %s\n%s" % (" ".join(args), e.returncode, out[-4000:])) from None


def digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tree_digest(top):
    """Names, modes, link targets and contents of everything below top."""
    h = hashlib.sha256()
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            h.update(("%s %o\0" % (os.path.relpath(p, top), st.st_mode)).encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode())
            elif stat.S_ISREG(st.st_mode):
                h.update(file_digest(p).encode())
    return h.hexdigest()[:16]


class Kernel:
    """The newest kernel of the build root with both a vmlinuz and a depmod'ed module tree."""

    def __init__(self):
        trees = sorted(os.path.dirname(p) for p in glob.glob("/usr/lib/modules/*/modules.dep.bin")
                       if os.path.exists("/boot/vmlinuz-" + os.path.basename(os.path.dirname(p))))
        if not trees:
            raise ImageError("no kernel with /boot/vmlinuz-* and a module tree in /usr/lib/modules; "
                             "tools/devroot installs linux-image-amd64")
        self.tree = trees[-1]
        self.version = os.path.basename(self.tree)
        self.vmlinuz = "/boot/vmlinuz-" + self.version
        self.id = digest(file_digest(self.vmlinuz), file_digest(os.path.join(self.tree, "modules.dep")))

    def dependencies(self):
        deps = {}
        with open(os.path.join(self.tree, "modules.dep")) as f:
            for line in f:
                path, _, rest = line.partition(":")
                deps[module_name(path)] = (path, [module_name(p) for p in rest.split()])
        return deps


def module_name(path):
    base = os.path.basename(path)
    return base[:base.index(".ko")].replace("-", "_")


def mirror():
    m = os.environ.get("MODGATE_MIRROR")
    if m:
        return m
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            with open(path) as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 3 and w[0] == "deb" and "security" not in w[1]:
                        return w[1]
        except FileNotFoundError:
            pass
    return "http://deb.debian.org/debian"


def packages():
    with open(os.path.join(GUEST, "packages")) as f:
        return [w for line in f for w in line.split("#", 1)[0].split()]


def build_base(out):
    excludes = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*"]
    args = ["mmdebstrap", "--mode=root", "--variant=essential", "--include=" + ",".join(packages())]
    args += ["--dpkgopt=path-exclude=" + p for p in excludes]
    args += ["--dpkgopt=path-include=/usr/share/doc/*/copyright", SUITE, out, mirror()]
    run(*args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def build_modules(out, kernel):
    image = os.path.join(out, "modules.img")
    run("mkfs.erofs", "--quiet", "--all-root", "-T0", image, kernel.tree)
    # The hash tree goes right after the file system, in the same file: one disk for the guest.
    offset = os.path.getsize(image)
    hashfile = os.path.join(out, "roothash")
    run("veritysetup", "format", "--hash-offset=%d" % offset, "--root-hash-file=" + hashfile, image, image,
        stdout=subprocess.PIPE)
    with open(hashfile) as f:
        roothash = f.read().strip()
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"roothash": roothash, "offset": offset}, f)


def initrd_module_order(kernel):
    deps = kernel.dependencies()
    order = []

    def visit(name):
        if name in order:
            return
        if name not in deps:
            raise ImageError("module %s is not in %s/modules.dep" % (name, kernel.tree))
        for d in deps[name][1]:
            visit(d)
        order.append(name)

    for name in INITRD_MODULES:
        visit(name)
    return [(n, deps[n][0]) for n in order]


def shared_libraries(program):
    """The libraries a dynamically linked program needs, as the loader finds them here."""
    out = run("ldd", program, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        w = line.split()
        if "=>" in w and w[w.index("=>") + 1].startswith("/"):
            libs.append(w[w.index("=>") + 1])
        elif w and w[0].startswith("/"):
            libs.append(w[0])
    return libs


def build_initrd(out, kernel, busybox, veritysetup):
    ir = os.path.join(out, "tree")
    for d in ("bin", "dev", "lib/modules", "proc", "run", "sys", "sysroot"):
        os.makedirs(os.path.join(ir, d))
    os.mknod(os.path.join(ir, "dev/console"), 0o600 | stat.S_IFCHR, os.makedev(5, 1))
    shutil.copy(busybox, os.path.join(ir, "bin/busybox"))
    shutil.copy(veritysetup, os.path.join(ir, "bin/veritysetup"))
    for lib in shared_libraries(veritysetup):
        dest = os.path.join(ir, lib.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy(lib, dest)
    shutil.copy(os.path.join(GUEST, "initrd-init"), os.path.join(ir, "init"))
    names = []
    for name, rel in initrd_module_order(kernel):
        if not rel.endswith(".ko.xz"):
            raise ImageError("expected an xz-compressed module, got %s" % rel)
        shutil.copy(os.path.join(kernel.tree, rel), os.path.join(ir, "lib/modules", name + ".ko.xz"))
        names.append(name)
    with open(os.path.join(ir, "modules"), "w") as f:
        f.write("".join(n + "\n" for n in names))

    run("bash", "-o", "pipefail", "-c",
        "find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | zstd -q >../initrd.img",
        cwd=ir, capture_output=True)
    shutil.rmtree(ir)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"modules": names}, f)


def installed_units(destdir):
    """modgate's units that want to be enabled, as a package's preset would do."""
    units = []
    for path in sorted(glob.glob(os.path.join(destdir, "usr/lib/systemd/system/*"))):
        name = os.path.basename(path)
        if "@" in name or not os.path.isfile(path):
            continue
        with open(path) as f:
            if any(line.strip() == "[Install]" for line in f):
                units.append(name)
    return units


def build_root(out, base, destdir, kernel, key):
    stage = os.path.join(out, "stage")
    run("cp", "-a", base, stage)
    run("cp", "-a", "--no-preserve=ownership", os.path.join(GUEST, "rootfs") + "/.", stage)
    if destdir:
        run("cp", "-a", "--no-preserve=ownership", destdir + "/.", stage)
    os.makedirs(os.path.join(stage, "usr/lib/modules", kernel.version), exist_ok=True)
    # The same tree as ordinary files on the root, for boots with modgate_vm.modules=writable: the
    # initramfs renames it to /usr/lib/modules/$KVER instead of mounting the verity volume there
    # (a system whose kernel package unpacked its modules on a writable root). Other boots leave it
    # where it is, unused.
    writable = os.path.join(stage, WRITABLE_TREE.lstrip("/"))
    os.makedirs(writable)
    run("cp", "-a", kernel.tree, os.path.join(writable, kernel.version))
    # The manifest of the module tree, as the kernel-install plugin writes it when the kernel
    # package is installed (the guest's first-use unit then has nothing to do): the same files as
    # the erofs volume, hashed here by the installed modgate-manifest.
    if destdir:
        run(os.path.join(destdir, "usr/libexec/modgate/modgate-manifest"), "--origin=kernel-install",
            "--tree=" + kernel.tree, "--output=" + os.path.join(stage, "var/lib/modgate/manifests",
                                                                 kernel.version + ".sha256"), kernel.version)

    # A fixed machine id: not a first boot, so no systemd-firstboot questions on the console.
    with open(os.path.join(stage, "etc/machine-id"), "w") as f:
        f.write(digest("machine-id", key) * 2 + "\n")
    shadow = os.path.join(stage, "etc/shadow")
    with open(shadow) as f:
        lines = [("root::" + l.split(":", 2)[2]) if l.startswith("root:") else l for l in f]
    with open(shadow, "w") as f:
        f.writelines(lines)

    units = ["modgate-vm-agent.service", "serial-getty@ttyS1.service"]
    run("systemctl", "--root=" + stage, "--quiet", "enable", *units, *(installed_units(destdir) if destdir else ()),
        capture_output=True)
    # No display, no network, no logins but root's on the serial consoles: these only slow a boot
    # under TCG down (logind alone takes seconds, and needs D-Bus).
    run("systemctl", "--root=" + stage, "--quiet", "disable", "getty@tty1.service", "dpkg-db-backup.timer",
        "fstrim.timer", capture_output=True)
    run("systemctl", "--root=" + stage, "--quiet", "mask", "systemd-logind.service", "getty-static.service",
        capture_output=True)
    # /etc and /var are as new as /usr: no ldconfig, catalog or hwdb rebuild at every boot
    # (ConditionNeedsUpdate=).
    t = os.stat(os.path.join(stage, "usr")).st_mtime + 1
    for d in ("etc", "var"):
        path = os.path.join(stage, d, ".updated")
        open(path, "w").close()
        os.utime(path, (t, t))

    image = os.path.join(out, "root.img")
    run("mkfs.ext4", "-q", "-F", "-L", "modgate-root", "-d", stage, image, "2G", capture_output=True)
    shutil.rmtree(stage)


class Cache:
    def __init__(self, root=CACHE):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.lockf = open(os.path.join(root, "lock"), "w")

    def __enter__(self):
        fcntl.flock(self.lockf, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.lockf, fcntl.LOCK_UN)

    def layer(self, kind, key, build, *args):
        path = os.path.join(self.root, "%s-%s" % (kind, key))
        if os.path.isdir(path):
            os.utime(path)
            return path
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        start = time.monotonic()
        log("building %s %s" % (kind, key))
        build(tmp, *args)
        os.rename(tmp, path)
        log("built %s in %.1f s" % (kind, time.monotonic() - start))
        self.prune(kind, keep=path)
        return path

    def prune(self, kind, keep):
        entries = [p for p in glob.glob(os.path.join(self.root, kind + "-*")) if not p.endswith(".tmp")]
        entries.sort(key=os.path.getmtime, reverse=True)
        for p in entries[KEEP:]:
            if p != keep:
                shutil.rmtree(p, ignore_errors=True)


def source(fn):
    return inspect.getsource(fn)


def install_modgate(build_dir, destdir):
    """`meson install` of an already built tree (the guest gets exactly what a package would)."""
    options = run("meson", "introspect", "--buildoptions", build_dir, capture_output=True).stdout
    prefix = next((o["value"] for o in json.loads(options) if o["name"] == "prefix"), None)
    if prefix != "/usr":
        raise ImageError("%s is configured with prefix %s; the guest needs a build with -Dprefix=/usr"
                         % (build_dir, prefix))
    shutil.rmtree(destdir, ignore_errors=True)
    run("meson", "install", "-C", build_dir, "--no-rebuild", "--quiet", "--destdir", destdir,
        capture_output=True)
    # Test programs that no package installs, for the scenarios that run them in place of modgated's own
    # (60-guard: one that approves another SHA-256 than the file's).
    for rel in TEST_PROGRAMS:
        program = os.path.join(build_dir, rel)
        if os.path.exists(program):
            os.makedirs(os.path.join(destdir, "usr/lib/modgate-vm"), exist_ok=True)
            shutil.copy2(program, os.path.join(destdir, "usr/lib/modgate-vm", os.path.basename(rel)))


def build(build_dir):
    """Makes (or finds) every layer and returns the manifest the machine boots from."""
    start = time.monotonic()
    kernel = Kernel()
    busybox = shutil.which("busybox")
    veritysetup = shutil.which("veritysetup")
    if not busybox or not veritysetup:
        raise ImageError("no busybox or veritysetup; tools/devroot installs busybox-static and "
                         "cryptsetup-bin")

    with Cache() as cache:
        destdir = os.path.join(cache.root, "destdir")
        install_modgate(build_dir, destdir)

        base_key = digest(SUITE, packages(), source(build_base))
        base = cache.layer("base", base_key, build_base)
        modules = cache.layer("modules", digest(kernel.id, source(build_modules)), build_modules, kernel)
        programs = [busybox, veritysetup] + shared_libraries(veritysetup)
        initrd_key = digest(kernel.id, *map(file_digest, programs),
                            file_digest(os.path.join(GUEST, "initrd-init")), INITRD_MODULES,
                            source(build_initrd), source(initrd_module_order))
        initrd = cache.layer("initrd", initrd_key, build_initrd, kernel, busybox, veritysetup)
        root_key = digest(base_key, kernel.version, kernel.id, tree_digest(os.path.join(GUEST, "rootfs")),
                          tree_digest(destdir), source(build_root), source(installed_units))
        root = cache.layer("root", root_key, build_root, base, destdir, kernel, root_key)
        # The same guest without modgate, for scenarios that install it as a user would (IMAGE =
        # "stock": the Debian package).
        stock_key = digest(base_key, kernel.version, kernel.id, tree_digest(os.path.join(GUEST, "rootfs")),
                           source(build_root), "stock")
        stock = cache.layer("stock", stock_key, build_root, base, None, kernel, stock_key)
        shutil.rmtree(destdir)

    with open(os.path.join(modules, "meta.json")) as f:
        verity = json.load(f)
    with open(os.path.join(initrd, "meta.json")) as f:
        initrd_meta = json.load(f)
    log("ready in %.1f s" % (time.monotonic() - start))
    return {
        "kernel_version": kernel.version,
        "kernel": kernel.vmlinuz,
        "initrd": os.path.join(initrd, "initrd.img"),
        "initrd_modules": initrd_meta["modules"],
        "root": os.path.join(root, "root.img"),
        "root_stock": os.path.join(stock, "root.img"),
        "root_serial": ROOT_SERIAL,
        "modules": os.path.join(modules, "modules.img"),
        "modules_serial": MODULES_SERIAL,
        "roothash": verity["roothash"],
        "hash_offset": verity["offset"],
    }
