# SPDX-License-Identifier: LGPL-2.1-or-later
"""The build: modgate in release mode (its own meson build directory), and bench/'s C programs
compiled beside it with the same compiler and libraries."""

import os
import subprocess
import sys

# (output, sources, extra flags, pkg-config packages)
PROGRAMS = [
    ("loadgen", ["bench/tools/loadgen.c"], [], []),
    ("spawn", ["bench/tools/spawn.c"], [], []),
    ("costs", ["bench/tools/costs.c"], [], ["libkmod", "libcrypto"]),
    ("varlink-floor", ["bench/anchors/varlink-floor.c", "src/shared/varlink-io.modgate.Manager.c"],
     ["-Isrc/shared"], ["libsystemd"]),
    ("udev-kmod", ["bench/anchors/udev-kmod.c"], [], ["libkmod"]),
    ("bulk-load", ["bench/anchors/bulk-load.c"], ["-lpthread"], ["libkmod"]),
]

TARGETS = ["src/daemon/modgated", "src/udev/modgate-udev", "src/modules-load/modgate-modules-load",
           "src/manifest/modgate-manifest",
           "test/modgate-test-shim.so"]


def say(msg):
    print("bench: %s" % msg, file=sys.stderr, flush=True)


def build(src, builddir):
    if not os.path.exists(os.path.join(builddir, "build.ninja")):
        say("meson setup %s -Dbuildtype=release" % os.path.relpath(builddir, src))
        subprocess.run(["meson", "setup", builddir, "-Dbuildtype=release"], cwd=src, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", builddir, *TARGETS], cwd=src, check=True, stdout=subprocess.DEVNULL)
    out = os.path.join(builddir, "bench")
    os.makedirs(out, exist_ok=True)
    for name, sources, flags, packages in PROGRAMS:
        target = os.path.join(out, name)
        deps = [os.path.join(src, s) for s in sources]
        if os.path.exists(target) and all(os.path.getmtime(d) <= os.path.getmtime(target) for d in deps):
            continue
        pc = subprocess.run(["pkg-config", "--cflags", "--libs", *packages], check=True, capture_output=True,
                            text=True).stdout.split() if packages else []
        cmd = ["cc", "-std=gnu11", "-O2", "-D_GNU_SOURCE", "-Wall", "-o", target, *deps, *flags, *pc]
        subprocess.run(cmd, cwd=src, check=True)
    say("built %s and bench/'s programs in %s" % (", ".join(os.path.basename(t) for t in TARGETS),
                                                   os.path.relpath(out, src)))
