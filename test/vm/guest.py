# SPDX-License-Identifier: LGPL-2.1-or-later
"""What scenarios ask the guest often: varlink calls, live modules, modgate's journal records."""

import collections
import json

SOCKET = "/run/modgate/io.modgate"
MODULES_DEVICE = "/dev/mapper/modgate-modules"


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


def records(vm, module, outcome=None, unit="modgated.service"):
    """modgate's provenance records for module in this boot's journal."""
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


def module_name(path):
    base = path.rsplit("/", 1)[-1]
    return base[:base.index(".ko")].replace("-", "_")


def device_of(vm, path):
    """major:minor of a block device node, as MODGATE_DEVICE writes it."""
    return vm.sh("stat -L -c '%%Hr:%%Lr' %s" % quote(path)).out.strip()


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"
