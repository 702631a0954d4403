# SPDX-License-Identifier: LGPL-2.1-or-later
"""The gate's own inputs on the real guest (docs/authorization.md, "What can steer the gate"): with
Deny=algif_aead in /etc/modgate, a root process denied module loading, from a service with
ProtectKernelModules=yes and ProtectSystem=full or from a process placed in systemd-udevd.service's
cgroup, writes a permissive drop-in into /run/modgate and module options into /run/modprobe.d, and
sends modgated SIGHUP and SIGTERM: an unprivileged user's AF_ALG bind still does not load algif_aead,
the SIGHUP is recorded with its sender, and the files in /run are recorded as ignored. `systemctl
reload` (PID 1's SIGHUP) still reloads. udevd under the takeover cannot write modgate's
configuration, modprobe.d or /run/modgate, cannot see /run/modgated, and still connects. Its own
boot: the policy holds af_alg's and algif_aead's state for the whole scenario."""

import json

import guest

APPEND = "modgate_vm.scenario=inputs"
TIMEOUT = 300

AEAD_MODULE = "algif_aead"
RELOAD_MODULE = "algif_skcipher"        # denied by the drop-in only after `systemctl reload`
DROPIN = "/etc/modgate/modgate.conf.d/91-modgate-vm-inputs.conf"
RUN_CONF = "/run/modgate/modgate.conf.d/zz.conf"
RUN_MODPROBE = "/run/modprobe.d/zz-modgate-vm.conf"
ATTACK = r"""
mkdir -p /run/modgate/modgate.conf.d /run/modprobe.d
printf '[Policy]\nMode=permissive\nDeny=\n' >%(conf)s
printf 'options algif_aead attacker=1\n' >%(modprobe)s
pid=$(systemctl show -P MainPID modgated.service)
[ "$pid" -gt 0 ]
kill -HUP "$pid"
sleep 2
kill -TERM "$pid"
""" % {"conf": RUN_CONF, "modprobe": RUN_MODPROBE}
UNIT = "modgate-vm-inputs"
CGROUP = "/sys/fs/cgroup/system.slice/systemd-udevd.service/udev/modgate-vm-inputs"

DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"
LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
IGNORED_ID = "9e22e8cd04ac4b1b96efdff8468ffa49"
SIGNAL_ID = "5f6d944c146d4f51b242f50c3989ef5f"

AF_ALG_PROGRAM = r'''
import json, socket
out = {"socket": None, "bind": None}
try:
    s = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)
except OSError as e:
    out["socket"] = e.errno
else:
    try:
        s.bind(("aead", "gcm(aes)"))
    except OSError as e:
        out["bind"] = e.errno
    s.close()
print(json.dumps(out))
'''


def mark(vm):
    return int(vm.sh("python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'").out)


def since(vm, start, *matches):
    return [e for e in vm.journal("_BOOT_ID=" + vm.boot_id, *matches)
            if int(e["__MONOTONIC_TIMESTAMP"]) >= start]


def unprivileged_bind(vm):
    """An AF_ALG bind of an AEAD transform by nobody, which has the kernel ask for algif-aead."""
    r = vm.sh("setpriv --reuid=nobody --regid=nogroup --clear-groups python3 -", stdin=AF_ALG_PROGRAM,
              timeout=90).json()
    print("# as nobody: socket(AF_ALG) %s, bind(aead, gcm(aes)) %s" % (r["socket"], r["bind"]))
    return r


def wait_stopped(vm):
    vm.sh("for i in $(seq 100); do [ \"$(systemctl show -P MainPID modgated.service)\" = 0 ] && exit 0; "
          "sleep 0.1; done; exit 1")


def assert_attack_failed(vm, start, sender_unit):
    """After the attack: the restart read /etc only (the bind fails, algif_aead is not loaded, a
    denial record), the SIGHUP before it was ignored (a record with the sender's unit, no reload),
    and the new instance said once that it does not read the two files in /run."""
    wait_stopped(vm)
    r = unprivileged_bind(vm)
    assert guest.live_modules(vm)[AEAD_MODULE] == 0, "algif_aead was loaded"
    assert r["socket"] is None and r["bind"] is not None, r
    denied = since(vm, start, "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
    assert denied and denied[-1]["MODGATE_RULE"] == DROPIN + ":2 (Deny=algif_aead)", denied
    assert not since(vm, start, "MESSAGE_ID=" + LOADED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
    assert not since(vm, start, "_SYSTEMD_UNIT=modgated.service", "MESSAGE=Reloaded the module index and modprobe.d.")
    sig = since(vm, start, "MESSAGE_ID=" + SIGNAL_ID)
    assert len(sig) == 1, sig
    assert sig[0]["MODGATE_SIGNAL"] == "SIGHUP" and sig[0]["MODGATE_SENDER_UID"] == "0", sig
    assert sig[0].get("MODGATE_SENDER_UNIT") == sender_unit, sig
    print("# %s" % sig[0]["MESSAGE"])
    ignored = {e["MODGATE_INPUT"]: e["MODGATE_IGNORED_FILES"] for e in since(vm, start, "MESSAGE_ID=" + IGNORED_ID)}
    assert ignored == {"configuration": RUN_CONF, "modprobe.d": RUN_MODPROBE}, ignored


def clean_run(vm):
    """Removes the attacker's files, and has modgated running again for the next case (and the module
    unloaded, where an attack got it loaded: each case stands on its own)."""
    vm.sh("rm -f %s %s; rmmod %s 2>/dev/null; systemctl start modgated.service" % (RUN_CONF, RUN_MODPROBE, AEAD_MODULE))


def test_setup(vm):
    """Deny=algif_aead in /etc/modgate: nobody's AF_ALG bind does not load it"""
    vm.sh("mkdir -p %s && printf '[Policy]\\nDeny=%s\\n' >%s && systemctl restart modgated.service"
          % (DROPIN.rsplit("/", 1)[0], AEAD_MODULE, DROPIN))
    start = mark(vm)
    r = unprivileged_bind(vm)
    assert r["socket"] is None and r["bind"] is not None, r
    assert guest.live_modules(vm)[AEAD_MODULE] == 0
    assert since(vm, start, "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODULE=" + AEAD_MODULE)


def test_protect_kernel_modules(vm):
    """a ProtectKernelModules=yes ProtectSystem=full service writes /run/modgate and /run/modprobe.d, sends SIGHUP and SIGTERM: algif_aead stays denied"""
    start = mark(vm)
    unit = UNIT + "-pkm.service"
    try:
        vm.sh("systemd-run --quiet --unit=%s --service-type=oneshot -p ProtectKernelModules=yes "
              "-p ProtectSystem=full sh -ec %s; systemctl show -P Result %s"
              % (unit, guest.quote(ATTACK), unit))
        assert vm.sh("systemctl show -P ExecMainStatus %s" % unit).out.strip() == "0"
        assert_attack_failed(vm, start, unit)
    finally:
        vm.sh("systemctl reset-failed %s 2>/dev/null; true" % unit, check=False)
        clean_run(vm)


def test_udevd_cgroup(vm):
    """a root process in systemd-udevd.service's cgroup without CAP_SYS_MODULE does the same: algif_aead stays denied"""
    start = mark(vm)
    try:
        vm.sh("mkdir -p %s && echo $$ >%s/cgroup.procs && exec setpriv --bounding-set=-sys_module "
              "--inh-caps=-sys_module sh -ec %s" % (CGROUP, CGROUP, guest.quote(ATTACK)))
        assert_attack_failed(vm, start, "systemd-udevd.service")
    finally:
        clean_run(vm)
        vm.sh("rmdir %s 2>/dev/null; true" % CGROUP, check=False)


def test_systemctl_reload(vm):
    """`systemctl reload modgated` (PID 1's SIGHUP) reloads: a Deny= added in /etc applies at once"""
    guest.varlinkctl(vm, "io.modgate.Manager.Status")      # running, with the file as it is now
    vm.sh("printf '[Policy]\\nDeny=%s\\nDeny=%s\\n' >%s" % (AEAD_MODULE, RELOAD_MODULE, DROPIN))
    e, err = guest.varlinkctl(vm, "io.modgate.Manager.Explain", {"name": RELOAD_MODULE})
    assert err is None and e["verdict"] != "denied", (e, err)
    start = mark(vm)
    vm.sh("systemctl reload modgated.service")
    e, err = guest.varlinkctl(vm, "io.modgate.Manager.Explain", {"name": RELOAD_MODULE})
    assert err is None and e["verdict"] == "denied", (e, err)
    assert e["rule"] == DROPIN + ":3 (Deny=%s)" % RELOAD_MODULE, e
    assert not since(vm, start, "MESSAGE_ID=" + SIGNAL_ID)


def test_udevd_sandbox(vm):
    """udevd under the takeover cannot write modgate's configuration, modprobe.d or /run/modgate, nor see /run/modgated; it still connects, and its loads went through"""
    # "-": what is not there when udevd starts is skipped, and /etc/modgate was made after boot.
    vm.sh("systemctl restart systemd-udevd.service")
    pid = vm.sh("systemctl show -P MainPID systemd-udevd.service").out.strip()
    assert pid != "0"
    r = vm.sh(r"""
        for p in /etc/modgate/x /etc/modprobe.d/x.conf /usr/lib/modprobe.d/x.conf /run/modgate/x \
                 /run/modgate/modgate.conf.d/x.conf; do
                if nsenter -t %(pid)s -m sh -c "mkdir -p \$(dirname $p) 2>/dev/null; : >$p" 2>/dev/null; then
                        echo "writable $p"; rm -f "$p"
                fi
        done
        # Made inaccessible: an empty directory of mode 0000 over it (which root could list: empty).
        [ -n "$(ls -A /run/modgated)" ] || echo "empty /run/modgated outside"
        [ -z "$(nsenter -t %(pid)s -m ls -A /run/modgated 2>/dev/null)" ] || echo "visible /run/modgated"
        nsenter -t %(pid)s -m sh -c ': >/run/modgated/x' 2>/dev/null && echo "writable /run/modgated/x"
        nsenter -t %(pid)s -m python3 -c '
import socket; s = socket.socket(socket.AF_UNIX); s.connect("/run/modgate/io.modgate"); print("connected")'
        """ % {"pid": pid}, check=False)
    print("# " + r.out.replace("\n", "; "))
    assert "writable" not in r.out and "visible" not in r.out and "empty" not in r.out, r.out
    assert "connected" in r.out, (r.out, r.err)
    # Coldplug's loads, asked for by udevd from inside that sandbox.
    udev = vm.journal("_BOOT_ID=" + vm.boot_id, "MESSAGE_ID=" + LOADED_ID, "MODGATE_SOURCE=udev")
    assert udev, "no module loaded for udevd this boot"
    print("# udevd had %d modules loaded this boot" % len(udev))
    refused = vm.journal("_BOOT_ID=" + vm.boot_id, "MESSAGE_ID=f68712d0c1414e768ead0ce5ff450860",
                         "MODGATE_PEER_UNIT=systemd-udevd.service")
    print("# refused udevd requests: %s" % json.dumps([e.get("MODGATE_REASON") for e in refused])[:400])


def cleanup(vm):
    vm.sh("rm -f %s %s %s; rmdir /etc/modgate/modgate.conf.d /etc/modgate 2>/dev/null; "
          "rmdir %s 2>/dev/null; systemctl reset-failed modgated.service 2>/dev/null; "
          "systemctl restart modgated.service" % (DROPIN, RUN_CONF, RUN_MODPROBE, CGROUP), check=False)
