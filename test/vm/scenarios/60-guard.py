# SPDX-License-Identifier: LGPL-2.1-or-later
"""The guard in enforce mode (modgate.guard=enforce on the kernel command line): the kernel refuses
every module load but modgated's, root's insmod and a raw init_module() included, each with a record;
what asks modgate still loads (modgatectl, udev's hotplug, the kernel's own request); and the guard
stays attached when modgated is killed or exits idle."""

import os
import time

import guest

APPEND = "modgate.guard=enforce"
# Three restarts of modgated, one with a test program, an idle exit and a hotplug, under TCG.
TIMEOUT = 300
GUARD = "45a3b6475ec4408a9ce9692356845553"
DROPIN = "/etc/modgate/modgate.conf.d/60-modgate-vm-guard.conf"
# Leaf modules (no dependencies) that nothing in the guest loads by itself, one per case that needs
# a module not in the kernel yet.
CANDIDATES = ["dummy", "ifb", "nlmon", "veth", "vcan", "bonding", "macvlan", "vxcan", "netdevsim", "tun",
              "tcp_bbr", "tcp_vegas", "tcp_nv", "tcp_lp", "tcp_dctcp", "tcp_bic", "tcp_westwood", "tcp_htcp"]
HOTPLUG_MODULE = "e1000"
# This scenario restarts modgated.service more often than systemd's start limit allows (5 in 10 s):
# each restart forgets the earlier ones.
RESTART = "systemctl reset-failed modgated.service modgated.socket; systemctl restart modgated.service"
GUARD_PROGRAMS = ["modgate_bpf", "modgate_bpf_map", "modgate_load_data", "modgate_ptrace", "modgate_read_file"]
WRONG_HASH_PROGRAM = "/usr/lib/modgate-vm/modgated-test-wrong-hash"
WRONG_HASH_DROPIN = "/run/systemd/system/modgated.service.d/60-modgate-vm-wrong-hash.conf"

# A trusted root of its own for a module whose signature is cut off, with a manifest that lists it.
UNSIGNED_ROOT = "/var/lib/modgate-vm-unsigned"
UNSIGNED_MANIFEST = "/var/lib/modgate-vm-unsigned.sha256"
SIGNER_DROPIN = "/etc/modgate/modgate.conf.d/60-modgate-vm-signer.conf"

# Runs in the guest: copies a .ko.xz without its appended signature (the 12-byte struct
# module_signature ends in the signature's big-endian length, then the magic), compressed again as
# Debian does (xz, CRC32).
STRIP_SIGNATURE = r'''
import lzma, sys
MAGIC = b"~Module signature appended~\n"
elf = lzma.open(sys.argv[1]).read()
assert elf.endswith(MAGIC), "not signed"
n = int.from_bytes(elf[-len(MAGIC) - 4:-len(MAGIC)], "big")
with open(sys.argv[2], "wb") as f:
    f.write(lzma.compress(elf[:-(len(MAGIC) + 12 + n)], check=lzma.CHECK_CRC32))
'''

# Runs in the guest: init_module(2) of a buffer, as root, straight through syscall(2); prints the errno.
INIT_MODULE = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(b"\x7fELF" + b"\0" * 60)
r = libc.syscall(175, buf, ctypes.c_ulong(64), b"")
print(ctypes.get_errno() if r != 0 else 0)
'''

# An unprivileged bind(2) of an AF_ALG hash socket: the kernel asks for algif-hash itself.
AF_ALG_HASH = r'''
import socket
s = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)
s.bind(("hash", "sha256"))
print("bound")
'''

# Runs in the guest as root: what another root process can do to the guard through bpf(2) and ptrace.
# Prints JSON: the errno of each attempt (0: it worked).
TAMPER = r"""
import ctypes, json, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
NR_BPF, NR_PIDFD_OPEN, NR_PIDFD_GETFD = 321, 434, 438
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(bytes(attr).ljust(152, b"\0"), 152)
    r = libc.syscall(NR_BPF, cmd, buf, 152)
    return (r, 0) if r >= 0 else (-1, ctypes.get_errno())
out = {"links_refused": 0, "links_open": 0}
# Every link in the kernel by its id (BPF_LINK_GET_NEXT_ID, BPF_LINK_GET_FD_BY_ID).
start = 0
while True:
    buf = ctypes.create_string_buffer(struct.pack("II", start, 0).ljust(152, b"\0"), 152)
    if libc.syscall(NR_BPF, 31, buf, 152) < 0:
        break
    start = struct.unpack_from("II", buf.raw)[1]
    fd, err = bpf(30, struct.pack("I", start))
    if fd >= 0:
        os.close(fd)
        out["links_open"] += 1
    elif err == 1:
        out["links_refused"] += 1
# A map of the guard by its id (BPF_MAP_GET_FD_BY_ID).
fd, out["map_fd_by_id"] = bpf(14, struct.pack("I", int(sys.argv[1])))
# An fd of modgated's (pidfd_getfd: PTRACE_MODE_ATTACH).
pidfd = libc.syscall(NR_PIDFD_OPEN, int(sys.argv[2]), 0)
r = libc.syscall(NR_PIDFD_GETFD, pidfd, 3, 0)
out["pidfd_getfd"] = 0 if r >= 0 else ctypes.get_errno()
# fmod_ret (BPF_PROG_TYPE_TRACING, BPF_MODIFY_RETURN), and an LSM program on the guard's hook of
# finit_module (BPF_PROG_TYPE_LSM, BPF_LSM_MAC, that function's BTF id): "r0 = 0; exit".
insns = ctypes.create_string_buffer(bytes.fromhex("b700000000000000" "9500000000000000"), 16)
lic = ctypes.create_string_buffer(b"GPL")
def prog(ptype, atype, btf_id):
    attr = bytearray(152)
    struct.pack_into("IIQQ", attr, 0, ptype, 2, ctypes.addressof(insns), ctypes.addressof(lic))
    struct.pack_into("I", attr, 68, atype)
    struct.pack_into("I", attr, 108, btf_id)
    fd, err = bpf(5, attr)
    if fd >= 0:
        os.close(fd)
    return err
out["fmod_ret"] = prog(26, 26, int(sys.argv[3]))
out["lsm_on_hook"] = prog(29, 27, int(sys.argv[3]))
print(json.dumps(out))
"""


def mark(vm):
    return guest.monotonic_usec(vm)


def guard_records(vm, start, *matches):
    return guest.records_since(vm, start, "MESSAGE_ID=" + GUARD, *matches, timeout=0)


def wait_records(vm, start, *matches, timeout=30):
    return guest.records_since(vm, start, "MESSAGE_ID=" + GUARD, *matches, timeout=timeout)


def fresh_module(vm):
    return guest.fresh_leaf_module(vm, CANDIDATES)


def insmod_refused(vm, start, context):
    """root's insmod of a fresh module: EPERM, nothing loaded, and the guard's record of it."""
    name, path = fresh_module(vm)
    r = vm.sh("insmod %s" % guest.quote(path), check=False)
    print("# %s: insmod %s: exit %d: %s" % (context, name, r.rc, r.err.strip()))
    assert r.rc != 0 and "Operation not permitted" in r.err, (r.rc, r.out, r.err)
    assert guest.initstate(vm, name) == "absent"
    return name


def guard_programs(vm):
    """The names of the guard's BPF LSM programs in the kernel."""
    progs = vm.sh("bpftool -j prog show").json()
    return sorted(p["name"] for p in progs if p.get("type") == "lsm" and p.get("name", "").startswith("modgate_"))


def modgated_pid(vm):
    return vm.sh("systemctl show -P MainPID modgated.service").out.strip()


def test_attached(vm):
    """modgated attaches the guard in enforce mode from the kernel command line"""
    assert "bpf" in vm.sh("cat /sys/kernel/security/lsm").out.split(",")
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Status")
    assert error is None, (error, reply)
    logs = vm.journal("_SYSTEMD_UNIT=modgated.service", "_BOOT_ID=" + vm.boot_id)
    attached = [e["MESSAGE"] for e in logs if e.get("MESSAGE", "").startswith("The guard is attached")]
    assert attached, [e.get("MESSAGE") for e in logs][:40]
    print("# %s" % attached[0])
    assert attached[0].startswith("The guard is attached (enforce, from modgate.guard= of the kernel command line"), attached
    # Five BPF LSM programs: two for module loads, three that protect the guard.
    assert guard_programs(vm) == GUARD_PROGRAMS


def test_early_boot(vm):
    """the boot in enforce loses no module the kernel asked for while modgated started"""
    # modprobe@configfs.service starts modgated early, before systemd-sysctl.service points
    # kernel.modprobe at modgate-modprobe; binfmt_misc's automount asks the kernel for its module
    # while modgated is still starting (40 s under TCG on a busy machine). With the guard attached at
    # the start of that, /sbin/modprobe's load was refused; with kernel.modprobe pointed at modgated
    # then, the request waited longer than modgate-modprobe's 15 s. Either way the mount failed.
    failed = vm.sh("systemctl list-units --failed --plain --no-legend").out.strip()
    assert not failed, "units failed at boot:\n" + failed
    # Module loads only: the first case's bpftool asked for the guard's maps, which is refused too.
    early = [e for e in guard_records(vm, 0) if e["MODGATE_SYSCALL"] in ("finit_module", "init_module")]
    assert not early, [e["MESSAGE"] for e in early]
    assert vm.sh("cat /proc/sys/kernel/modprobe").out.strip() == "/usr/libexec/modgate/modgate-modprobe"
    assert vm.sh("systemctl is-active proc-sys-fs-binfmt_misc.mount", check=False).out.strip() == "active"
    assert guest.initstate(vm, "binfmt_misc") == "live"
    # Loaded by modgated (the kernel asked after the guard was attached) or before it, by /sbin/modprobe:
    # then it is recorded as loaded outside, as what the initramfs loaded.
    recs = [r for r in guest.records(vm, "binfmt_misc")
            if r["MODGATE_OUTCOME"] == "loaded_outside" or r.get("MODGATE_SOURCE") == "kernel"]
    assert len(recs) == 1 and recs[0]["MODGATE_OUTCOME"] in ("loaded", "loaded_outside"), recs
    print("# binfmt_misc: %s" % recs[0]["MODGATE_OUTCOME"])
    # The guard was attached, and kernel.modprobe set, before modgated answered its first request.
    logs = [e.get("MESSAGE", "") for e in vm.journal("_SYSTEMD_UNIT=modgated.service", "_BOOT_ID=" + vm.boot_id)]
    attached = next(i for i, m in enumerate(logs) if m.startswith("The guard is attached"))
    first = next((i for i, m in enumerate(logs) if m.startswith("Loaded module ") or "was loaded by modgate" in m),
                 len(logs))
    assert attached < first, logs[:first + 1]


def test_insmod_refused(vm):
    """root's insmod of a module from the trusted tree gets EPERM, and the guard records it"""
    start = mark(vm)
    name = insmod_refused(vm, start, "enforce")
    recs = wait_records(vm, start, "MODGATE_CALLER_COMM=insmod")
    assert len(recs) == 1, recs
    r = recs[0]
    print("# %s" % r["MESSAGE"])
    assert r["MODGATE_OUTCOME"] == "refused_guard" and r["MODGATE_GUARD_MODE"] == "enforce", r
    assert r["MODGATE_GUARD_REASON"] == "caller" and r["MODGATE_CALLER_UID"] == "0", r
    assert r["MODGATE_SYSCALL"] in ("finit_module", "init_module"), r
    assert r["MODGATE_CALLER_EXE"] == "kmod", r
    assert r["_SYSTEMD_UNIT"] == "modgated.service" and r["PRIORITY"] == "4", r
    if r["MODGATE_SYSCALL"] == "finit_module":
        dev, ino = vm.sh("stat -c '%%d %%i' %s" % guest.quote(guest.dependencies(vm, name)[0] and
                         "/usr/lib/modules/%s/%s" % (guest.kernel_release(vm), guest.dependencies(vm, name)[0]))).out.split()
        assert r["MODGATE_INODE"] == ino, (r, ino)


def test_init_module_refused(vm):
    """a raw init_module() gets EPERM, and the guard records it"""
    start = mark(vm)
    err = vm.sh("python3 -", stdin=INIT_MODULE).out.strip()
    # Without the guard the kernel reads the buffer and says ENOEXEC (not a module).
    assert err == "1", "init_module() gave errno %s, not EPERM" % err
    recs = wait_records(vm, start, "MODGATE_SYSCALL=init_module")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_GUARD_REASON"] == "blob" and r["MODGATE_CALLER_COMM"] == "python3", r
    assert r["MODGATE_OUTCOME"] == "refused_guard" and "MODGATE_INODE" not in r, r


def test_gate_loads(vm):
    """modgatectl load still loads"""
    name, _ = fresh_module(vm)
    start = mark(vm)
    r = vm.sh("modgatectl load %s" % name, check=False)
    assert r.rc == 0, (r.rc, r.out, r.err)
    assert guest.initstate(vm, name) == "live"
    assert not guard_records(vm, start), guard_records(vm, start)


def test_hotplug(vm):
    """a hotplugged e1000 gets its driver through udev and modgate"""
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0, "e1000 is loaded already"
    start = mark(vm)
    vm.qmp("device_add", driver="e1000", id="modgate-guard-nic")
    vm.sh("for i in $(seq 300); do grep -q '^%s ' /proc/modules && break; sleep 0.1; done; udevadm settle"
          % HOTPLUG_MODULE, timeout=90)
    assert guest.initstate(vm, HOTPLUG_MODULE) == "live"
    recs = guest.records(vm, HOTPLUG_MODULE, "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "udev", recs
    assert not guard_records(vm, start), guard_records(vm, start)


def test_kernel_autoload(vm):
    """an unprivileged AF_ALG bind makes the kernel ask, and the module loads through modgate"""
    live = guest.live_modules(vm)
    assert live["algif_hash"] == 0, "algif_hash is loaded already"
    start = mark(vm)
    out = vm.sh("setpriv --reuid=65534 --regid=65534 --clear-groups python3 -", stdin=AF_ALG_HASH, timeout=90).out
    assert out.strip() == "bound", out
    assert guest.initstate(vm, "algif_hash") == "live"
    recs = guest.records(vm, "algif_hash", "loaded")
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "kernel", recs
    assert not guard_records(vm, start), guard_records(vm, start)


def test_self_protection(vm):
    """root cannot take the guard's links or maps, ptrace modgated, or put its own program on the guard's hooks"""
    progs = [p for p in vm.sh("bpftool -j prog show").json() if p.get("name", "").startswith("modgate_")]
    assert sorted(p["name"] for p in progs) == ["modgate_bpf", "modgate_bpf_map", "modgate_load_data",
                                                "modgate_ptrace", "modgate_read_file"], progs
    map_ids = sorted({i for p in progs for i in p.get("map_ids", [])})
    assert len(map_ids) >= 3, progs
    btf_id = vm.sh("bpftool btf dump file /sys/kernel/btf/vmlinux | "
                   "sed -n \"s/^\\[\\([0-9]*\\)\\] FUNC 'bpf_lsm_kernel_read_file'.*/\\1/p\"").out.strip()
    assert btf_id.isdigit(), btf_id
    start = mark(vm)
    # bpftool, as root with every capability: EPERM from the guard, where the kernel would let it.
    for cmd in ("map dump id %d" % map_ids[0],
                "map update id %d key 0 0 0 0 value %s" % (map_ids[0], " ".join(["0"] * 80))):
        r = vm.sh("bpftool " + cmd, check=False)
        print("# bpftool %s: exit %d: %s" % (cmd.split(" value")[0], r.rc, r.err.strip()[:160]))
        assert r.rc != 0 and "Operation not permitted" in r.err, (cmd, r.rc, r.out, r.err)
    got = vm.sh("python3 - %d %s %s" % (map_ids[0], modgated_pid(vm), btf_id), stdin=TAMPER).json()
    print("# %s" % got)
    assert got["links_refused"] == 5, got
    assert got["map_fd_by_id"] == 1 and got["pidfd_getfd"] == 1, got
    assert got["fmod_ret"] == 1 and got["lsm_on_hook"] == 1, got
    # bpftool's refusals are counted, not recorded anew: `bpftool prog show` asked for the guard's maps
    # (their metadata) within the minute, and was refused and recorded then.
    want = {("python3", "bpf"), ("python3", "ptrace")}
    deadline = time.monotonic() + 30
    while True:
        recs = guard_records(vm, start, "MODGATE_GUARD_REASON=protected")
        calls = {(r["MODGATE_CALLER_COMM"], r["MODGATE_SYSCALL"]) for r in recs}
        if want <= calls or time.monotonic() > deadline:
            break
        time.sleep(1)
    print("# %s" % sorted(calls))
    assert want <= calls, calls
    assert all(r["MODGATE_OUTCOME"] == "refused_guard" for r in recs), recs
    assert len(wait_records(vm, start, "MODGATE_GUARD_REASON=fmod_ret")) == 1
    # Still attached, all five, and modgated still loads.
    assert len([p for p in vm.sh("bpftool -j prog show").json() if p.get("name", "").startswith("modgate_")]) == 5
    name, _ = fresh_module(vm)
    reply, error = guest.load(vm, name)
    assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)


def restart_with(vm, program):
    """modgated.service restarted with another ExecStart= (None: its own again)."""
    if program:
        vm.sh("mkdir -p $(dirname {0}) && printf '[Service]\\nExecStart=\\nExecStart={1}\\n' >{0}"
              .format(WRONG_HASH_DROPIN, program))
    else:
        vm.sh("rm -f %s" % WRONG_HASH_DROPIN)
    vm.sh("systemctl daemon-reload && " + RESTART)


def test_wrong_hash(vm):
    """the kernel hashes the file itself: a modgated that approves another SHA-256 is refused"""
    # modgated-test-wrong-hash (a test program of the build) checks each file as modgated does, and
    # then approves a SHA-256 with one byte changed: dev, inode and change time are those of the
    # file, so only the kernel's own hash of it can tell.
    assert vm.sh("test -x %s" % WRONG_HASH_PROGRAM, check=False).rc == 0, "the image has no " + WRONG_HASH_PROGRAM
    name, _ = fresh_module(vm)
    restart_with(vm, WRONG_HASH_PROGRAM)
    try:
        start = mark(vm)
        reply, error = guest.load(vm, name)
        print("# %s: %s %s" % (name, error, reply))
        assert guest.initstate(vm, name) == "absent"
        assert error is not None or reply["modules"][-1]["outcome"] != "loaded", reply
        recs = wait_records(vm, start, "MODGATE_GUARD_REASON=hash")
        assert len(recs) == 1, recs
        r = recs[0]
        print("# %s" % r["MESSAGE"])
        assert r["MODGATE_OUTCOME"] == "refused_guard" and r["MODGATE_SYSCALL"] == "finit_module", r
        assert r["MODGATE_CALLER_EXE"] == os.path.basename(WRONG_HASH_PROGRAM), r
        assert r["MODGATE_CALLER_PID"] == modgated_pid(vm), r
    finally:
        restart_with(vm, None)
    # The same file, approved with its own hash by modgated: loaded.
    reply, error = guest.load(vm, name)
    assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
    assert guest.initstate(vm, name) == "live"


def signer_config(vm, text):
    """modgated restarted with text as the signer rules' drop-in (None: none): they are read at start."""
    if text is None:
        vm.sh("rm -f %s" % SIGNER_DROPIN)
    else:
        vm.sh("mkdir -p $(dirname {0}) && printf '%s' {1} >{0}".format(SIGNER_DROPIN, guest.quote(text)))
    vm.sh(RESTART)


def test_signer_rules(vm):
    """signer rules bind under the guard: an unsigned copy listed in a manifest is refused under RequireSignature=yes and loads without it; AllowSigner= of another key refuses Debian's modules"""
    assert vm.sh("cat /sys/module/module/parameters/sig_enforce").out.strip() == "N"
    name, path = fresh_module(vm)
    copy = "%s/%s" % (UNSIGNED_ROOT, os.path.basename(path))
    vm.sh("mkdir -p %s && python3 - %s %s" % (UNSIGNED_ROOT, path, copy), stdin=STRIP_SIGNATURE)
    vm.sh("/usr/libexec/modgate/modgate-manifest --origin=kernel-install --tree=%s --output=%s %s"
          % (UNSIGNED_ROOT, UNSIGNED_MANIFEST, guest.kernel_release(vm)))
    root = "[Root]\nPath=%s\nEvidence=manifest\nManifest=%s\n" % (UNSIGNED_ROOT, UNSIGNED_MANIFEST)
    try:
        signer_config(vm, root + "RequireSignature=yes\n")
        reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"path": copy})
        print("# RequireSignature=yes: %s %s" % (error, reply.get("reason")))
        assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
        assert reply["reason"] == ("RequireSignature=yes of trusted root %s (%s:5): the module file carries no "
                                   "signature" % (UNSIGNED_ROOT, SIGNER_DROPIN)), reply
        assert guest.initstate(vm, name) == "absent"

        # Without the rule the same bytes load: the manifest vouches for them, the guard lets the
        # kernel read them, and the kernel (sig_enforce off) takes an unsigned module, tainted.
        signer_config(vm, root)
        reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"path": copy})
        assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
        assert guest.initstate(vm, name) == "live"
        assert "E" in vm.sh("cat /sys/module/%s/taint" % name).out, "the kernel loaded it as signed?"
        rec = [e for e in vm.journal("MODGATE_MODULE=" + name, "MODGATE_OUTCOME=loaded", "_BOOT_ID=" + vm.boot_id)]
        assert rec and rec[-1]["MODGATE_SIGNATURE"] == "none", rec

        # AllowSigner= naming another key: Debian's own module, from the kernel's tree, is refused.
        other, _ = fresh_module(vm)
        signer_config(vm, "[Trust]\nAllowSigner=00:11:22:33:44:55:66:77\n")
        reply, error = guest.load(vm, other)
        print("# AllowSigner=00:11:22:33:44:55:66:77: %s %s" % (error, reply.get("reason")))
        assert error == "io.modgate.Manager.UntrustedOrigin", (error, reply)
        assert reply["reason"].startswith("AllowSigner= of trusted root /usr/lib/modules/%s (%s:2): the module is "
                                          "signed by " % (guest.kernel_release(vm), SIGNER_DROPIN)), reply
        assert guest.initstate(vm, other) == "absent"
        # And with Debian's key named by the signer, it loads.
        signer_config(vm, "[Trust]\nAllowSigner=Build time autogenerated kernel key\n")
        reply, error = guest.load(vm, other)
        assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
    finally:
        signer_config(vm, None)
        vm.sh("rm -rf %s %s" % (UNSIGNED_ROOT, UNSIGNED_MANIFEST))


def test_killed(vm):
    """after SIGKILL of modgated, insmod is still refused, and the next request loads"""
    pid = modgated_pid(vm)
    assert pid != "0", "modgated is not running"
    vm.sh("systemctl kill -s KILL modgated.service; "
          "for i in $(seq 100); do [ \"$(systemctl show -P MainPID modgated.service)\" = 0 ] && break; sleep 0.1; done")
    assert modgated_pid(vm) == "0", "modgated still runs"
    start = mark(vm)
    insmod_refused(vm, start, "modgated killed")
    assert modgated_pid(vm) == "0", "something started modgated"
    name, _ = fresh_module(vm)
    reply, error = guest.load(vm, name)
    assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
    new = modgated_pid(vm)
    assert new not in ("0", pid), new
    # The new instance adopted the guard kept by PID 1, and wrote the refusal that came while no
    # modgated ran.
    logs = vm.journal("_SYSTEMD_UNIT=modgated.service", "_PID=" + new)
    assert any(e.get("MESSAGE", "").startswith("The guard is attached (enforce") and "kept by PID 1" in e["MESSAGE"]
               for e in logs), [e.get("MESSAGE") for e in logs][:20]
    recs = wait_records(vm, start, "MODGATE_CALLER_COMM=insmod")
    assert len(recs) == 1 and recs[0]["_PID"] == new, recs
    assert guard_programs(vm) == GUARD_PROGRAMS, "attached twice?"


def test_idle_exit(vm):
    """after an idle exit, insmod is still refused, and the next request loads"""
    vm.sh("mkdir -p $(dirname %s) && printf '[Manager]\\nIdleExitSec=2s\\n' >%s && %s" % (DROPIN, DROPIN, RESTART))
    vm.sh("for i in $(seq 150); do systemctl -q is-active modgated.service || exit 0; sleep 0.2; done; exit 1",
          timeout=60)
    start = mark(vm)
    insmod_refused(vm, start, "modgated idle")
    name, _ = fresh_module(vm)
    reply, error = guest.load(vm, name)
    assert error is None and reply["modules"][-1]["outcome"] == "loaded", (error, reply)
    assert len(wait_records(vm, start, "MODGATE_CALLER_COMM=insmod")) == 1


def cleanup(vm):
    vm.sh("rm -f %s %s; systemctl daemon-reload; %s" % (DROPIN, WRONG_HASH_DROPIN, RESTART),
          check=False)
