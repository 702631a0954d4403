# SPDX-License-Identifier: LGPL-2.1-or-later
"""The request corpus: real modaliases (this machine's devices, per-CPU duplicates kept, and the VM
guest's) and modaliases made from modules.alias patterns of every bus, hits and misses, seeded.
Each key is classified hit or miss by libkmod itself (the udev-kmod anchor's lookup), not by how it
was made."""

import os
import random
import subprocess

import common

SEED = 14
HITS = 7000
MISSES = 2900
HEX = "0123456789ABCDEF"


def host_modaliases():
    """MODALIAS of every device's uevent under /sys/devices: one per device, as coldplug sends them
    (each CPU is a device with the same modalias)."""
    out = []
    for dirpath, _, files in os.walk("/sys/devices"):
        if "uevent" not in files:
            continue
        try:
            with open(os.path.join(dirpath, "uevent"), errors="replace") as f:
                for line in f:
                    if line.startswith("MODALIAS="):
                        out.append(line.strip().split("=", 1)[1])
        except OSError:
            pass
    return sorted(out)


def guest_modaliases():
    with open(os.path.join(common.HERE, "corpus/guest-modaliases.txt")) as f:
        return [line.split(" ", 1)[1].strip() for line in f if line.strip() and not line.startswith("#")]


def bus_of(alias):
    """The bus of a modalias or pattern (pci, usb, acpi, ...); for other aliases the first word of the
    request key (fs, crypto, net, char), or "name" for an alias that is a name (ip6t_esp)."""
    if ":" in alias:
        return alias.split(":", 1)[0].rstrip("*")
    return alias.split("-", 1)[0] if "-" in alias else "name"


def expand(pattern):
    """A concrete key that the glob pattern matches: '*' and '?' become '0', a class its first
    member. None for a negated class."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*" or c == "?":
            out.append("0")
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                return None
            body = pattern[i + 1:j]
            if body[0] in "!^":
                return None
            out.append(body[0])
            i = j
        else:
            out.append(c)
        i += 1
    return "".join(out)


def mutate(key, rng):
    """A near miss: the key with the hex digits after its bus changed at random."""
    bus, sep, rest = key.partition(":")
    if not sep:
        return key + "-" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
    return bus + ":" + "".join(rng.choice(HEX) if ch in HEX else ch for ch in rest)


def build(b):
    """{"keys": [...], "hit": [bool...], "origin": [...], "buses": {bus: n}}, in a seeded order."""
    rng = random.Random(SEED)
    patterns = {}
    for alias, _ in __import__("harness").modules_alias(b.tree):
        k = expand(alias)
        if k:
            patterns.setdefault(bus_of(alias), []).append(k)
    total = sum(len(v) for v in patterns.values())
    hits = []
    for bus, keys in sorted(patterns.items()):
        n = min(len(keys), max(3, round(HITS * len(keys) / total)))
        hits += [(k, "pattern", bus) for k in rng.sample(keys, n)]
    misses = [(mutate(k, rng), "mutated", bus) for k, _, bus in rng.sample(hits, MISSES)]
    real = [(k, "host", bus_of(k)) for k in host_modaliases()]
    real += [(k, "guest", bus_of(k)) for k in guest_modaliases()]
    entries = real + hits + misses
    rng.shuffle(entries)
    keys = [k for k, _, _ in entries]
    found = classify(b, keys)
    buses = {}
    for _, _, bus in entries:
        buses[bus] = buses.get(bus, 0) + 1
    return {"keys": keys, "hit": [n > 0 for n in found], "origin": [o for _, o, _ in entries], "buses": buses,
            "n_host": sum(1 for e in entries if e[1] == "host"), "n_guest": sum(1 for e in entries if e[1] == "guest")}


def classify(b, keys):
    """How many modules libkmod finds for each key: every module made live first, so that nothing
    loads, and put back as it was."""
    b.forget_modules()
    b.make_live(b.deps)
    path = os.path.join(b.work, "classify.keys")
    with open(path, "w") as f:
        f.write("\n".join(keys) + "\n")
    samples = os.path.join(b.work, "classify.samples")
    subprocess.run([b.tool["udev-kmod"], b.trusted, "lookup", path, samples], check=True,
                   env=b.shim_env(os.path.join(b.work, "classify.shim.log")), stdout=subprocess.DEVNULL)
    with open(samples) as f:
        found = [int(line.split()[1]) for line in f]
    b.forget_modules()
    return found
