#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every setting that config.c parses is documented where administrators look: in its section of
modgate.conf(5) and in conf/modgate.conf; and neither documents a setting that does not exist."""

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
    print("1..%d" % (n + 2))
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
    return 1 if failures or not line_ok else 0


if __name__ == "__main__":
    sys.exit(main())
