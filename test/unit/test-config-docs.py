#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every setting that config.c parses is documented where administrators look: in its section of
modgate.conf(5) and in conf/modgate.conf; and neither documents a setting that does not exist. The
module-name globs of docs/policy.md's examples each match a module of a real kernel tree (an alias
such as fs-erofs is no module name)."""

import fnmatch
import glob
import os
import re
import sys

ROOT = sys.argv[1]


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def settings():
    """(section, key) of each entry of config.c's settings[] table."""
    table = read("src", "daemon", "config.c")
    found = re.findall(r'\{\s*"([A-Z]\w+)",\s*"([A-Z]\w+)",\s*\w+', table)
    assert len(found) >= 10, "config.c's settings table not found (%d entries)" % len(found)
    return found


def man_sections(text):
    """{section: its text} of the '# [Section]' headings of the scdoc page."""
    parts = re.split(r"^# \[(\w+)\]\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n# ")[0] for i in range(1, len(parts), 2)}


def name_normalize(s):
    """'-' read as '_' outside brackets, as modgate matches module names."""
    out, bracket = [], False
    for c in s:
        bracket = True if c == "[" else False if c == "]" else bracket
        out.append("_" if c == "-" and not bracket else c)
    return "".join(out)


def policy_doc_globs():
    """The Allow= and Deny= globs of the [Policy] and [Source] sections of docs/policy.md's ini blocks:
    module-name globs (DenyRequest= and [Parameters] match other things)."""
    globs, section = [], None
    for block in re.findall(r"```ini\n(.*?)```", read("docs", "policy.md"), flags=re.S):
        for line in block.splitlines():
            m = re.match(r"^\[(\w+)\]", line)
            if m:
                section = m.group(1)
            m = re.match(r"^(Allow|Deny)=(.*)", line)
            if m and section in ("Policy", "Source"):
                globs += [(m.group(1), g) for g in m.group(2).split()]
    return globs


def check_policy_doc():
    """(ok, message lines): each documented module-name glob matches a module of the first kernel tree
    found (the build root has linux-image-amd64); None when this machine has no tree."""
    deps = sorted(glob.glob("/usr/lib/modules/*/modules.dep") + glob.glob("/lib/modules/*/modules.dep"))
    if not deps:
        return None, ["no kernel module tree on this machine"]
    with open(deps[0]) as f:
        names = {name_normalize(os.path.basename(line.split(":", 1)[0]).split(".ko")[0]) for line in f}
    globs = policy_doc_globs()
    bad = ["docs/policy.md: %s=%s matches no module of %s" % (k, g, os.path.dirname(deps[0]))
           for k, g in globs if not fnmatch.filter(names, name_normalize(g))]
    return not bad and len(globs) > 0, bad or ["%d globs checked" % len(globs)]


def main():
    n = 0
    failures = []
    table = settings()
    man = man_sections(read("man", "modgate.conf.5.scd"))
    conf = read("conf", "modgate.conf")
    for section, key in table:
        n += 1
        if section not in man:
            failures.append("modgate.conf(5) has no section [%s]" % section)
        elif "*%s=*" % key not in man[section]:
            failures.append("modgate.conf(5) [%s] does not document %s=" % (section, key))
        if not re.search(r"^#?\s*%s=" % key, conf, flags=re.M):
            failures.append("conf/modgate.conf does not show %s= (%s)" % (key, section))
    for section, text in man.items():
        for key in re.findall(r"^\*(\w+)=\*", text, flags=re.M):
            if (section, key) not in table:
                failures.append("modgate.conf(5) documents [%s] %s=, which config.c does not parse" % (section, key))
    limit = re.search(r"#define CONFIG_LINE_MAX (\d+)", read("src", "daemon", "config.h"))
    stated = re.search(r"'linemax' : '(\d+)'", read("man", "meson.build"))
    line_ok = limit and stated and limit.group(1) == stated.group(1)
    print("1..%d" % (n + 3))
    doc_ok, doc_lines = check_policy_doc()
    print("%s %d - docs/policy.md's module-name globs each match a module%s" % (
        "ok" if doc_ok is not False else "not ok", n + 3, " # SKIP " + doc_lines[0] if doc_ok is None else ""))
    for line in doc_lines:
        print("# " + line)
    print("%s %d - modgate.conf(5) states the line limit of config.h (%s)" % (
        "ok" if line_ok else "not ok", n + 2, limit.group(1) if limit else "?"))
    for i, (section, key) in enumerate(table, 1):
        bad = [f for f in failures if " %s=" % key in f and section in f]
        print("%s %d - [%s] %s=" % ("not ok" if bad else "ok", i, section, key))
        for f in bad:
            print("# " + f)
    extra = [f for f in failures if "which config.c does not parse" in f]
    print("%s %d - nothing documented that does not exist" % ("not ok" if extra else "ok", n + 1))
    for f in extra:
        print("# " + f)
    return 1 if failures or not line_ok or doc_ok is False else 0


if __name__ == "__main__":
    sys.exit(main())
