# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the kernel itself enforces on module loading, as modgated logs it at start and as
`modgated -n` prints it, against what this scenario reads from the guest's /sys, /proc and /boot
itself: first as the guest boots, then with signatures enforced and lockdown raised at run time,
with the running kernel's configuration in /boot, with /boot an automount point that must not be
triggered, and with kernel.modules_disabled=1. None of that can be undone but by a reboot, which
cleanup() does."""

import errno
import json
import os
import re

import guest

MODGATED = "/usr/libexec/modgate/modgated"
PREFIX = "Kernel enforcement: "
SEC = "/sys/kernel/security/"
SIG = "/sys/module/module/parameters/sig_enforce"
LOADPIN = "/proc/sys/kernel/loadpin/enforce"
DISABLED = "/proc/sys/kernel/modules_disabled"
ON_FORCE_UNKNOWN = "module signatures: enforced (cannot be turned off, forced by the kernel: unknown); "
ON_NOT_FORCED = "module signatures: enforced (cannot be turned off, not forced by the kernel); "

# Runs in the guest, as root or as modgated sees the system: raw readings, interpreted on this side.
READER = r'''
import json, os

SEC = "/sys/kernel/security/"
FILES = ["/sys/module/module/parameters/sig_enforce", SEC + "lsm", SEC + "lockdown",
         "/proc/sys/kernel/loadpin/enforce", SEC + "ipe/enforce", SEC + "ima/policy",
         "/proc/sys/kernel/modules_disabled"]
PATHS = ["/sys/module", "/proc/sys/kernel", SEC + "loadpin/dm-verity", SEC + "ipe", SEC + "ima"]


def read(path):
    try:
        with open(path, "rb") as f:
            return {"text": f.read(1 << 21).decode("utf-8", "replace")}
    except OSError as e:
        return {"errno": e.errno, "strerror": os.strerror(e.errno)}


def boot_fstype():
    """The file system on top at /boot, from mountinfo: looking at /boot itself could mount it."""
    top = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/boot":
                top = fields[fields.index("-") + 1]
    return top


out = {"files": {p: read(p) for p in FILES}, "exists": {p: os.path.lexists(p) for p in PATHS},
       "release": os.uname().release, "boot_fstype": boot_fstype(), "ipe_policies": None}
if out["boot_fstype"] != "autofs":
    config = read("/boot/config-" + out["release"])
    if "text" in config:
        config = {"lines": [l for l in config["text"].splitlines() if "CONFIG_MODULE_SIG_FORCE" in l]}
    out["config"] = config
try:
    names = os.listdir(SEC + "ipe/policies")
    out["ipe_policies"] = {n: read(SEC + "ipe/policies/%s/active" % n) for n in names}
except OSError as e:
    out["ipe_policies_error"] = os.strerror(e.errno)
print(json.dumps(out))
'''

# The daemon's view: its mount namespace (the sandbox of modgated.service) and its one capability.
AS_DAEMON = ("nsenter -t %s -m -- setpriv --inh-caps=-all --ambient-caps=-all "
             "--bounding-set=-all,+sys_module python3 -")


def read_as_root(vm):
    return vm.sh("python3 -", stdin=READER).json()


def test_config_line(vm):
    """modgated -n prints one Kernel enforcement line that says what the guest's kernel enforces"""
    line, view = config_line(vm)
    print("# modgated -n in the guest: " + PREFIX + line)
    # As the guest boots, signatures are not enforced and lockdown is none: test_raised raises both.
    assert view["files"][SIG]["text"].strip() == "N", view
    assert "module signatures: not enforced; lockdown: none; " in line, line


def test_start_line(vm):
    """modgated logs that line once at start, as it sees the kernel from its sandbox; unknown, never off"""
    daemon, view, priority = restart(vm)
    root = read_as_root(vm)
    print("# modgated.service in the guest: " + PREFIX + daemon)
    assert priority == "6", priority
    assert daemon == expected(view), (daemon, expected(view), view)
    never_off(daemon, expected(root))
    # Every start of the service in this boot logged the line once.
    starts = {}
    for e in vm.journal("_SYSTEMD_UNIT=modgated.service", "_BOOT_ID=" + vm.boot_id):
        if e.get("MESSAGE", "").startswith(PREFIX):
            starts[e["_SYSTEMD_INVOCATION_ID"]] = starts.get(e["_SYSTEMD_INVOCATION_ID"], 0) + 1
    assert starts and set(starts.values()) == {1}, starts


def test_raised(vm):
    """with signatures enforced and lockdown raised at run time, both say so; enforcement stays on"""
    vm.sh("echo Y > %s && echo integrity > %slockdown" % (SIG, SEC))
    # The kernel turns neither off again: the line's "cannot be turned off" is the kernel's word.
    assert vm.sh("echo N > %s" % SIG, check=False).rc != 0
    assert vm.sh("echo none > %slockdown" % SEC, check=False).rc != 0
    line, _ = config_line(vm)
    assert line.startswith(ON_FORCE_UNKNOWN + "lockdown: integrity; "), line
    daemon, view, _ = restart(vm)
    assert daemon == expected(view), (daemon, view)
    never_off(daemon, line)


def test_kernel_config(vm):
    """with the running kernel's configuration in /boot, both say the kernel does not force signatures"""
    with open("/boot/config-" + vm.manifest["kernel_version"]) as f:
        config = f.read()
    assert "# CONFIG_MODULE_SIG_FORCE is not set\n" in config
    vm.sh("mkdir -p /boot && cat > /boot/config-$(uname -r)", stdin=config)
    line, _ = config_line(vm)
    assert line.startswith(ON_NOT_FORCED), line
    daemon, view, _ = restart(vm)
    assert daemon == expected(view), (daemon, view)
    assert daemon.startswith(ON_NOT_FORCED), daemon


def test_boot_automount(vm):
    """/boot an automount point: neither reading mounts it, and the kernel's configuration is unknown"""
    vm.sh("systemd-mount --quiet --automount=yes --type=tmpfs tmpfs /boot")
    assert read_as_root(vm)["boot_fstype"] == "autofs"
    line, _ = config_line(vm)
    daemon, view, _ = restart(vm)
    assert view["boot_fstype"] == "autofs", view
    for said in (line, daemon):
        assert said.startswith(ON_FORCE_UNKNOWN), said
    assert daemon == expected(view), (daemon, view)
    assert vm.sh("systemctl show -P ActiveState boot.mount").out.strip() == "inactive"
    assert read_as_root(vm)["boot_fstype"] == "autofs"
    vm.sh("systemd-umount --quiet /boot")


def test_modules_disabled(vm):
    """with kernel.modules_disabled=1 the start line is a warning that every load will fail"""
    vm.sh("sysctl -q -w kernel.modules_disabled=1")
    line, _ = config_line(vm)
    assert line.endswith("; modules_disabled: 1"), line
    warning = ". kernel.modules_disabled=1: every module load fails until reboot."
    daemon, view, priority = restart(vm, suffix=warning)
    assert priority == "4", priority
    assert daemon == expected(view), (daemon, view)


def cleanup(vm):
    vm.sh("systemd-umount --quiet /boot 2>/dev/null; rm -f /boot/config-$(uname -r)", check=False)
    vm.reboot(55)


# --- readings and the line they make ---------------------------------------------------------------


def config_line(vm):
    """(the line modgated -n prints without its prefix, the readings as root just before)"""
    view = read_as_root(vm)
    out = vm.sh(MODGATED + " -n").out.splitlines()
    lines = [l[len(PREFIX):] for l in out if l.startswith(PREFIX)]
    assert len(lines) == 1, out
    assert lines[0] == expected(view), (lines[0], expected(view), view)
    return lines[0], view


def restart(vm, suffix="."):
    """Starts modgated.service anew. Returns the line that start logged (without prefix and suffix),
    the readings from inside its sandbox with its capabilities, and the priority of the message."""
    out = vm.sh("""set -e
        systemctl restart modgated.service
        systemctl show -P InvocationID modgated.service
        %s
        """ % (AS_DAEMON % "$(systemctl show -P MainPID modgated.service)"), stdin=READER).out
    invocation, _, readings = out.partition("\n")
    view = json.loads(readings)
    said = [e for e in vm.journal("_SYSTEMD_INVOCATION_ID=" + invocation)
            if e.get("MESSAGE", "").startswith(PREFIX)]
    assert len(said) == 1, said
    message = said[0]["MESSAGE"]
    assert message.endswith(suffix), message
    return message[len(PREFIX):-len(suffix)], view, said[0]["PRIORITY"]


def never_off(daemon, root):
    """Where the daemon's view differs from root's, it must say unknown: never less than there is."""
    d, r = fields(daemon), fields(root)
    assert d.keys() == r.keys(), (daemon, root)
    for k in d:
        assert d[k] == r[k] or d[k].startswith("unknown"), \
            "%s: the daemon says %r, root sees %r" % (k, d[k], r[k])


def fields(line):
    return dict(part.split(": ", 1) for part in line.split("; "))


def expected(v):
    """The line, from the readings, by the rules the administrator is promised: what cannot be read
    or seen is unknown, and says why."""
    f, ex = v["files"], v["exists"]
    lsm = f[SEC + "lsm"]
    lsms = lsm["text"].strip().split(",") if "text" in lsm else None

    def why(r, prefix=""):
        if lsms is None:
            if lsm["errno"] == errno.ENOENT:
                return "securityfs not mounted"
            return "securityfs: " + lsm["strerror"]
        return prefix + r["strerror"]

    def value(r):
        return r["text"].strip() if "text" in r else None

    return "; ".join([
        "module signatures: " + signatures(v, f[SIG], ex),
        "lockdown: " + lockdown(f[SEC + "lockdown"], lsms, why),
        "LoadPin: " + loadpin(value(f[LOADPIN]), lsms, ex, why),
        "IPE: " + ipe(v, value(f[SEC + "ipe/enforce"]), lsms, ex, why),
        "IMA module appraisal: " + ima(f[SEC + "ima/policy"], lsms, ex, why),
        "modules_disabled: " + modules_disabled(f[DISABLED], ex),
    ])


def signatures(v, r, ex):
    if r.get("text", "").strip() == "N":
        return "not enforced"
    if r.get("text", "").strip() == "Y":
        config = v.get("config")
        if not config or "lines" not in config:
            return "enforced (cannot be turned off, forced by the kernel: unknown)"
        if "CONFIG_MODULE_SIG_FORCE=y" in config["lines"]:
            return "enforced (forced by the kernel)"
        return "enforced (cannot be turned off, not forced by the kernel)"
    if r.get("errno") == errno.ENOENT and ex["/sys/module"]:
        return "not supported by the kernel"
    return "unknown (%s)" % r.get("strerror", os.strerror(errno.EBADMSG))


def lockdown(r, lsms, why):
    if "text" in r:
        m = re.search(r"\[(\w+)\]", r["text"])
        if m and m.group(1) in ("none", "integrity", "confidentiality"):
            return m.group(1)
        return "unknown (%s)" % os.strerror(errno.EBADMSG)
    if r["errno"] == errno.ENOENT and lsms is not None and "lockdown" not in lsms:
        return "no lockdown LSM"
    return "unknown (%s)" % why(r)


def loadpin(enforce, lsms, ex, why):
    active = "loadpin" in lsms if lsms is not None else (True if enforce in ("0", "1") else None)
    if active is None:
        return "unknown (%s)" % why(None)
    if not active:
        return "not active"
    state = {"1": "enforcing (", "0": "not enforcing ("}.get(enforce, "active (enforcing: unknown, ")
    digests = "supported" if ex[SEC + "loadpin/dm-verity"] else \
        "not supported" if lsms is not None else "unknown"
    return state + "pinned root: unknown, dm-verity digests: %s)" % digests


def ipe(v, enforce, lsms, ex, why):
    if not ex[SEC + "ipe"]:
        if lsms is None:
            return "unknown (%s)" % why(None)
        return "unknown (%s)" % os.strerror(errno.ENOENT) if "ipe" in lsms else "not active"
    if v["ipe_policies"] is None:
        return "active, policy unknown (%s)" % v["ipe_policies_error"]
    active = [n for n, r in sorted(v["ipe_policies"].items()) if r.get("text", "").strip() == "1"]
    if not active:
        return "no policy"
    mode = {"1": " (enforcing)", "0": " (permissive)"}.get(enforce, " (enforcing: unknown)")
    return "policy " + re.sub(r"[^\x20-\x7e]|;", "?", active[0]) + mode


def ima(r, lsms, ex, why):
    if "text" in r:
        for line in r["text"].splitlines():
            words = line.split()
            if words and words[0] == "appraise" and "func=MODULE_CHECK" in words[1:]:
                return "yes"
        return "no"
    if r["errno"] == errno.ENOENT and not ex[SEC + "ima"]:
        return "no (no IMA)" if lsms is not None else "unknown (%s)" % why(r)
    return "unknown (%s)" % why(r, "policy unreadable: ")


def modules_disabled(r, ex):
    if r.get("text", "").strip() in ("0", "1"):
        return r["text"].strip()
    if r.get("errno") == errno.ENOENT and ex["/proc/sys/kernel"]:
        return "absent (no module support)"
    return "unknown (%s)" % r.get("strerror", os.strerror(errno.EBADMSG))
