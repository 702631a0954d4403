# SPDX-License-Identifier: LGPL-2.1-or-later
"""What scenarios ask the guest often: varlink calls, live modules, modgate's journal records."""

import collections
import json
import time

SOCKET = "/run/modgate/io.modgate"
MODULES_DEVICE = "/dev/mapper/modgate-modules"
MODGATED = "/usr/libexec/modgate/modgated"
UNTRUSTED = "io.modgate.Manager.UntrustedOrigin"
# Where a second modgated's own /etc/modgate is kept (one directory per unit).
CONF_DIRS = "/var/tmp/modgate-vm-conf"


def varlinkctl(vm, method, parameters=None, address=SOCKET):
    """(reply parameters or error parameters as a dict, error name or None), as varlinkctl
    prints them: the parameters on stdout, a failed call's error name on stderr."""
    r = vm.sh("varlinkctl call %s %s %s" % (address, method, quote(json.dumps(parameters or {}))),
              check=False)
    try:
        params = json.loads(r.out) if r.out.strip() else {}
    except ValueError:
        raise AssertionError("varlinkctl printed no JSON: %r, stderr %r" % (r.out, r.err)) from None
    if r.rc == 0:
        return params, None
    error = r.err.strip().rsplit(": ", 1)[-1] if "failed:" in r.err else r.err.strip()
    return params, error


def load(vm, name, address=SOCKET):
    return varlinkctl(vm, "io.modgate.Manager.Load", {"name": name}, address)


def live_modules(vm):
    """{name: count} of /proc/modules, which should never count more than one."""
    out = vm.sh("cut -d' ' -f1 /proc/modules").out
    return collections.Counter(out.split())


def initstate(vm, name):
    return vm.sh("cat /sys/module/%s/initstate 2>/dev/null || echo absent" % name).out.strip()


def hotplug(vm, driver, module, device_id):
    """Hotplugs a QEMU device whose driver is module, not loaded before, and waits until udev has
    settled with module live."""
    assert live_modules(vm)[module] == 0, "%s is loaded already" % module
    vm.qmp("device_add", driver=driver, id=device_id)
    vm.sh("for i in $(seq 300); do grep -q '^%s ' /proc/modules && break; sleep 0.1; done; udevadm settle"
          % module, timeout=90)
    assert initstate(vm, module) == "live"


def settle(vm):
    """Waits, while the system's modgated runs, until no load's record waits for its file's .modinfo
    (Status's unrecordedLoads): a load whose name the evidence binds is answered first and recorded
    after that read. At most 10 s."""
    vm.sh("for i in $(seq 200); do systemctl -q is-active modgated.service || exit 0; "
          "varlinkctl call --json=short %s io.modgate.Manager.Status '{}' 2>/dev/null | "
          "grep -q '\"unrecordedLoads\":0[,}]' && exit 0; sleep 0.05; done" % SOCKET, check=False)


def records(vm, module, outcome=None, unit="modgated.service"):
    """modgate's provenance records for module in this boot's journal, once the system's modgated
    has written those it owes (settle())."""
    if unit == "modgated.service":
        settle(vm)
    matches = ["MODGATE_MODULE=" + module, "_BOOT_ID=" + vm.boot_id]
    if outcome:
        matches.append("MODGATE_OUTCOME=" + outcome)
    if unit:
        matches.append("_SYSTEMD_UNIT=" + unit)
    return vm.journal(*matches)


def dependencies(vm, name):
    """The module's file and its dependency closure, from modules.dep of the running kernel,
    read independently of libkmod."""
    out = vm.sh("cat /usr/lib/modules/$(uname -r)/modules.dep").out
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        if module_name(path) == name:
            return path, [module_name(p) for p in rest.split()]
    raise AssertionError("%s is not in modules.dep" % name)


def fresh_leaf_module(vm, candidates):
    """The first of candidates that has no dependencies, is not in the kernel and was not handed out
    before in this boot, and its file's path."""
    live = live_modules(vm)
    used = vm.__dict__.setdefault("leaf_modules_used", set())
    for name in candidates:
        if name in used or live[name]:
            continue
        try:
            path, deps = dependencies(vm, name)
        except AssertionError:
            continue
        if not deps:
            used.add(name)
            return name, "/usr/lib/modules/%s/%s" % (kernel_release(vm), path)
    raise AssertionError("no leaf module left to load among %s" % candidates)


def monotonic_usec(vm):
    """CLOCK_MONOTONIC in the guest, in microseconds: journal entries after it have a larger
    __MONOTONIC_TIMESTAMP."""
    return int(vm.sh("python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'").out)


def records_since(vm, start, *matches, timeout=30):
    """This boot's journal entries that match, written after start (monotonic_usec()); waits up to
    timeout seconds for the first."""
    deadline = time.monotonic() + timeout
    while True:
        recs = [e for e in vm.journal("_BOOT_ID=" + vm.boot_id, *matches) if int(e["__MONOTONIC_TIMESTAMP"]) >= start]
        if recs or time.monotonic() > deadline:
            return recs
        time.sleep(1)


def module_name(path):
    base = path.rsplit("/", 1)[-1]
    return base[:base.index(".ko")].replace("-", "_")


def device_of(vm, path):
    """major:minor of a block device node, as MODGATE_DEVICE writes it."""
    return vm.sh("stat -L -c '%%Hr:%%Lr' %s" % quote(path)).out.strip()


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def kernel_release(vm):
    if not getattr(vm, "_release", None):
        vm._release = vm.sh("uname -r").out.strip()
    return vm._release


def start_modgated(vm, unit, address, config, args=""):
    """A second modgated, as the transient unit UNIT.service listening on ADDRESS, that reads CONFIG
    (the text of a modgate.conf) and nothing else: its /etc/modgate is a directory of its own
    (BindReadOnlyPaths=), and the guest has no modgate configuration in the other directories
    (checked here). Waits until it listens; one that exits instead fails the call with its log."""
    vm.sh("""set -e
        for d in /run/modgate/modgate.conf /run/modgate/modgate.conf.d /usr/local/lib/modgate /usr/lib/modgate; do
                if [ -e $d ]; then echo "$d exists: the second modgated would read it too" >&2; exit 1; fi
        done
        conf=%(dirs)s/%(unit)s
        rm -rf $conf
        mkdir -p $conf
        cat >$conf/modgate.conf
        rm -f %(addr)s
        systemctl reset-failed %(unit)s.service 2>/dev/null || true
        systemd-run --quiet --unit=%(unit)s -p BindReadOnlyPaths=$conf:/etc/modgate \
                %(modgated)s --listen=%(addr)s %(args)s
        for i in $(seq 150); do
                test -S %(addr)s && exit 0
                case $(systemctl show -P ActiveState %(unit)s.service) in
                active|activating|reloading) sleep 0.2 ;;
                *) break ;;
                esac
        done
        echo "modgated (%(unit)s.service, $(systemctl show -P ActiveState %(unit)s.service)) does not listen on %(addr)s:" >&2
        journalctl -b -u %(unit)s.service -o cat --no-pager >&2
        exit 1
        """ % {"dirs": CONF_DIRS, "unit": unit, "addr": address, "modgated": MODGATED, "args": args},
          stdin=config)


def stop_modgated(vm, unit):
    # systemd made /etc/modgate for the bind mount when there was none: an empty directory.
    vm.sh("systemctl stop %(unit)s.service; systemctl reset-failed %(unit)s.service; rm -rf %(dirs)s/%(unit)s; "
          "rmdir /etc/modgate 2>/dev/null" % {"unit": unit, "dirs": CONF_DIRS}, check=False)


def load_with(vm, unit, address, config, name):
    """Load NAME from a second modgated with CONFIG (see start_modgated), stopped again after the
    call: (reply or error parameters, error name or None)."""
    start_modgated(vm, unit, address, config)
    try:
        return load(vm, name, address=address)
    finally:
        stop_modgated(vm, unit)


def dm_kernel_name(vm, device):
    """The kernel's name (dm-N) of the device-mapper device /dev/mapper/NAME. (Not from the
    /dev/mapper entry: the initramfs's modgate-modules is a device node there, not udev's link.)"""
    name = device.rsplit("/", 1)[-1]
    return vm.sh("dmsetup info -c --noheadings -o blkdevname %s" % quote(name)).out.strip()


def erofs_verity(vm, tree, image):
    """mkfs.erofs of the guest's directory TREE into the file IMAGE, its dm-verity hash tree appended
    to the same file (as test/vm/image.py makes the module volume): (root hash, hash offset)."""
    out = vm.sh("""set -e
        rm -f %(img)s %(img)s.roothash
        mkfs.erofs --quiet --all-root -T0 %(img)s %(tree)s
        size=$(stat -c %%s %(img)s)
        veritysetup format --hash-offset=$size --root-hash-file=%(img)s.roothash %(img)s %(img)s >/dev/null
        echo $size $(cat %(img)s.roothash)
        rm %(img)s.roothash
        """ % {"img": quote(image), "tree": quote(tree)}).out.split()
    return out[1], int(out[0])


def module_index(vm, base, modules=(), external=()):
    """A module tree of the running kernel below BASE made as depmod makes one: MODULES (paths
    relative to the running kernel's tree) copied into BASE/lib/modules/$KVER, the tree's
    modules.builtin* and modules.order beside them, and the index (modules.dep, modules.dep.bin,
    ...) written by the guest's `depmod -b BASE`, with `external` lines naming the directories
    EXTERNAL (whose modules the index then lists by absolute path). Returns the tree's directory
    and its modules.dep."""
    release = kernel_release(vm)
    tree = "%s/lib/modules/%s" % (base, release)
    external_lines = "".join("external * %s\n" % d for d in external)
    out = vm.sh("""set -e
        src=/usr/lib/modules/%(rel)s
        rm -rf %(base)s
        mkdir -p %(tree)s %(base)s.depmod.d
        cp -a $src/modules.builtin $src/modules.builtin.modinfo $src/modules.order %(tree)s/
        for m in %(modules)s; do
                mkdir -p %(tree)s/$(dirname $m)
                cp -a $src/$m %(tree)s/$m
        done
        printf 'search external built-in\n%(external)s' >%(base)s.depmod.d/modgate-vm.conf
        depmod -b %(base)s -C %(base)s.depmod.d %(rel)s
        rm -r %(base)s.depmod.d
        cat %(tree)s/modules.dep
        """ % {"rel": release, "base": quote(base), "tree": quote(tree), "external": external_lines,
               "modules": " ".join(quote(m) for m in modules)}).out
    return tree, out
