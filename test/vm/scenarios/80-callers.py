# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who may ask the system's modgated for what (docs/authorization.md), on the real guest: root
processes that were denied module loading (ProtectKernelModules=, a bounding set without
CAP_SYS_MODULE, a user namespace of their own) are refused, and so is a root shell that claims a
source it is not; a ReadGroup= member's connection gains nothing when the process that made it runs
su, which holds root's capabilities while it waits at its password prompt; the kernel's request_module(), udevd and the boot-list unit are what they say.
Its own boot: the boot list is the kernel command line's modules_load=, which only a boot reads."""

import json

import guest

ADMIN_MODULE = "tcp_veno"       # refused to sandboxed services, then loaded by an unrestricted one
CLAIM_MODULE = "tcp_lp"         # asked for by a root shell claiming each source: never loaded
KERNEL_MODULE = "minix"         # request_module("fs-minix") from mount(2)
BOOT_LIST_MODULE = "tcp_highspeed"
HOTPLUG_DEVICE = "virtio-balloon-pci"
HOTPLUG_MODULE = "virtio_balloon"
FORGED_MODULE = "tcp_dctcp"     # asked for from udevd's cgroup without CAP_SYS_MODULE: never loaded
KEPT_MODULE = "tcp_bbr"         # asked for on a member's connection while su holds root: never loaded

APPEND = "modules_load=" + BOOT_LIST_MODULE
TIMEOUT = 240

REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
DENIED = "io.modgate.Manager.PermissionDenied"
UNIT = "modgate-callers"
OUT = "/run/modgate-vm-callers"
# A cgroup below udevd's own (DelegateSubgroup=udev): udevd kills what else it finds in its own
# cgroup whenever it is idle (cg_kill() of that cgroup only, not of its children), which killed a
# process moved there in the middle of its call.
FORGED_CGROUP = "/sys/fs/cgroup/system.slice/systemd-udevd.service/udev/modgate-vm-forged"


def call_in_unit(vm, name, properties, method, parameters):
    """varlinkctl METHOD PARAMETERS as the main process of the transient service NAME.service with
    PROPERTIES: (reply or error parameters, error name or None, the unit's Result). Not `systemd-run
    --wait --pipe`: those need the D-Bus system bus, which the guest has not (systemd-run without
    them talks to PID 1 directly); a oneshot service's start job ends when its process does."""
    unit = "%s-%s.service" % (UNIT, name)
    props = " ".join("-p " + guest.quote(p) for p in properties)
    out = vm.sh("""
        systemctl reset-failed %(unit)s 2>/dev/null
        rm -f %(out)s.out %(out)s.err
        systemd-run --quiet --unit=%(unit)s --service-type=oneshot \
                -p StandardOutput=file:%(out)s.out -p StandardError=file:%(out)s.err %(props)s \
                varlinkctl call %(socket)s %(method)s %(params)s >/dev/null 2>&1
        echo "$(systemctl show -P Result %(unit)s) $(systemctl show -P ExecMainStatus %(unit)s)"
        systemctl reset-failed %(unit)s 2>/dev/null; systemctl stop %(unit)s 2>/dev/null
        echo ---; cat %(out)s.out; echo ---; cat %(out)s.err
        rm -f %(out)s.out %(out)s.err
        """ % {"unit": unit, "out": OUT, "props": props, "socket": guest.SOCKET, "method": method,
               "params": guest.quote(json.dumps(parameters))}).out
    status, stdout, stderr = out.split("---\n", 2)
    result, _, rc = status.strip().partition(" ")
    params = json.loads(stdout) if stdout.strip() else {}
    if rc == "0":
        return params, None, result
    error = stderr.strip().rsplit(": ", 1)[-1] if "failed:" in stderr else stderr.strip()
    return params, error, result


def refusals(vm, **fields):
    """This boot's refused_caller records with FIELD=value matches."""
    return vm.journal("MESSAGE_ID=" + REFUSED_ID, "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service",
                      *("%s=%s" % kv for kv in sorted(fields.items())))


def assert_refused_in_unit(vm, name, properties, method="Load", module=ADMIN_MODULE, why="lacks CAP_SYS_MODULE"):
    unit = "%s-%s.service" % (UNIT, name)
    reply, error, result = call_in_unit(vm, name, properties, "io.modgate.Manager." + method, {"name": module})
    assert error == DENIED, (error, reply, result)
    assert why in reply["reason"] and unit in reply["reason"], reply
    recs = refusals(vm, MODGATE_PEER_UNIT=unit)
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_OUTCOME"] == "refused_caller" and r["MODGATE_METHOD"] == method, r
    assert r["MODGATE_REASON"] == reply["reason"] and r["MODGATE_REQUEST_NAME"] == module, r
    # It claimed no source: "admin" (the default) or nothing.
    assert r["MODGATE_PEER_UID"] == "0" and r.get("MODGATE_CLAIMED_SOURCE", "admin") == "admin", r
    assert "MODGATE_CLAIMED_DEVPATH" not in r and r["PRIORITY"] == "4", r
    print("# %s (%s): %s" % (unit, " ".join(properties), reply["reason"]))
    return r



def new_window(vm):
    """A new window of the refusal counting (a reload begins one): a refusal of a key this peer was
    refused before in the same minute is counted, not recorded (docs/journal.md), and these cases read
    each refusal's own record."""
    vm.sh("systemctl try-reload-or-restart modgated.service")

def test_protect_kernel_modules(vm):
    """a service with ProtectKernelModules=yes is refused Load: PermissionDenied, journaled with its unit"""
    assert guest.live_modules(vm)[ADMIN_MODULE] == 0, "%s is loaded already" % ADMIN_MODULE
    assert_refused_in_unit(vm, "pkm", ["ProtectKernelModules=yes"])
    assert guest.live_modules(vm)[ADMIN_MODULE] == 0
    assert not guest.records(vm, ADMIN_MODULE, "loaded")


def test_bounding_set(vm):
    """a service whose bounding set lacks CAP_SYS_MODULE is refused Load"""
    assert_refused_in_unit(vm, "bnd", ["CapabilityBoundingSet=~CAP_SYS_MODULE"])
    assert guest.live_modules(vm)[ADMIN_MODULE] == 0


def test_private_users(vm):
    """a service with PrivateUsers=yes reaches the socket and is refused: its CAP_SYS_MODULE is its own namespace's"""
    # Root is mapped to root (a system service's PrivateUsers=yes), so the 0600 socket is open to
    # it, and inside its namespace it holds every capability, CAP_SYS_MODULE included.
    r = assert_refused_in_unit(vm, "userns", ["PrivateUsers=yes"],
                               why="lacks CAP_SYS_MODULE in the initial user namespace")
    assert guest.live_modules(vm)[ADMIN_MODULE] == 0, r


def test_unrestricted_loads(vm):
    """the same call from an unrestricted root service loads the module, its record naming the unit"""
    unit = "%s-admin.service" % UNIT
    reply, error, result = call_in_unit(vm, "admin", [], "io.modgate.Manager.Load", {"name": ADMIN_MODULE})
    assert error is None and result == "success", (error, reply, result)
    assert [(m["name"], m["outcome"]) for m in reply["modules"]] == [(ADMIN_MODULE, "loaded")], reply
    assert guest.initstate(vm, ADMIN_MODULE) == "live"
    recs = guest.records(vm, ADMIN_MODULE, "loaded")
    assert len(recs) == 1, recs
    assert recs[0]["MODGATE_PEER_UNIT"] == unit and recs[0]["MODGATE_SOURCE"] == "admin", recs
    assert not refusals(vm, MODGATE_PEER_UNIT=unit)


def test_unload_refused(vm):
    """Unload from a ProtectKernelModules=yes service is refused, and the module stays"""
    assert_refused_in_unit(vm, "pkm-unload", ["ProtectKernelModules=yes"], method="Unload")
    assert guest.initstate(vm, ADMIN_MODULE) == "live"
    assert not guest.records(vm, ADMIN_MODULE, "unloaded")


def test_claimed_sources(vm):
    """a root shell claiming source kernel, udev or boot is refused, journaled as a claim, never as provenance"""
    assert guest.live_modules(vm)[CLAIM_MODULE] == 0, "%s is loaded already" % CLAIM_MODULE
    devpath = "/devices/platform/serial8250"
    not_by = {
        "kernel": "which is not a kernel usermode helper",
        "udev": "not by systemd-udevd.service",
        "boot": "not by modgate-modules-load.service",
    }
    for source, why in not_by.items():
        context = {"source": source}
        if source == "udev":
            context["devpath"] = devpath
        reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"name": CLAIM_MODULE, "context": context})
        assert error == DENIED, (source, error, reply)
        reason = reply["reason"]
        assert reason.startswith('source "%s" is claimed by pid ' % source), reply
        assert "(modgate-vm-agent.service)" in reason and reason.endswith(why), reply
        recs = refusals(vm, MODGATE_CLAIMED_SOURCE=source, MODGATE_REQUEST_NAME=CLAIM_MODULE)
        assert len(recs) == 1, recs
        r = recs[0]
        assert r["MODGATE_REASON"] == reason and r["MODGATE_PEER_UNIT"] == "modgate-vm-agent.service", r
        assert r["MODGATE_METHOD"] == "Load" and r["MODGATE_PEER_UID"] == "0", r
        assert r.get("MODGATE_CLAIMED_DEVPATH") == (devpath if source == "udev" else None), r
        assert "MODGATE_SOURCE" not in r and "MODGATE_DEVPATH" not in r, r
        print("# %s: %s" % (source, reason))
    # No record of any kind says one of those sources asked for it.
    for source in not_by:
        assert not vm.journal("MODGATE_REQUEST_NAME=" + CLAIM_MODULE, "MODGATE_SOURCE=" + source,
                              "_BOOT_ID=" + vm.boot_id)
    assert not guest.records(vm, CLAIM_MODULE)
    assert guest.live_modules(vm)[CLAIM_MODULE] == 0


def test_kernel_request(vm):
    """the kernel's request_module() through modgate-modprobe is source kernel, with no unit and no refusal"""
    assert guest.live_modules(vm)[KERNEL_MODULE] == 0, "%s is loaded already" % KERNEL_MODULE
    # Fails (no block device), but only after the kernel has asked for the file system type.
    vm.sh("mkdir -p /tmp/modgate-minix; mount -t minix /dev/null /tmp/modgate-minix", check=False)
    assert guest.initstate(vm, KERNEL_MODULE) == "live"
    recs = guest.records(vm, KERNEL_MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_SOURCE"] == "kernel" and r["MODGATE_MODALIAS"] == "fs-" + KERNEL_MODULE, r
    # A usermode helper runs in the root cgroup: no unit.
    assert not r.get("MODGATE_PEER_UNIT") and r["MODGATE_PEER_UID"] == "0", r
    assert not refusals(vm, MODGATE_MODALIAS="fs-" + KERNEL_MODULE)
    assert not refusals(vm, MODGATE_PEER_PID=r["MODGATE_PEER_PID"])
    # So were all of this boot's kernel requests that modgate-modprobe made.
    kernel = vm.journal("MODGATE_SOURCE=kernel", "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
    assert kernel and all(not k.get("MODGATE_PEER_UNIT") for k in kernel), kernel


def describe(recs):
    return "\n".join("pid %s devpath %s name %s modalias %s: MODGATE_REASON=%s" % (
        r.get("MODGATE_PEER_PID"), r.get("MODGATE_CLAIMED_DEVPATH"), r.get("MODGATE_REQUEST_NAME"),
        r.get("MODGATE_MODALIAS"), r.get("MODGATE_REASON")) for r in recs)


def test_udev_coldplug(vm):
    """coldplug's requests came from systemd-udevd.service, and none of udevd's was refused"""
    recs = vm.journal("MODGATE_SOURCE=udev", "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
    assert recs, "no request from udev in this boot"
    assert all(r.get("MODGATE_PEER_UNIT") == "systemd-udevd.service" for r in recs), \
        [r for r in recs if r.get("MODGATE_PEER_UNIT") != "systemd-udevd.service"]
    loaded = sorted({r["MODGATE_MODULE"] for r in recs if r["MODGATE_OUTCOME"] == "loaded"})
    assert loaded, "coldplug loaded nothing through modgate"
    refused = refusals(vm, MODGATE_PEER_UNIT="systemd-udevd.service")
    assert not refused, "udevd's requests were refused:\n" + describe(refused)
    print("# %d udev records, from systemd-udevd.service; loaded %s" % (len(recs), " ".join(loaded)))


def test_udev_hotplug(vm):
    """a hotplugged virtio balloon gets its driver through modgate-udev, asked by systemd-udevd.service"""
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0, "%s is loaded already" % HOTPLUG_MODULE
    vm.qmp("device_add", driver=HOTPLUG_DEVICE, id="modgate-balloon")
    vm.sh("for i in $(seq 300); do grep -q '^%s ' /proc/modules && break; sleep 0.1; done; udevadm settle"
          % HOTPLUG_MODULE, timeout=90)
    assert guest.initstate(vm, HOTPLUG_MODULE) == "live"
    recs = guest.records(vm, HOTPLUG_MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_SOURCE"] == "udev" and r["MODGATE_SUBSYSTEM"] == "virtio", r
    assert r["MODGATE_PEER_UNIT"] == "systemd-udevd.service" and r["MODGATE_ACTION"] == "add", r
    assert r["MODGATE_MODALIAS"].startswith("virtio:d00000005v"), r
    refused = refusals(vm, MODGATE_PEER_UNIT="systemd-udevd.service")
    assert not refused, "udevd's requests were refused:\n" + describe(refused)
    vm.balloon_devpath = r["MODGATE_DEVPATH"]
    vm.balloon_seqnum = int(r["MODGATE_SEQNUM"])


def forge(vm, parameters):
    """varlinkctl Load from a process moved into udevd's cgroup, with udevd's capabilities (no
    CAP_SYS_MODULE): what a compromised udev rule or helper could ask. (its pid, reply or error
    parameters, error name or None)"""
    r = vm.sh("""mkdir -p %(cg)s; (
        echo $BASHPID >%(cg)s/cgroup.procs
        echo $BASHPID
        exec setpriv --bounding-set=-sys_module --inh-caps=-sys_module \\
                varlinkctl call %(socket)s io.modgate.Manager.Load %(params)s
        )""" % {"cg": FORGED_CGROUP, "socket": guest.SOCKET, "params": guest.quote(json.dumps(parameters))},
              check=False)
    pid, _, out = r.out.partition("\n")
    params = json.loads(out) if out.strip() else {}
    if r.rc == 0:
        return pid, params, None
    return pid, params, r.err.strip().rsplit(": ", 1)[-1] if "failed:" in r.err else r.err.strip()


def test_udev_forged(vm):
    """from udevd's cgroup without CAP_SYS_MODULE: another modalias than the kernel's event had, a name no rule passes, no device, another device than the event's, a made-up SEQNUM or none are refused"""
    devpath = getattr(vm, "balloon_devpath", None)
    assert devpath, "no hotplugged device (the hotplug case failed)"
    modalias = vm.sh("sed -n 's/^MODALIAS=//p' /sys%s/uevent" % devpath).out.strip()
    assert modalias.startswith("virtio:"), modalias
    # The kernel's event of the hotplug, which udevd's requests are checked against.
    seqnum = vm.balloon_seqnum
    made_up = int(vm.sh("cat /sys/kernel/uevent_seqnum").out) + 100000
    asks = [
        ({"name": FORGED_MODULE, "context": {"source": "udev", "devpath": devpath, "seqnum": seqnum}},
         "module %s is not one that udev's installed rules name" % FORGED_MODULE),
        ({"modalias": "tcp-dctcp", "context": {"source": "udev", "devpath": devpath, "seqnum": seqnum}},
         "modalias tcp-dctcp is not device %s's (%s)" % (devpath, modalias)),
        ({"name": FORGED_MODULE}, "udevd's requests must name their device"),
        ({"modalias": modalias, "context": {"source": "udev", "devpath": "/devices/virtual/none", "seqnum": seqnum}},
         "the kernel's uevent %d is for %s, not /devices/virtual/none" % (seqnum, devpath)),
        ({"modalias": modalias, "context": {"source": "udev", "devpath": devpath, "seqnum": made_up}},
         "the kernel sent no uevent %d" % made_up),
        ({"modalias": modalias, "context": {"source": "udev", "devpath": devpath}},
         "the request gives no SEQNUM of the kernel's event"),
    ]
    vm.forged_pids = set()
    for params, why in asks:
        new_window(vm)
        pid, reply, error = forge(vm, params)
        vm.forged_pids.add(pid)
        assert error == DENIED and reply.get("reason", "").startswith(why), (params, error, reply)
        recs = refusals(vm, MODGATE_PEER_PID=pid)
        assert len(recs) == 1 and recs[0]["MODGATE_PEER_UNIT"] == "systemd-udevd.service", recs
        assert recs[0]["MODGATE_REASON"] == reply["reason"], recs
        print("# forged %s: %s" % (json.dumps(params), reply["reason"]))
    # The device's own modalias is what udevd may ask for: its driver is loaded already.
    pid, reply, error = forge(vm, {"modalias": modalias,
                                   "context": {"source": "udev", "devpath": devpath, "seqnum": seqnum}})
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["already_loaded"], (error, reply)
    assert not refusals(vm, MODGATE_PEER_PID=pid)
    assert guest.live_modules(vm)[FORGED_MODULE] == 0
    vm.sh("rmdir %s" % FORGED_CGROUP)


def test_boot_list(vm):
    """the boot list's modules_load= was loaded at boot by modgate-modules-load.service, as source boot"""
    assert vm.sh("systemctl show -P Result modgate-modules-load.service").out.strip() == "success"
    assert guest.initstate(vm, BOOT_LIST_MODULE) == "live"
    recs = guest.records(vm, BOOT_LIST_MODULE, "loaded")
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_SOURCE"] == "boot" and r["MODGATE_PEER_UNIT"] == "modgate-modules-load.service", r
    print("# boot list record: MODGATE_LIST_FILE=%s" % r.get("MODGATE_LIST_FILE"))
    boot = vm.journal("MODGATE_SOURCE=boot", "_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
    assert all(b.get("MODGATE_PEER_UNIT") == "modgate-modules-load.service" for b in boot), boot
    refused = refusals(vm, MODGATE_PEER_UNIT="modgate-modules-load.service")
    assert not refused, describe(refused)


MEMBER_UID, READERS_GID = 4242, 4343
READERS_DROPIN = "/etc/modgate/modgate.conf.d/80-modgate-vm-readers.conf"
SU_SCRIPT = "/run/modgate-vm-su.py"
SAVED_ETC = "/run/modgate-vm-callers-etc"     # passwd, shadow and group as they were
# Run as the member: connects, asks Explain (a reader's call: the daemon has accepted the connection),
# forks a keeper that holds the socket, and execs su on a pty of its own. Once su prints its prompt
# the keeper asks for a Load. Prints one JSON a line: what su printed, the Explain reply, the
# connector as the keeper saw it before its call, the Load reply, and the connector after.
SU_DRIVER = r"""
import json, os, pty, select, socket, sys, time
address, module = sys.argv[1], sys.argv[2]
rfd, wfd = os.pipe()            # the keeper's lines; close-on-exec, so su holds neither pipe
gor, gow = os.pipe()            # "su is at its prompt"

def status(pid):
    with open("/proc/%d/status" % pid) as f:
        return {k: v.strip() for k, v in (x.split(":", 1) for x in f.read().splitlines() if ":" in x)}

def seen(st):
    return {k: st.get(k) for k in ("Name", "State", "Uid", "CapEff")}

pid, master = pty.fork()
if pid == 0:
    s = socket.socket(socket.AF_UNIX)
    s.connect(address)
    buf = b""
    def call(method, params):
        global buf
        s.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
        while b"\0" not in buf:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
        msg, buf = buf.split(b"\0", 1)
        return msg.decode()
    out = os.fdopen(wfd, "w")
    out.write(call("io.modgate.Manager.Explain", {"name": module}) + "\n")
    out.flush()
    me = os.getpid()
    if os.fork() == 0:
        os.read(gor, 1)
        out.write(json.dumps(seen(status(me))) + "\n")
        out.write(call("io.modgate.Manager.Load", {"name": module}) + "\n")
        out.write(json.dumps(seen(status(me))) + "\n")
        out.close()
        os._exit(0)
    os.execv("/usr/bin/su", ["su", "-"])
os.close(wfd)
os.close(gor)
prompt = b""
deadline = time.monotonic() + 60
while b"assword" not in prompt and time.monotonic() < deadline:
    if select.select([master], [], [], 1)[0]:
        try:
            prompt += os.read(master, 1024)
        except OSError:
            break
print(json.dumps(prompt.decode(errors="replace")), flush=True)
os.write(gow, b"x")
with os.fdopen(rfd) as f:
    sys.stdout.write(f.read())
os.kill(pid, 9)
os.waitpid(pid, 0)
"""


def test_su_at_prompt(vm):
    """a ReadGroup= member's kept connection cannot Load while the process that made it waits in su at its password prompt"""
    assert guest.live_modules(vm)[KEPT_MODULE] == 0, "%s is loaded already" % KEPT_MODULE
    new_window(vm)
    # The member, the group the socket is opened to, and a root password su must ask for (an empty
    # one would let pam_unix's nullok in without a prompt).
    vm.sh("""
        mkdir -p %(saved)s && cp -n /etc/passwd /etc/shadow /etc/group %(saved)s/
        grep -q '^modgate-member:' /etc/passwd || {
            echo 'modgate-member:x:%(uid)d:%(gid)d::/nonexistent:/bin/sh' >>/etc/passwd
            echo 'modgate-member:!:20000::::::' >>/etc/shadow
            echo 'modgate-readers:x:%(gid)d:' >>/etc/group; }
        sed -i 's/^root::/root:!:/' /etc/shadow
        mkdir -p /etc/modgate/modgate.conf.d
        printf '[Manager]\nReadGroup=%(gid)d\n' >%(dropin)s
        chgrp %(gid)d %(socket)s && chmod 0660 %(socket)s
        """ % {"uid": MEMBER_UID, "gid": READERS_GID, "dropin": READERS_DROPIN, "socket": guest.SOCKET,
               "saved": SAVED_ETC})
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Reload")
    assert error is None, (error, reply)
    vm.sh("cat >%s" % SU_SCRIPT, stdin=SU_DRIVER)
    out = vm.sh("setpriv --reuid=%d --regid=%d --clear-groups python3 %s %s %s"
                % (MEMBER_UID, READERS_GID, SU_SCRIPT, guest.SOCKET, KEPT_MODULE), timeout=120).out
    lines = [json.loads(x) for x in out.splitlines()]
    prompt, explained, before, loaded, after = lines
    assert "Password" in prompt, lines
    assert "error" not in explained, explained
    # su at its prompt: the member's real uid, root's effective one, and every capability.
    for st in (before, after):
        assert st["Name"] == "su" and st["Uid"].split()[:2] == [str(MEMBER_UID), "0"], lines
        assert int(st["CapEff"], 16) & (1 << 16), lines
    reply = loaded
    assert reply.get("error") == DENIED, reply
    why = reply["parameters"]["reason"]
    assert "lacked CAP_SYS_MODULE when it connected" in why, reply
    assert guest.live_modules(vm)[KEPT_MODULE] == 0
    assert not guest.records(vm, KEPT_MODULE, "loaded")
    recs = refusals(vm, MODGATE_PEER_UID=str(MEMBER_UID))
    assert len(recs) == 1 and recs[0]["MODGATE_REASON"] == why and recs[0]["MODGATE_METHOD"] == "Load", recs
    assert recs[0]["MODGATE_REQUEST_NAME"] == KEPT_MODULE, recs
    print("# %s; su: %s" % (why, before))


def test_own_user_namespace(vm):
    """root in a user namespace of its own (unshare -Ur: every capability there) is refused"""
    new_window(vm)
    r = vm.sh("unshare -Ur varlinkctl call %s io.modgate.Manager.Load %s"
              % (guest.SOCKET, guest.quote(json.dumps({"name": KEPT_MODULE}))), check=False)
    assert r.rc != 0 and DENIED in r.err, (r.rc, r.out, r.err)
    reason = json.loads(r.out)["reason"]
    assert "lacks CAP_SYS_MODULE in the initial user namespace" in reason, reason
    recs = refusals(vm, MODGATE_REASON=reason)
    assert len(recs) == 1 and recs[0]["MODGATE_PEER_UNIT"] == "modgate-vm-agent.service", recs
    assert guest.live_modules(vm)[KEPT_MODULE] == 0


def test_no_other_refusals(vm):
    """every refusal of this boot is one this scenario asked for"""
    ours = {"%s-%s.service" % (UNIT, n) for n in ("pkm", "bnd", "userns", "pkm-unload")}
    forged = getattr(vm, "forged_pids", set())
    others = [r for r in refusals(vm)
              if r.get("MODGATE_PEER_UNIT") not in ours
              and not (r.get("MODGATE_PEER_UNIT") == "modgate-vm-agent.service"
                       and r.get("MODGATE_REQUEST_NAME") == CLAIM_MODULE)
              and not (r.get("MODGATE_PEER_UNIT") == "systemd-udevd.service" and r["MODGATE_PEER_PID"] in forged)
              and r.get("MODGATE_REQUEST_NAME") != KEPT_MODULE]
    assert not others, "refused:\n" + "\n".join("%s: %s" % (r.get("MODGATE_PEER_UNIT"), r["MESSAGE"]) for r in others)
    kept = refusals(vm, MODGATE_REQUEST_NAME=KEPT_MODULE)
    assert len(kept) == 2, kept     # su's and the user namespace's
    assert len(refusals(vm)) == len(ours) + 3 + len(forged) + len(kept), len(refusals(vm))


def cleanup(vm):
    vm.sh("""
        rm -f %(dropin)s %(script)s
        chgrp root %(socket)s; chmod 0600 %(socket)s
        [ -d %(saved)s ] && for f in passwd shadow group; do cat %(saved)s/$f >/etc/$f; done; rm -rf %(saved)s
        varlinkctl call %(socket)s io.modgate.Manager.Reload '{}' >/dev/null
        """ % {"dropin": READERS_DROPIN, "script": SU_SCRIPT, "socket": guest.SOCKET, "saved": SAVED_ETC},
          check=False)
    vm.sh("umount /tmp/modgate-minix 2>/dev/null; rm -f %s.out %s.err; rmdir %s 2>/dev/null" % (OUT, OUT, FORGED_CGROUP),
          check=False)
    try:
        vm.qmp("device_del", id="modgate-balloon")
    except Exception:
        pass
    vm.sh("rmmod %s %s %s %s" % (ADMIN_MODULE, KERNEL_MODULE, BOOT_LIST_MODULE, HOTPLUG_MODULE), check=False)
