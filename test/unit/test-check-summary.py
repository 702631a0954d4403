#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tools/check's verdict (tools/check-summary) over test logs made here: a skip fails the run
unless named, a plan-level skip counts, a log older than the run or missing fails, and the VM
runner on a machine without QEMU lists every case as skipped, which fails the run and says so."""

import json
import os
import subprocess
import sys
import tempfile
import time

SRC = sys.argv[1]
SUMMARY = os.path.join(SRC, "tools", "check-summary")
VM_RUN = os.path.join(SRC, "test", "vm", "run")
work = tempfile.mkdtemp(prefix="test-check-summary-")
n = 0
failed = 0


def case(name, fn):
    global n, failed
    n += 1
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - reported, then the next case runs
        failed += 1
        print("not ok %d - %s" % (n, name))
        for line in ("%s: %s" % (type(e).__name__, e)).splitlines():
            print("# " + line)
    else:
        print("ok %d - %s" % (n, name))


def log(name, tests):
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        for t in tests:
            f.write(json.dumps(t) + "\n")
    return path


def summary(*args):
    res = subprocess.run([sys.executable, SUMMARY, *args], capture_output=True, text=True)
    return res.returncode, res.stdout.splitlines()


PASS = {"name": "load", "result": "OK", "stdout": "ok 1 - a\nok 2 - b\n1..2\n"}
SKIP_CASE = {"name": "modgate:integration / service", "result": "OK",
             "stdout": "ok 1 - boots\nok 2 - reload # SKIP no reload here\n1..2\n"}
PLAN_SKIP = {"name": "udev", "result": "SKIP", "stdout": "1..0 # SKIP needs root\n"}
CRASH = {"name": "requests", "result": "FAIL", "stdout": "ok 1 - a\n"}


def case_all_pass():
    rc, out = summary("--started=0", "--", "normal=" + log("pass", [PASS]))
    assert rc == 0 and out[-1] == "check: 2 passed, 0 failed, 0 skipped", out


def case_skip_fails():
    rc, out = summary("--", "normal=" + log("skip", [PASS, SKIP_CASE]))
    assert rc == 1, out
    assert "check: skipped (normal build, not allowed): service: reload: no reload here" in out, out
    assert out[-1] == "check: 3 passed, 0 failed, 1 skipped", out


def case_skip_allowed():
    path = log("skip2", [PASS, SKIP_CASE])
    for pattern in ("service", "service: rel*"):
        rc, out = summary("--allow-skip=" + pattern, "--", "normal=" + path)
        assert rc == 0, (pattern, out)
        assert "check: skipped (normal build): service: reload: no reload here" in out, out
    rc, out = summary("--allow-skip=service: boots", "--", "normal=" + path)
    assert rc == 1, out


def case_plan_skip():
    rc, out = summary("--", "normal=" + log("plan", [PASS, PLAN_SKIP]))
    assert rc == 1 and "check: skipped (normal build, not allowed): udev: needs root" in out, out
    assert out[-1] == "check: 2 passed, 0 failed, 1 skipped", out


def case_crash_counts():
    rc, out = summary("--", "normal=" + log("crash", [CRASH]))
    assert rc == 1 and out[-1] == "check: 1 passed, 1 failed, 0 skipped", out


def case_old_or_missing_log():
    path = log("old", [PASS])
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    rc, out = summary("--started=%d" % (time.time() - 60), "--", "normal=" + path)
    assert rc == 1 and "older than this run" in out[0] and out[-1].startswith("check: 0 passed, 1 failed"), out
    rc, out = summary("--", "normal=" + os.path.join(work, "none.json"))
    assert rc == 1 and "no test log" in out[0], out


def case_left_out_build():
    rc, out = summary("--", "normal=" + log("pass2", [PASS]), "san=", "--", "sanitizer build: did not build")
    assert rc == 1 and "check: sanitizer build: did not build" in out, out
    assert any("san: the san build was left out" in line for line in out), out


def case_vm_without_qemu():
    # The runner as meson runs it, on a machine where QEMU is missing.
    env = dict(os.environ, MODGATE_VM_QEMU="/nonexistent/qemu-system-x86_64", MODGATE_VM_REEXEC="1")
    res = subprocess.run([sys.executable, VM_RUN, "--no-build", "--build", work], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res
    lines = res.stdout.splitlines()
    skipped = [line for line in lines if "# SKIP" in line]
    assert len(skipped) >= 20 and len(skipped) == len(lines) - 1, lines
    why = "/nonexistent/qemu-system-x86_64 not found" if os.geteuid() == 0 else "needs root"
    assert all(why in line for line in skipped), lines
    rc, out = summary("--", "normal=" + log("vm", [PASS, {"name": "modgate:vm / vm", "result": "OK",
                                                         "stdout": res.stdout}]))
    assert rc == 1, out
    assert "check: the VM tier did not run (see the skip reasons above)" in out, out
    assert out[-1] == "check: 2 passed, 0 failed, %d skipped" % len(skipped), out
    res = subprocess.run([sys.executable, VM_RUN, "--preflight"], capture_output=True, text=True, env=env)
    assert res.returncode == 1 and "vm: cannot run: " in res.stdout and why in res.stdout, res


case("every case passed: exit 0", case_all_pass)
case("a skipped case fails the run and is printed with its reason", case_skip_fails)
case("a skip named by --allow-skip passes; another pattern does not", case_skip_allowed)
case("a plan-level skip counts and fails", case_plan_skip)
case("a program that failed without a failing case counts one failure", case_crash_counts)
case("a log older than the run, or none, is a failure", case_old_or_missing_log)
case("a build left out is a skip; a build that failed is a failure", case_left_out_build)
case("without QEMU the VM runner lists every case as skipped, and the run fails saying so", case_vm_without_qemu)
print("1..%d" % n)
sys.exit(1 if failed else 0)
