#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The SVG that modgatectl plot writes for test-plot's fixed history parses as XML: one <rect> bar and
one label per module, in request order, the stages of those that have them, and the legend."""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "plot.svg")
    subprocess.run([sys.argv[1]], env=dict(os.environ, TEST_PLOT_SVG=path), check=True, stdout=subprocess.DEVNULL)
    root = ET.parse(path).getroot()

assert root.tag == NS + "svg", root.tag
modules = [g for g in root.iter(NS + "g") if g.get("class") == "module"]
labels = [g.find(NS + "text").text.split(" (")[0] for g in modules]
assert labels == ["tun", "virtio_rng", "e1000", "squashfs", "evil<&\">", "dummy"], labels
assert [g.get("data-outcome") for g in modules] == ["loaded", "loaded", "loaded", "failed", "denied", "loaded_outside"]
ys = [int(g.find(NS + "rect").get("y")) for g in modules]
assert ys == sorted(ys) and len(set(ys)) == len(ys), ys
legend = [g.find(NS + "text").text for g in root.iter(NS + "g") if g.get("class") == "legend"]
assert len(legend) == 4, legend
# The stages over a bar, where its record has them (e1000, squashfs, the denied one); one bar otherwise.
stages = {label: [r.get("class") for r in g.findall(NS + "rect")[1:]] for label, g in zip(labels, modules)}
assert stages["e1000"] == ["wait", "check", "init"], stages
assert stages["tun"] == [] and stages["dummy"] == [], stages
legend = [g.find(NS + "text").text for g in root.iter(NS + "g") if g.get("class") == "legend-stage"]
assert len(legend) == 3 and "dependencies" in legend[0], legend
print("ok 1 - the SVG parses as XML, one bar per module in request order, its stages, and a legend of both")
print("1..1")
