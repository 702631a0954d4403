# SPDX-License-Identifier: LGPL-2.1-or-later
"""The control interface on the guest, then the seal, which nothing undoes but a reboot: varlinkctl
introspects every method and calls each read-only one; Seal loads its final list under the real unit
(/proc/sys/kernel/modules_disabled writable below ProtectKernelTunables=) and sets the sysctl; then
the kernel refuses a module to root itself, and a hotplugged NIC gets no driver: udev's request is
refused with Sealed and recorded. Its own boot, and the last thing in it."""

import json

import guest

APPEND = "modgate_vm.scenario=seal"
TIMEOUT = 240
METHODS = ("Load", "Unload", "Explain", "Reload", "List", "Describe", "Status", "Seal", "Monitor")
FINAL = "tcp_cdg"               # loaded by the Seal's final list
INSMOD = "tcp_bic"              # what root's own insmod tries after the seal
HOTPLUG_MODULE = "e1000"        # QEMU's e1000 NIC; this boot's own
NIC = "modgate-sealed-nic"
SEALED = "io.modgate.Manager.Sealed"
NOT_FOUND = "org.varlink.service.MethodNotFound"
SEALED_ID = "2599f1fbbcb64d94a435dc58f3b46dd0"
SEALED_REFUSED_ID = "25972186cde14878944b0edb085df09a"
STARTED_ID = "0b62bd3196754f93821022336e8ce9fa"


def sealed_value(vm):
    return vm.sh("cat /proc/sys/kernel/modules_disabled").out.strip()


def records(vm, *matches):
    return vm.journal("_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service", *matches)


def implemented(error, method):
    assert error != NOT_FOUND, \
        "%s is not implemented yet (org.varlink.service.MethodNotFound): this case passes once it is" % method


def test_introspect(vm):
    """varlinkctl introspect lists every method of io.modgate.Manager, and the Sealed error"""
    out = vm.sh("varlinkctl introspect %s io.modgate.Manager" % guest.SOCKET).out
    missing = [m for m in METHODS if "\nmethod %s(" % m not in out]
    assert not missing, "not introspected: %s\n%s" % (missing, out[:2000])
    assert "\nerror Sealed(" in out, out[:2000]


def test_read_only(vm):
    """GetInfo, Explain, List and Describe answer on the system's socket"""
    info, error = guest.varlinkctl(vm, "org.varlink.service.GetInfo")
    assert error is None and info["vendor"] == "modgate" and "io.modgate.Manager" in info["interfaces"], info
    ex, error = guest.varlinkctl(vm, "io.modgate.Manager.Explain", {"name": HOTPLUG_MODULE})
    assert error is None and ex["verdict"] == "load" and ex["modules"][-1]["origin"]["trusted"], (error, ex)
    listed, error = guest.varlinkctl(vm, "io.modgate.Manager.List")
    assert error is None, error
    loaded = [m["module"] for m in listed["modules"] if m["outcome"] == "loaded"]
    assert loaded, listed
    one, error = guest.varlinkctl(vm, "io.modgate.Manager.Describe", {"name": loaded[0]})
    assert error is None and one["module"]["module"] == loaded[0] and one["module"]["outcome"] == "loaded", one
    print("# %d modules listed, %s described" % (len(listed["modules"]), loaded[0]))


def test_status(vm):
    """Status answers, not sealed yet"""
    status, error = guest.varlinkctl(vm, "io.modgate.Manager.Status")
    implemented(error, "Status")
    assert error is None and status["sealed"] is False and status["mode"] == "enforce", (error, status)
    # The guest's module tree is an erofs on dm-verity: Status names its root hash, read from the
    # kernel's table, and the kernel's enforcement as the guest's /sys says it.
    root = status["roots"][0]
    assert root["path"] == "/usr/lib/modules/" + guest.kernel_release(vm) and root["state"] == "pinned", root
    assert root["verityRootHash"] == vm.manifest["roothash"], (root, vm.manifest["roothash"])
    assert "roothash=" + vm.manifest["roothash"] in root["identity"] and "fstype=erofs" in root["identity"], root
    sig = vm.sh("cat /sys/module/module/parameters/sig_enforce").out.strip()
    assert "module signatures: " in status["enforcement"] and "modules_disabled: 0" in status["enforcement"], status
    signatures = status["enforcement"].split(";")[0]
    assert signatures.startswith("module signatures: " + ("enforced" if sig == "Y" else "not enforced")), \
        (sig, signatures)
    print("# Status: %s; root %s" % (status["enforcement"], root["identity"]))
    # modgatectl status says the same, for a person.
    out = vm.sh("SYSTEMD_COLORS=0 modgatectl --no-pager status").out
    assert "dm-verity root hash: " + vm.manifest["roothash"] in out, out
    assert signatures in out.replace("\n", ";") or signatures.split(": ", 1)[1] in out, out
    assert "modules_disabled: 0" in out, out


MONITOR_FIRST = r'''
import socket
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect("%s")
s.sendall(b'{"method":"io.modgate.Manager.Monitor","parameters":{},"more":true}\0')
buf = b""
while not buf.endswith(b"\0"):
    buf += s.recv(65536)
print(buf.split(b"\0")[0].decode())
'''


def test_monitor(vm):
    """Monitor's first reply is the ready event"""
    # varlinkctl --more writes its replies when it ends, which a Monitor never does by itself: the
    # first reply is read here, from the socket.
    r = vm.sh("python3 -", stdin=MONITOR_FIRST % guest.SOCKET, timeout=30)
    first = json.loads(r.out)
    implemented(first.get("error"), "Monitor")
    assert first.get("continues") is True and first["parameters"]["event"]["type"] == "ready", r.out


def test_seal(vm):
    """Seal loads its final list, then kernel.modules_disabled reads 1, under the real unit's sandbox"""
    assert sealed_value(vm) == "0" and guest.live_modules(vm)[FINAL] == 0
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Seal", {"load": [FINAL]})
    assert error is None, (error, reply)
    assert [(m["name"], m["outcome"]) for m in reply["modules"]] == [(FINAL, "loaded")], reply
    assert sealed_value(vm) == "1"
    assert guest.initstate(vm, FINAL) == "live" and guest.records(vm, FINAL, "loaded")
    recs = records(vm, "MESSAGE_ID=" + SEALED_ID)
    assert len(recs) == 1, recs
    r = recs[0]
    assert r["MODGATE_METHOD"] == "Seal" and r["MODGATE_SEAL_LOAD"] == FINAL, r
    assert r["MODGATE_PEER_UNIT"] == "modgate-vm-agent.service" and r["PRIORITY"] == "5", r
    print("# pending: %s" % (reply["pending"] or "none"))


def test_kernel_refuses(vm):
    """root's own insmod fails with EPERM: the kernel refuses, not only modgate"""
    path, deps = guest.dependencies(vm, INSMOD)
    assert deps == [] and guest.live_modules(vm)[INSMOD] == 0
    r = vm.sh("insmod /usr/lib/modules/$(uname -r)/%s" % path, check=False)
    assert r.rc != 0 and "Operation not permitted" in r.err, r
    assert guest.live_modules(vm)[INSMOD] == 0
    # The sysctl takes 1 again, never 0.
    r = vm.sh("echo 0 > /proc/sys/kernel/modules_disabled", check=False)
    assert r.rc != 0 and sealed_value(vm) == "1", r
    # What writing it takes: root, with or without CAP_SYS_MODULE (1 again changes nothing).
    r = vm.sh("setpriv --inh-caps=-all --bounding-set=-sys_module sh -c 'echo 1 > /proc/sys/kernel/modules_disabled'",
              check=False)
    print("# root without CAP_SYS_MODULE writing 1 again: %s" % ("accepted" if r.rc == 0 else r.err.strip()))


def test_hotplug_refused(vm):
    """a hotplugged e1000 gets no driver: udev's request is refused with Sealed and recorded"""
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0, "e1000 is loaded already"
    vm.qmp("device_add", driver="e1000", id=NIC)
    vm.sh("for i in $(seq 300); do grep -qs 0x100e /sys/bus/pci/devices/*/device && break; sleep 0.1; done; "
          "udevadm settle", timeout=90)
    # Coldplug may still have been asking when the Seal came: those are refused too, for other devices.
    recs = []
    for _ in range(50):
        recs = [r for r in records(vm, "MESSAGE_ID=" + SEALED_REFUSED_ID, "MODGATE_SOURCE=udev")
                if r.get("MODGATE_MODALIAS", "").startswith("pci:v00008086d0000100E")]
        if recs:
            break
        vm.sh("sleep 0.2")
    assert len(recs) == 1, "no Sealed refusal of udev's request for the NIC: %s" % recs
    r = recs[0]
    assert r["MODGATE_METHOD"] == "Load" and r["MODGATE_OUTCOME"] == "refused_sealed", r
    assert r["MODGATE_DEVPATH"].startswith("/devices/pci") and r["MODGATE_ACTION"] == "add", r
    assert r["MODGATE_PEER_UNIT"] == "systemd-udevd.service", r
    assert guest.live_modules(vm)[HOTPLUG_MODULE] == 0 and guest.initstate(vm, HOTPLUG_MODULE) == "absent"
    nics = vm.sh("for n in /sys/class/net/*; do readlink $n/device/driver; done | grep -c '/e1000$' || true")
    assert nics.out.strip() == "0", nics.out
    print("# %s: %s" % (r["MODGATE_DEVPATH"], r["MESSAGE"]))


SEALED_AT = set()      # when the Seal went through, as Sealed errors say it


def test_sealed_requests(vm):
    """Load, Unload and Seal are answered Sealed, with when"""
    for method, params in (("Load", {"name": INSMOD}), ("Unload", {"name": FINAL}), ("Seal", {})):
        reply, error = guest.varlinkctl(vm, "io.modgate.Manager." + method, params)
        assert error == SEALED and reply["sealedAt"] > 0, (method, error, reply)
        SEALED_AT.add(reply["sealedAt"])
    assert len(SEALED_AT) == 1, SEALED_AT
    assert guest.initstate(vm, FINAL) == "live"


def test_restart_sealed(vm):
    """modgated started again is sealed from the start, says so, and knows when from its runtime directory"""
    vm.sh("systemctl stop modgated.service")
    reply, error = guest.load(vm, INSMOD)
    assert error == SEALED and {reply.get("sealedAt")} == SEALED_AT, (error, reply, SEALED_AT)
    pid = vm.sh("systemctl show -P MainPID modgated.service").out.strip()
    recs = records(vm, "MESSAGE_ID=" + STARTED_ID, "_PID=" + pid)
    assert len(recs) == 1 and recs[0]["MODGATE_SEALED"] == "1", recs
    assert "modules_disabled: 1" in recs[0]["MODGATE_ENFORCEMENT"], recs


def cleanup(vm):
    try:
        vm.qmp("device_del", id=NIC)
    except Exception:  # noqa: BLE001 - not added when its case failed early
        pass
