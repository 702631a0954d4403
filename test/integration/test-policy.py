#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The module policy (modgate.conf(5) [Policy], [Source], [Parameters]) on a real daemon with the real
Debian module tree: a Deny= covers a module however it is reached, the reply and the record name
the rule with its file and line and the chain through dependencies, and no syscall is made; request
keys, the kernel command line's module_blacklist= and modgate.mode=, allowlists, parameter rules,
permissive mode, Reload with a broken file, and Explain for each, which loads nothing."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

M = "io.modgate.Manager."
DROPINS = "/etc/modgate/modgate.conf.d"
DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"
WOULD_DENY_ID = "ac5ab2e33ad24e5fb0c5cc6c3c2f8e4b"
NO_SYS_MODULE = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_module"]

POLICY = """\
[Policy]
# the tunnel every overlay network pulls in
Deny=udp_tunnel
Deny=ifb
DenyRequest=net-pf-33 fs-mini*
[Source]
Name=kernel
Deny=nlmon
[Parameters]
Module=dummy
Allow=numdummies=[0-9]
"""
POLICY_FILE = DROPINS + "/50-test.conf"
CMDLINE = "BOOT_IMAGE=/vmlinuz root=/dev/vda ro module_blacklist=eql,bad/name quiet"


def outcomes(reply):
    """(name, outcome) of each module of a Load reply that must not be an error."""
    return [(m["name"], m["outcome"]) for m in h.ok(reply)["modules"]]


def write_dropin(name, text):
    os.makedirs(DROPINS, exist_ok=True)
    path = os.path.join(DROPINS, name)
    if text is None:
        os.unlink(path)
        return path
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def main():
    h.require_root()
    h.unshare_mounts()

    tree = h.kernel_tree()
    work = tempfile.mkdtemp(prefix="modgate-policy-")
    h.run("mount", "-t", "tmpfs", "tmpfs", work)
    h.mount_sys_module()
    h.mount_modprobe_d("options dummy numdummies=1\noptions tun dummyoption=1\n")
    h.mount_file_over("/proc/cmdline", CMDLINE + "\n", work)
    journal = h.Journal()       # a tmpfs over /run
    write_dropin("50-test.conf", POLICY)
    t = h.Tap()
    root = h.mount_trusted_tree(tree, work)
    d = h.Daemon(work, "policy", root)
    assert d.activate(), d.stderr_text()
    daemons = [d]

    def records(msgid, daemon=None, **match):
        return journal.records(MESSAGE_ID=msgid, _PID=str((daemon or d).pid), **match)

    def finits(daemon=None):
        return h.finit_records((daemon or d).shim_records())

    def explain(params, daemon=None):
        r = (daemon or d).call(M + "Explain", params)
        assert "error" not in r, r
        return r["parameters"]

    def reload(daemon=None):
        """Reload, and read what the daemon told its service manager (RELOADING=1, then READY=1) as
        systemd would: a notification socket nobody reads fills up, and sd_notify() then blocks."""
        r = (daemon or d).call(M + "Reload")
        assert (daemon or d).wait_ready(), "no READY=1 after Reload"
        return r

    def policy_denied(reply):
        assert reply.get("error") == M + "PolicyDenied", reply
        return reply["parameters"]

    def case_dependency():
        before = len(finits())
        p = policy_denied(d.call(M + "Load", {"name": "vxlan"}))
        rule = POLICY_FILE + ":3 (Deny=udp_tunnel)"
        assert p["module"] == "vxlan" and p["rule"] == rule, p
        assert p["reason"].startswith("vxlan needs ") and p["reason"].endswith("udp_tunnel, denied by " + rule), p
        assert len(finits()) == before, finits()
        rec = records(DENIED_ID, MODGATE_MODULE="vxlan")
        assert len(rec) == 1, rec
        assert rec[0]["MODGATE_VERDICT"] == "policy" and rec[0]["MODGATE_RULE"] == rule, rec
        assert rec[0]["MODGATE_REASON"] == p["reason"] and rec[0]["MODGATE_MODE"] == "enforce", rec
        # The same rule, however the module is reached: an alias, the dependency itself.
        p = policy_denied(d.call(M + "Load", {"name": "rtnl-link-vxlan"}))
        assert p["module"] == "vxlan" and p["rule"] == rule, p
        p = policy_denied(d.call(M + "Load", {"name": "udp-tunnel"}))
        assert p["reason"] == "udp_tunnel, denied by " + rule, p
        assert len(finits()) == before, finits()
        e = explain({"name": "vxlan"})
        assert e["verdict"] == "denied" and e["rule"] == rule and e["reason"].startswith("vxlan needs "), e
        mods = {m["name"]: m for m in e["modules"]}
        assert mods["udp_tunnel"]["policy"] == "deny" and mods["vxlan"]["policy"] == "deny", mods
        assert mods["udp_tunnel"]["rule"] == rule and "origin" not in mods["udp_tunnel"], mods
        assert len(finits()) == before, finits()
        print("# %s" % p["reason"], flush=True)

    def case_request_key():
        before = len(finits())
        p = policy_denied(d.call(M + "Load", {"name": "net-pf-33"}))
        assert p["request"] == "net-pf-33" and p["rule"] == POLICY_FILE + ":5 (DenyRequest=net-pf-33)", p
        assert "module" not in p or p["module"] is None, p
        p = policy_denied(d.call(M + "Load", {"name": "fs-minix"}))
        assert p["rule"] == POLICY_FILE + ":5 (DenyRequest=fs-mini*)", p
        rec = records(DENIED_ID, MODGATE_REQUEST_NAME="fs-minix")
        assert len(rec) == 1 and "MODGATE_MODULE" not in rec[0] and rec[0]["MODGATE_VERDICT"] == "policy", rec
        # The module the key would resolve to is not denied by the key rule.
        assert outcomes(d.call(M + "Load", {"name": "minix"})) == [("minix", "loaded")]
        e = explain({"name": "fs-minix"})
        assert e["verdict"] == "denied" and e["keyPolicy"] == "deny" and e["key"] == "fs-minix", e
        assert len(finits()) == before + 1, finits()

    def case_source():
        # The kernel's layer denies nlmon; an administrator may load it.
        e = explain({"name": "nlmon", "context": {"source": "kernel"}})
        assert e["verdict"] == "denied" and e["rule"] == POLICY_FILE + ":8 (Deny=nlmon)" and e["source"] == "kernel", e
        e = explain({"name": "nlmon"})
        assert e["verdict"] == "load" and e["source"] == "admin", e
        m = e["modules"][0]
        assert m["policy"] == "allow" and m["origin"]["trusted"] and m["origin"]["evidence"] == "manifest", e
        assert m["origin"]["sha256"] and m["state"] == "absent", e
        assert h.finit_records(d.shim_records(), ["nlmon"]) == []

    def case_cmdline():
        p = policy_denied(d.call(M + "Load", {"name": "eql"}))
        assert p["rule"] == "the kernel command line (module_blacklist=eql)", p
        assert "module_blacklist=bad/name" in d.stderr_text() and "Ignoring" in d.stderr_text(), d.stderr_text()
        assert h.finit_records(d.shim_records(), ["eql"]) == []
        assert explain({"name": "eql"})["rule"] == p["rule"]

    def case_parameters_admin():
        # modprobe.d sets numdummies=1: a request may not silently replace it.
        r = d.call(M + "Load", {"name": "dummy", "parameters": "numdummies=3"})
        assert r.get("error") == M + "ParameterDenied", r
        p = r["parameters"]
        assert p["parameter"] == "numdummies=3" and "rule" not in p and "override" in p["reason"], p
        rec = records(DENIED_ID, MODGATE_MODULE="dummy")
        assert rec and rec[-1]["MODGATE_PARAMETER"] == "numdummies=3", rec
        e = explain({"name": "dummy", "parameters": "numdummies=3"})
        assert e["verdict"] == "denied" and "override" in e["reason"], e
        assert h.finit_records(d.shim_records(), ["dummy"]) == []

    def case_parameters_rule():
        # tun: no [Parameters] section, RequestParameters=any; but its admin option is kept.
        r = d.call(M + "Load", {"name": "tun", "parameters": "dummyoption=2"})
        assert r.get("error") == M + "ParameterDenied", r
        write_dropin("60-params.conf", "[Parameters]\nModule=nlmon\nAllow=debug=[01]\n")
        r = reload()
        assert "error" not in r, r
        r = d.call(M + "Load", {"name": "nlmon", "parameters": "debug=7"})
        assert r.get("error") == M + "ParameterDenied", r
        assert r["parameters"]["rule"] == DROPINS + "/60-params.conf:1 (Module=nlmon)", r
        assert explain({"name": "nlmon", "parameters": "debug=7"})["verdict"] == "denied"
        assert h.finit_records(d.shim_records(), ["nlmon"]) == []
        r = h.ok(d.call(M + "Load", {"name": "nlmon", "parameters": "debug=1"}))
        f = h.finit_records(d.shim_records(), ["nlmon"])
        assert len(f) == 1 and f[0]["params"] == "debug=1", f
        write_dropin("60-params.conf", None)
        assert "error" not in reload()

    def case_reload_broken():
        digest = explain({"name": "ifb"})["policyDigest"]
        bad = write_dropin("70-bad.conf", "[Policy]\n\nMode=strict\n")
        r = reload()
        assert r.get("error") == M + "ConfigurationInvalid", r
        assert r["parameters"]["reason"].startswith(bad + ":3:"), r
        e = explain({"name": "ifb"})
        assert e["policyDigest"] == digest and e["verdict"] == "denied", e
        assert policy_denied(d.call(M + "Load", {"name": "ifb"}))["rule"] == POLICY_FILE + ":4 (Deny=ifb)"
        write_dropin("70-bad.conf", None)
        # A good change is in force at once, with a new digest; what is loaded stays.
        write_dropin("70-good.conf", "[Policy]\nDeny=\n")
        r = reload()
        assert "error" not in r and r["parameters"]["policyDigest"] != digest, r
        assert outcomes(d.call(M + "Load", {"name": "ifb"})) == [("ifb", "loaded")]
        assert h.module_state("minix") == "live"
        write_dropin("70-good.conf", None)
        r = reload()
        assert r["parameters"]["policyDigest"] == digest, r

    def case_softdep():
        # ext4's softdep crc32c (crypto-crc32c) is left out; ext4 and its hard dependencies load.
        write_dropin("80-softdep.conf", "[Policy]\nDeny=crc32c*\n")
        assert "error" not in reload()
        r = h.ok(d.call(M + "Load", {"name": "ext4"}))
        names = [m["name"] for m in r["modules"]]
        assert "ext4" in names and not any(n.startswith("crc32c") for n in names), r
        denied = r.get("denied")
        assert denied and all(x["name"].startswith("crc32c") for x in denied), r
        assert all(x["rule"] == DROPINS + "/80-softdep.conf:2 (Deny=crc32c*)" for x in denied), r
        assert not any(f["name"].startswith("crc32c") for f in finits()), finits()
        assert records(DENIED_ID, MODGATE_MODULE=denied[0]["name"]), denied
        write_dropin("80-softdep.conf", None)
        assert "error" not in reload()

    def case_allowlist():
        write_dropin("90-allowlist.conf", "[Policy]\nDefault=deny\nAllow=macvlan\n")
        assert "error" not in reload()
        p = policy_denied(d.call(M + "Load", {"name": "bonding"}))
        assert p["rule"] == DROPINS + "/90-allowlist.conf:2 (Default=deny)", p
        assert "no Allow= admits" in p["reason"], p
        assert outcomes(d.call(M + "Load", {"name": "macvlan"})) == [("macvlan", "loaded")]
        write_dropin("90-allowlist.conf", None)
        assert "error" not in reload()

    def case_reload_needs_capability():
        r = h.call_as(NO_SYS_MODULE, d.address, M + "Reload")
        assert r.get("error") == M + "PermissionDenied", r
        # Explain only reports: root without the capability may.
        r = h.call_as(NO_SYS_MODULE, d.address, M + "Explain",
                      {"name": "eql"})
        assert "error" not in r and r["parameters"]["verdict"] == "denied", r

    def case_read_group():
        # The socket's mode is the administrator's to open; the daemon still checks each method.
        os.chmod(d.address, 0o666)
        member = ["setpriv", "--reuid=4242", "--regid=4343", "--clear-groups"]
        other = ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]
        r = h.call_as(member, d.address, M + "Explain", {"name": "eql"})
        assert r.get("error") == M + "PermissionDenied" and "no ReadGroup=" in r["parameters"]["reason"], r
        write_dropin("95-group.conf", "[Manager]\nReadGroup=4343\n")
        assert "error" not in reload()
        r = h.call_as(member, d.address, M + "Explain", {"name": "eql"})
        assert "error" not in r and r["parameters"]["verdict"] == "denied", r
        r = h.call_as(other, d.address, M + "Explain", {"name": "eql"})
        assert r.get("error") == M + "PermissionDenied" and "nor in group 4343" in r["parameters"]["reason"], r
        for method, params in ((M + "Load", {"name": "dummy"}), (M + "Unload", {"name": "minix"}),
                               (M + "Reload", {})):
            r = h.call_as(member, d.address, method, params)
            assert r.get("error") == M + "PermissionDenied" and "lacks CAP_SYS_MODULE" in r["parameters"]["reason"], r
        rec = records("f68712d0c1414e768ead0ce5ff450860", MODGATE_PEER_UID="4242")
        assert {x["MODGATE_METHOD"] for x in rec} == {"Explain", "Load", "Unload", "Reload"}, rec
        assert h.module_state("minix") == "live"
        write_dropin("95-group.conf", None)
        assert "error" not in reload()
        os.chmod(d.address, 0o600)

    def case_modgatectl():
        ctl = [os.environ["MODGATECTL"], "--address=" + d.address]
        r = h.run(*ctl, "explain", "vxlan", check=False, capture_output=True, text=True)
        assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
        first = r.stdout.splitlines()[0]
        assert first.startswith("vxlan: denied: vxlan needs ") and first.endswith("(Deny=udp_tunnel)"), r.stdout
        assert "udp_tunnel" in r.stdout and "policy deny by " + POLICY_FILE + ":3" in r.stdout, r.stdout
        r = h.run(*ctl, "--dry-run", "load", "dummy", check=False, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith("dummy: load"), (r.stdout, r.stderr)
        assert "file: trusted by manifest evidence" in r.stdout, r.stdout
        r = h.run(*ctl, "--source=kernel", "explain", "nlmon", check=False, capture_output=True, text=True)
        assert r.returncode == 3 and "source kernel" in r.stdout, (r.stdout, r.stderr)
        r = h.run(*ctl, "load", "vxlan", check=False, capture_output=True, text=True)
        assert r.returncode == 3 and "PolicyDenied: vxlan needs udp_tunnel" in r.stderr, r
        r = h.run(*ctl, "reload", check=False, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith("policy ") and "(enforce) in force" in r.stdout, r
        assert h.finit_records(d.shim_records(), ["vxlan", "dummy"]) == []

    def case_permissive():
        h.run("umount", "/proc/cmdline")
        h.mount_file_over("/proc/cmdline", CMDLINE + " modgate.mode=permissive\n", work)
        p = h.Daemon(work, "permissive", root)
        daemons.append(p)
        assert p.activate(), p.stderr_text()
        e = explain({"name": "vxlan"}, p)
        assert e["mode"] == "permissive" and e["verdict"] == "would_deny", e
        r = outcomes(p.call(M + "Load", {"name": "vxlan"}))
        assert ("vxlan", "loaded") in r and ("udp_tunnel", "loaded") in r, r
        rec = records(WOULD_DENY_ID, p, MODGATE_MODULE="vxlan")
        assert len(rec) == 1 and rec[0]["MODGATE_MODE"] == "permissive", rec
        assert records(WOULD_DENY_ID, p, MODGATE_MODULE="udp_tunnel"), "no would-deny record for udp_tunnel"
        assert records(DENIED_ID, p) == [], records(DENIED_ID, p)
        # The origin check is not part of the policy: it holds in permissive mode too.
        r = p.call(M + "Load", {"path": "/nonexistent/x.ko"})
        assert r.get("error"), r

    t.case("a Deny= on a dependency refuses the module that needs it, by name or alias, with the chain and "
           "no syscall", case_dependency)
    t.case("DenyRequest= refuses a request key, not the module it resolves to", case_request_key)
    t.case("a [Source] layer denies for its source only; Explain shows the origin checks", case_source)
    t.case("module_blacklist= on the kernel command line is a deny; a bad name there is logged", case_cmdline)
    t.case("a request parameter never overrides the administrator's option", case_parameters_admin)
    t.case("a parameter outside the module's rule is refused; an allowed one reaches the kernel exactly",
           case_parameters_rule)
    t.case("a broken configuration on Reload keeps the policy and names file and line; a good one applies",
           case_reload_broken, needs=(case_request_key,))
    t.case("a denied softdep is left out, the module loads", case_softdep)
    t.case("allowlist mode: only what an Allow= matches loads", case_allowlist)
    t.case("Reload needs CAP_SYS_MODULE; Explain does not", case_reload_needs_capability)
    t.case("ReadGroup= members may Explain, and nothing else", case_read_group, needs=(case_request_key,))
    t.case("modgatectl explain, load --dry-run and reload", case_modgatectl)
    t.case("modgate.mode=permissive: the load goes on and would-deny is recorded", case_permissive)

    t.case("every daemon exits cleanly", lambda: h.assert_clean_exit(*daemons), always=True)
    t.run()
    h.dump_stderr(daemons)
    journal.stop()
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
