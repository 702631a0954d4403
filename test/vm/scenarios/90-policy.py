# SPDX-License-Identifier: LGPL-2.1-or-later
"""The module policy ([Policy] in modgate.conf.d) on the real guest: a Deny= of algif_aead holds
however the module is asked for, through the kernel's request_module() when a program binds an
AF_ALG socket to "aead" or by a direct Load; a DenyRequest= refuses the kernel's request key before
anything is resolved; Mode=permissive records a would-deny and loads. First, without a policy, the
same program proves the path: request_module("algif-aead") through modgate-modprobe loads the module
as source kernel. The modules are unloaded between cases (rmmod, once no socket holds them), so one
boot suffices. Each policy case writes its drop-in and removes it again, whatever happened."""

import errno
import json

import guest

AEAD_MODULE = "algif_aead"      # request_module("algif-aead") from bind(2) of an AF_ALG socket
FAMILY_MODULE = "af_alg"        # request_module("net-pf-38") from socket(AF_ALG)
FAMILY_KEY = "net-pf-38"

LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"
WOULD_DENY_ID = "ac5ab2e33ad24e5fb0c5cc6c3c2f8e4b"
REFUSED_ID = "f68712d0c1414e768ead0ce5ff450860"
POLICY_DENIED = "io.modgate.Manager.PolicyDenied"
PERMISSION_DENIED = "io.modgate.Manager.PermissionDenied"

DROPIN = "/etc/modgate/modgate.conf.d/90-modgate-vm-policy.conf"
UNIT = "modgate-policy"
OUT = "/run/modgate-vm-policy"

# Runs in the guest: what the kernel answers a program that wants an AEAD transform. Each step's
# errno (or null), and CLOCK_MONOTONIC before the first, which the journal's
# __MONOTONIC_TIMESTAMP is comparable with.
AF_ALG_PROGRAM = r'''
import json, socket, time

out = {"start_usec": time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000, "socket": None, "bind": None}
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


def af_alg(vm):
    """Runs the AF_ALG program: {"start_usec", "socket": errno or None, "bind": errno or None}."""
    r = vm.sh("python3 -", stdin=AF_ALG_PROGRAM, timeout=90).json()
    print("# socket(AF_ALG): %s, bind(aead, gcm(aes)): %s" % (errno_name(r["socket"]), errno_name(r["bind"])))
    return r


def errno_name(e):
    return "ok" if e is None else errno.errorcode.get(e, str(e))


def mark(vm):
    """CLOCK_MONOTONIC in the guest, in microseconds: records after it are this case's."""
    return int(vm.sh("python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)'").out)


def since(vm, start, *matches):
    """This boot's entries of modgated.service with FIELD=value matches, written after start."""
    return [e for e in vm.journal("_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service", *matches)
            if int(e["__MONOTONIC_TIMESTAMP"]) >= start]


def unload(vm, *modules):
    """rmmod those of MODULES that are loaded, dependents first; asserts they are gone."""
    live = guest.live_modules(vm)
    loaded = [m for m in modules if live[m]]
    if loaded:
        vm.sh("rmmod " + " ".join(loaded))
    live = guest.live_modules(vm)
    assert not any(live[m] for m in modules), "still loaded after rmmod: %s" % [m for m in modules if live[m]]


def apply_policy(vm, lines, how="reload"):
    """Writes DROPIN as [Policy] and LINES, then has modgated read it: `systemctl reload` (the
    daemon's SIGHUP; a start when it is not running, e.g. after its idle exit) or a restart. Asserts
    that it took the configuration: a daemon that refuses it keeps the old one on reload, or does
    not start. Returns the rule text of each line as the policy names it, "FILE:LINE (LINE)"."""
    text = "[Policy]\n" + "".join(l + "\n" for l in lines)
    start = mark(vm)
    verb = "reload-or-restart" if how == "reload" else "restart"
    r = vm.sh("mkdir -p %s && cat >%s && systemctl %s modgated.service"
              % (DROPIN.rsplit("/", 1)[0], DROPIN, verb), stdin=text, check=False)
    state = vm.sh("systemctl show -P ActiveState modgated.service").out.strip()
    # The daemon's own errors, not its records of modules (a failed load is an error too).
    said = [e.get("MESSAGE", "") for e in since(vm, start)
            if int(e.get("PRIORITY", "6")) <= 3 and "MODGATE_OUTCOME" not in e]
    assert r.rc == 0 and state == "active" and not said, \
        "modgated did not take %s (%s: systemctl %s exit %d, %s):\n%s%s" % (
            DROPIN, " ".join(lines), verb, r.rc, state, r.err, "\n".join(said))
    return {l: "%s:%d (%s)" % (DROPIN, i + 2, l) for i, l in enumerate(lines)}


def remove_policy(vm):
    """Removes DROPIN and has modgated run without it (restarted when it refused to start with it)."""
    vm.sh("""rm -f %s
        if [ "$(systemctl show -P ActiveState modgated.service)" = active ]; then
                systemctl reload modgated.service
        else
                systemctl reset-failed modgated.service modgated.socket 2>/dev/null
                systemctl start modgated.socket modgated.service
        fi""" % DROPIN)


def assert_policy_record(rec, rule, source, verdict_id=DENIED_ID):
    """A denied (or would-deny) record of the policy: MESSAGE_ID, rule, verdict and reason."""
    assert rec["MESSAGE_ID"] == verdict_id, rec
    for field, value in (("MODGATE_VERDICT", "policy"), ("MODGATE_RULE", rule), ("MODGATE_SOURCE", source)):
        assert rec.get(field) == value, "%s is %r, not %r: %r" % (field, rec.get(field), value, rec)
    assert rec.get("MODGATE_REASON"), "no MODGATE_REASON: %r" % rec
    print("# %s: MODGATE_RULE=%s MODGATE_REASON=%s" % (
        rec.get("MODGATE_MODULE") or rec.get("MODGATE_MODALIAS"), rule, rec["MODGATE_REASON"]))


def test_autoload_baseline(vm):
    """without a policy, binding an AF_ALG socket to aead loads algif_aead through request_module(), as source kernel"""
    live = guest.live_modules(vm)
    assert not live[AEAD_MODULE] and not live[FAMILY_MODULE], \
        "%s or %s is loaded already: this case needs a boot that has not used AF_ALG" % (AEAD_MODULE, FAMILY_MODULE)
    assert vm.sh("sysctl -n kernel.modprobe").out.strip().endswith("/modgate-modprobe")
    r = af_alg(vm)
    assert r["socket"] is None and r["bind"] is None, r
    assert guest.initstate(vm, AEAD_MODULE) == "live" and guest.initstate(vm, FAMILY_MODULE) == "live"
    for module, key in ((FAMILY_MODULE, FAMILY_KEY), (AEAD_MODULE, "algif-aead")):
        recs = since(vm, r["start_usec"], "MESSAGE_ID=" + LOADED_ID, "MODGATE_MODULE=" + module)
        assert len(recs) == 1, (module, recs)
        rec = recs[0]
        assert rec["MODGATE_SOURCE"] == "kernel" and rec["MODGATE_OUTCOME"] == "loaded", rec
        assert rec["MODGATE_MODALIAS"] == key and rec["MODGATE_ROLE"] == "requested", rec
    # What else the kernel asked for on the way (the crypto templates, and many keys that no module
    # has: each is a not_found record): informative.
    kernel = since(vm, r["start_usec"], "MODGATE_SOURCE=kernel")
    loaded = sorted("%s -> %s" % (k["MODGATE_MODALIAS"], k["MODGATE_MODULE"])
                    for k in kernel if k["MODGATE_OUTCOME"] == "loaded")
    print("# the kernel made %d requests; loaded: %s" % (
        len({k["MODGATE_MODALIAS"] for k in kernel}), ", ".join(loaded)))
    assert not since(vm, r["start_usec"], "MESSAGE_ID=" + DENIED_ID)


def test_deny_autoload(vm):
    """Deny=algif_aead, read at start: the kernel's request_module() for it is refused, and bind(2) fails"""
    unload(vm, AEAD_MODULE)
    try:
        rule = apply_policy(vm, ["Deny=" + AEAD_MODULE], how="restart")["Deny=" + AEAD_MODULE]
        r = af_alg(vm)
        assert r["socket"] is None, "socket(AF_ALG) failed: %s (net-pf-38 is not denied)" % errno_name(r["socket"])
        assert r["bind"] is not None, "bind(aead) succeeded under Deny=%s" % AEAD_MODULE
        # alg_bind() returns what its second alg_get_type() found: nothing (seen with an install
        # command in modprobe.d, which modgated refuses the same way).
        assert r["bind"] == errno.ENOENT, "bind(aead) failed with %s, not ENOENT" % errno_name(r["bind"])
        assert guest.live_modules(vm)[AEAD_MODULE] == 0, "%s is loaded under Deny=" % AEAD_MODULE
        recs = since(vm, r["start_usec"], "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
        assert len(recs) == 1, "denied records of %s: %r" % (AEAD_MODULE, recs)
        assert_policy_record(recs[0], rule, "kernel")
        assert recs[0].get("MODGATE_MODALIAS") == "algif-aead", recs[0]
        assert not since(vm, r["start_usec"], "MESSAGE_ID=" + LOADED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
    finally:
        remove_policy(vm)


def test_deny_load(vm):
    """Deny=algif_aead: a direct Load is answered PolicyDenied with the rule, and journaled"""
    unload(vm, AEAD_MODULE)
    try:
        rule = apply_policy(vm, ["Deny=" + AEAD_MODULE])["Deny=" + AEAD_MODULE]
        start = mark(vm)
        reply, error = guest.load(vm, AEAD_MODULE)
        assert error == POLICY_DENIED, "Load %s answered %s %r, not %s" % (AEAD_MODULE, error, reply, POLICY_DENIED)
        assert reply.get("module") == AEAD_MODULE and reply.get("rule") == rule, reply
        assert reply.get("reason") == "%s, denied by %s" % (AEAD_MODULE, rule), reply
        print("# %s: %s" % (error, json.dumps(reply)))
        assert guest.live_modules(vm)[AEAD_MODULE] == 0
        recs = since(vm, start, "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
        assert len(recs) == 1, "denied records of %s: %r" % (AEAD_MODULE, recs)
        assert_policy_record(recs[0], rule, "admin")
        assert recs[0]["MODGATE_REASON"] == reply["reason"], (recs[0], reply)
        assert recs[0].get("MODGATE_REQUEST_NAME") == AEAD_MODULE, recs[0]
    finally:
        remove_policy(vm)


def test_deny_dependency(vm):
    """Deny=af_alg: a Load of algif_aead, which needs it, is refused with the chain; neither loads"""
    unload(vm, AEAD_MODULE, FAMILY_MODULE)
    try:
        rule = apply_policy(vm, ["Deny=" + FAMILY_MODULE])["Deny=" + FAMILY_MODULE]
        start = mark(vm)
        reply, error = guest.load(vm, AEAD_MODULE)
        assert error == POLICY_DENIED, "Load %s answered %s %r, not %s" % (AEAD_MODULE, error, reply, POLICY_DENIED)
        assert reply.get("module") == AEAD_MODULE and reply.get("rule") == rule, reply
        assert reply.get("reason") == "%s needs %s, denied by %s" % (AEAD_MODULE, FAMILY_MODULE, rule), reply
        print("# %s" % reply["reason"])
        live = guest.live_modules(vm)
        assert not live[AEAD_MODULE] and not live[FAMILY_MODULE], live
        recs = since(vm, start, "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
        assert len(recs) == 1 and recs[0]["MODGATE_REASON"] == reply["reason"], recs
        assert_policy_record(recs[0], rule, "admin")
    finally:
        remove_policy(vm)


def test_deny_request(vm):
    """DenyRequest=net-pf-38: socket(AF_ALG) fails with af_alg not loaded, the request key refused before resolution"""
    unload(vm, AEAD_MODULE, FAMILY_MODULE)
    try:
        rule = apply_policy(vm, ["DenyRequest=" + FAMILY_KEY])["DenyRequest=" + FAMILY_KEY]
        r = af_alg(vm)
        assert r["socket"] is not None, "socket(AF_ALG) succeeded under DenyRequest=%s" % FAMILY_KEY
        # __sock_create() answers a family that no module registered after request_module() so.
        assert r["socket"] == errno.EAFNOSUPPORT, "socket(AF_ALG) failed with %s, not EAFNOSUPPORT" % (
            errno_name(r["socket"]))
        live = guest.live_modules(vm)
        assert not live[FAMILY_MODULE] and not live[AEAD_MODULE], "loaded under DenyRequest=: %s" % (
            [m for m in (FAMILY_MODULE, AEAD_MODULE) if live[m]])
        recs = since(vm, r["start_usec"], "MESSAGE_ID=" + DENIED_ID, "MODGATE_MODALIAS=" + FAMILY_KEY)
        assert len(recs) == 1, "denied records of request %s: %r" % (FAMILY_KEY, recs)
        assert_policy_record(recs[0], rule, "kernel")
        assert not since(vm, r["start_usec"], "MESSAGE_ID=" + LOADED_ID, "MODGATE_MODULE=" + FAMILY_MODULE)
    finally:
        remove_policy(vm)


def test_permissive(vm):
    """Mode=permissive with Deny=algif_aead: bind(2) succeeds, the module loads, a would-deny is journaled"""
    unload(vm, AEAD_MODULE)
    try:
        rule = apply_policy(vm, ["Mode=permissive", "Deny=" + AEAD_MODULE])["Deny=" + AEAD_MODULE]
        r = af_alg(vm)
        assert r["socket"] is None and r["bind"] is None, "refused in permissive mode: %r" % r
        assert guest.initstate(vm, AEAD_MODULE) == "live"
        start = r["start_usec"]
        recs = since(vm, start, "MESSAGE_ID=" + WOULD_DENY_ID, "MODGATE_MODULE=" + AEAD_MODULE)
        assert len(recs) == 1, "would-deny records of %s: %r" % (AEAD_MODULE, recs)
        assert_policy_record(recs[0], rule, "kernel", WOULD_DENY_ID)
        loaded = since(vm, start, "MESSAGE_ID=" + LOADED_ID, "MODGATE_MODULE=" + AEAD_MODULE)
        assert len(loaded) == 1 and loaded[0]["MODGATE_SOURCE"] == "kernel", loaded
        assert not since(vm, start, "MESSAGE_ID=" + DENIED_ID), "a denial in permissive mode"
    finally:
        remove_policy(vm)


def call_in_unit(vm, name, properties, method, parameters):
    """varlinkctl METHOD PARAMETERS as the main process of the oneshot service NAME.service with
    PROPERTIES (as 80-callers does): (reply or error parameters, error name or None, Result)."""
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


def test_protect_kernel_modules(vm):
    """a service with ProtectKernelModules=yes is refused Load of algif_aead: PermissionDenied, journaled with its unit"""
    unload(vm, AEAD_MODULE)
    unit = "%s-pkm.service" % UNIT
    start = mark(vm)
    reply, error, result = call_in_unit(vm, "pkm", ["ProtectKernelModules=yes"], "io.modgate.Manager.Load",
                                        {"name": AEAD_MODULE})
    assert error == PERMISSION_DENIED, (error, reply, result)
    assert "lacks CAP_SYS_MODULE" in reply.get("reason", "") and unit in reply["reason"], reply
    assert guest.live_modules(vm)[AEAD_MODULE] == 0
    recs = since(vm, start, "MESSAGE_ID=" + REFUSED_ID, "MODGATE_PEER_UNIT=" + unit)
    assert len(recs) == 1, recs
    assert recs[0]["MODGATE_REQUEST_NAME"] == AEAD_MODULE and recs[0]["MODGATE_REASON"] == reply["reason"], recs
    assert not since(vm, start, "MODGATE_MODULE=" + AEAD_MODULE), "a module record for a refused caller"


def cleanup(vm):
    vm.sh("rm -f %s %s.out %s.err; rmdir /etc/modgate/modgate.conf.d /etc/modgate 2>/dev/null" % (DROPIN, OUT, OUT),
          check=False)
    vm.sh("systemctl reset-failed modgated.service 2>/dev/null; systemctl restart modgated.service", check=False)
    vm.sh("rmmod %s %s" % (AEAD_MODULE, FAMILY_MODULE), check=False)
