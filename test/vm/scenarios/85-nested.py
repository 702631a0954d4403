# SPDX-License-Identifier: LGPL-2.1-or-later
"""A module's init that asks for another module is served at once, whatever holds the workers: tcrypt
with alg=wp512 asks the kernel for "crypto-wp512" from inside its init (crypto_has_alg() calls
request_module() while finit_module() of tcrypt is still running); the kernel runs modgate-modprobe
and waits. tcrypt's init then ends with EAGAIN when it found the algorithm (it never stays loaded)
and ENOENT when it did not: so the kernel's own answer tells whether the nested request was served.
With Workers=1 the one worker is inside tcrypt's init; with tcrypt in LoadAlone= nothing else may
load beside it; the kernel's requests have a lane of their own in both, and a kernel request that
joins a load queued behind such a module takes the lane with it. Last, how long a process's
request_module() stalls when modgated is stopped, and when it was idle and is started by its socket."""

import errno
import json
import time

import guest

OUTER, INNER, KEY = "tcrypt", "wp512", "crypto-wp512"
DROPIN = "/etc/modgate/modgate.conf.d/85-modgate-vm-nested.conf"
HELPER_TIMEOUT_S = 15           # modgate-modprobe's own --timeout default


def configure(vm, lines):
    vm.sh("mkdir -p %s && cat >%s && systemctl restart modgated.service" % (DROPIN.rsplit("/", 1)[0], DROPIN),
          stdin="[Load]\n" + "".join(l + "\n" for l in lines))
    assert vm.sh("systemctl show -P ActiveState modgated.service").out.strip() == "active"


def unload(vm):
    vm.sh("rmmod %s 2>/dev/null; rmmod wp512 2>/dev/null; true" % OUTER, check=False)
    live = guest.live_modules(vm)
    assert not live[OUTER] and not live[INNER], live


def load_outer(vm):
    """Loads tcrypt alg=wp512 through modgated: (seconds it took, the LoadFailed parameters)."""
    begin = time.monotonic()
    # type=14 (CRYPTO_ALG_TYPE_SHASH): tcrypt looks for an algorithm of that type with that name.
    params, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"name": OUTER,
                                                                    "parameters": "alg=%s type=14" % INNER})
    took = time.monotonic() - begin
    assert error == "io.modgate.Manager.LoadFailed", (params, error)
    return took, params


def assert_nested_served(vm, took, params, since_usec):
    # EAGAIN: tcrypt found wp512, which the kernel asked modgate for while tcrypt's init ran.
    assert params["module"] == OUTER and params["errnoName"] == "EAGAIN", params
    assert took < HELPER_TIMEOUT_S / 2, "the nested request waited %.1f s" % took
    assert guest.initstate(vm, INNER) == "live"
    recs = [r for r in guest.records(vm, INNER, "loaded") if int(r["__MONOTONIC_TIMESTAMP"]) >= since_usec]
    assert len(recs) == 1, recs
    r = recs[0]
    # modgate-modprobe sends the kernel's request key as a modalias.
    assert r["MODGATE_SOURCE"] == "kernel" and r["MODGATE_MODALIAS"] == KEY, r
    assert r["MODGATE_ALIAS"] == KEY and "MODGATE_DEVICE_VENDOR" not in r, r
    outer = [x for x in guest.records(vm, OUTER, "failed") if int(x["__MONOTONIC_TIMESTAMP"]) >= since_usec]
    assert len(outer) == 1 and outer[0]["MODGATE_ERRNO_NAME"] == "EAGAIN", outer
    # wp512 was loaded, and recorded, while tcrypt's load was still in its init.
    assert int(r["__MONOTONIC_TIMESTAMP"]) < int(outer[0]["__MONOTONIC_TIMESTAMP"]), (r, outer[0])
    print("# %s alg=%s took %.2f s; %s loaded as source kernel (%s) inside its init"
          % (OUTER, INNER, took, INNER, KEY))


def mark(vm):
    return int(vm.sh("python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'").out)


def test_nested_one_worker(vm):
    """with Workers=1, a module's init gets the module it asks the kernel for while it holds the only worker"""
    unload(vm)
    configure(vm, ["Workers=1"])
    start = mark(vm)
    took, params = load_outer(vm)
    assert_nested_served(vm, took, params, start)


def test_nested_load_alone(vm):
    """with the module in LoadAlone=, what its own init asks for still loads beside it"""
    unload(vm)
    configure(vm, ["Workers=4", "LoadAlone=" + OUTER])
    start = mark(vm)
    took, params = load_outer(vm)
    assert_nested_served(vm, took, params, start)


# Runs in the guest. tcrypt's hash speed test (mode=400) runs alone (LoadAlone=) for about 20 s; an
# administrator's Load of wp512 waits behind it; then a user's bind(2) of an AF_ALG hash socket to
# wp512 makes the kernel ask for "crypto-wp512", which joins that queued job. Prints how long the
# bind took, and whether tcrypt was still in its init when it returned.
JOIN = r'''
import json, os, socket, subprocess, sys, time

def load(params):
    return subprocess.Popen(["varlinkctl", "call", "/run/modgate/io.modgate", "io.modgate.Manager.Load",
                             json.dumps(params)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

def initstate(name):
    try:
        with open("/sys/module/%s/initstate" % name) as f:
            return f.read().strip()
    except OSError:
        return None

outer = load({"name": "tcrypt", "parameters": "mode=400 alg=sha256 sec=1"})
deadline = time.monotonic() + 30
while initstate("tcrypt") != "coming" and time.monotonic() < deadline:
    time.sleep(0.01)
queued = load({"name": "wp512"})
time.sleep(1)
queued_before = initstate("wp512")
begin = time.monotonic()
bind = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                       "import socket; s = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0); "
                       "s.bind(('hash', 'wp512')); print('bound')"], capture_output=True, text=True)
took = time.monotonic() - begin
outer_during = initstate("tcrypt")
queued.communicate(timeout=120)
outer.communicate(timeout=120)
print(json.dumps({"took": took, "bound": bind.stdout.strip() == "bound", "stderr": bind.stderr[-500:],
                  "queued_before": queued_before, "outer_during": outer_during, "queued_rc": queued.returncode}))
'''


def test_kernel_joins_queued(vm):
    """a kernel request that joins a load queued behind a LoadAlone= module takes the kernel's lane with it"""
    unload(vm)
    configure(vm, ["Workers=4", "LoadAlone=" + OUTER])
    start = mark(vm)
    try:
        r = vm.sh("python3 -", stdin=JOIN, timeout=180).json()
    finally:
        # The bind loaded AF_ALG's modules: a later scenario in this boot (90-policy) needs a boot
        # that has not used AF_ALG.
        vm.sh("rmmod algif_hash af_alg 2>/dev/null; true", check=False)
    print("# bind(hash, wp512) with wp512 queued behind %s: %.2f s; %s was %s when it returned"
          % (OUTER, r["took"], OUTER, r["outer_during"]))
    # Queued, not loaded, when the kernel asked: the kernel's request joined it.
    assert r["queued_before"] is None, r
    assert r["bound"] and r["queued_rc"] == 0, r
    # Served while tcrypt still ran alone, not once it was done.
    assert r["outer_during"] == "coming" and r["took"] < 5, r
    recs = [x for x in guest.records(vm, INNER, "loaded") if int(x["__MONOTONIC_TIMESTAMP"]) >= start]
    assert len(recs) == 1 and recs[0]["MODGATE_SOURCE"] == "admin" and recs[0]["MODGATE_REQUESTERS"] == "2", recs
    joined = recs[0]["MODGATE_JOINED"]
    assert isinstance(joined, str) and joined.startswith("source=kernel request=crypto-wp512"), recs[0]
    vm.sh("rm -f %s" % DROPIN)


# Asks the kernel for a file system type that is a module here (minix): request_module("fs-minix")
# runs kernel.modprobe. The mount fails either way (no such device); what counts is how long it takes.
STALL = r'''
import json, os, subprocess, time
t = time.monotonic()
subprocess.run(["mount", "-t", "minix", "/dev/null", "/mnt"], capture_output=True)
print(json.dumps({"seconds": time.monotonic() - t}))
'''


def stall(vm):
    vm.sh("rmmod minix 2>/dev/null; true", check=False)
    return vm.sh("python3 -", stdin=STALL, timeout=60).json()["seconds"]


def test_stall_bound(vm):
    """a request_module() stalls briefly when modgated is stopped, and is served when its socket starts it"""
    vm.sh("rm -f %s" % DROPIN)
    vm.sh("systemctl stop modgated.socket modgated.service")
    stopped = stall(vm)
    assert guest.live_modules(vm)["minix"] == 0
    vm.sh("systemctl start modgated.socket")
    assert vm.sh("systemctl show -P ActiveState modgated.service").out.strip() != "active"
    idle = stall(vm)
    assert guest.live_modules(vm)["minix"] == 1, "started by its socket, modgated loads the file system"
    print("# request_module() with modgated stopped: %.3f s (refused at once); idle, socket-activated: %.3f s"
          % (stopped, idle))
    assert stopped < 1.0, stopped
    assert idle < HELPER_TIMEOUT_S / 3, idle


VSOCK_UNIT = "modgate-vm-vsock"
START_TIMEOUT_S = 5             # modgate-modprobe's --start-timeout default


def test_pid1_stall(vm):
    """PID 1's own request_module() while modgated is idle stalls PID 1 for the helper's start timeout, not its whole timeout"""
    # A socket unit of an address family whose module is not loaded: PID 1 itself calls socket(AF_VSOCK),
    # the kernel runs modgate-modprobe, whose connection waits in modgated.socket for PID 1 to start
    # modgated, which it cannot while it waits in socket().
    assert guest.live_modules(vm)["vsock"] == 0, "vsock is loaded already"
    vm.sh("cat >/run/systemd/system/%s.socket <<EOF\n[Socket]\nListenStream=vsock::1234\nEOF\n"
          "cat >/run/systemd/system/%s.service <<EOF\n[Service]\nExecStart=/bin/sleep infinity\nEOF\n"
          "systemctl daemon-reload; systemctl stop modgated.service" % (VSOCK_UNIT, VSOCK_UNIT))
    assert vm.sh("systemctl show -P ActiveState modgated.socket").out.strip() == "active"
    start = mark(vm)
    r = vm.sh("t=$(date +%%s%%N); systemctl start %s.socket; echo $? $(( ($(date +%%s%%N) - t) / 1000000 ))"
              % VSOCK_UNIT, check=False, timeout=90)
    rc, ms = (int(x) for x in r.out.split())
    said = [e.get("MESSAGE", "") for e in vm.journal("_BOOT_ID=" + vm.boot_id, "SYSLOG_IDENTIFIER=modgate-modprobe")
            if int(e["__MONOTONIC_TIMESTAMP"]) >= start] + \
        [e.get("MESSAGE", "") for e in vm.journal("_BOOT_ID=" + vm.boot_id, "_TRANSPORT=kernel")
         if "modgate-modprobe" in e.get("MESSAGE", "") and int(e["__MONOTONIC_TIMESTAMP"]) >= start]
    print("# PID 1 waited %.2f s in socket(AF_VSOCK) with modgated idle (systemctl start exit %d)" % (ms / 1000, rc))
    assert ms < (START_TIMEOUT_S + 4) * 1000, (ms, said)
    assert any("did not start within %d ms" % (START_TIMEOUT_S * 1000) in m for m in said), said
    # Once PID 1 is free it starts modgated for the connection that waited, which is still recorded.
    vm.sh("for i in $(seq 100); do systemctl -q is-active modgated.service && break; sleep 0.1; done")


def cleanup(vm):
    vm.sh("rm -f %s; systemctl start modgated.socket; systemctl restart modgated.service" % DROPIN, check=False)
    vm.sh("rmmod %s wp512 minix 2>/dev/null" % OUTER, check=False)
    vm.sh("systemctl stop %s.socket %s.service; rm -f /run/systemd/system/%s.*; systemctl daemon-reload"
          % (VSOCK_UNIT, VSOCK_UNIT, VSOCK_UNIT), check=False)
