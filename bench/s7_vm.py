# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenario 7: in the VM tier's guest (test/vm), one image and one run: coldplug until udev settles,
and hotplug latency from QMP device_add to the interface appearing, modgate against stock udev
(at most 1.1 times, and fewer finit_module calls). Not implemented yet: docs/benchmarks.md says what
it is to measure and how."""

from common import Figure


def run(b, vm=False):
    why = "not implemented yet (docs/benchmarks.md)" if vm else "needs --vm"
    return [Figure(7, "VM coldplug and hotplug against stock udev", "not run", "", target="≤ 1.10",
                   met="not run", note=why)], {"not_run": why}
