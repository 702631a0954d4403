#!/usr/bin/env python3
# Runs every case (or the given ones) of integration files alone. args: NAME[:N,N..]...
import json, os, subprocess, sys, re
B = "/work/wt-cases/build"
tests = {t["name"]: t for t in json.load(open(B + "/meson-info/intro-tests.json"))}
out = "/work/wt-cases/.each"; os.makedirs(out, exist_ok=True)
for arg in sys.argv[1:]:
    name, _, sel = arg.partition(":")
    t = tests[name]
    env = dict(os.environ, **t["env"])
    cmd = t["cmd"]
    if sel:
        nums = sel.split(",")
    else:
        r = subprocess.run(cmd + ["--list"], env=env, capture_output=True, text=True, timeout=300)
        nums = [l.split("\t")[0] for l in r.stdout.splitlines() if re.match(r"^\d+\t", l)]
    for n in nums:
        try:
            r = subprocess.run(cmd + [n], env=env, capture_output=True, text=True, timeout=300)
            text, rc = r.stdout + r.stderr, r.returncode
        except subprocess.TimeoutExpired as e:
            text, rc = str(e.stdout), "timeout"
        open("%s/%s-%s.log" % (out, name, n), "w").write(text)
        res = [l for l in text.splitlines() if l.startswith(("ok ", "not ok "))]
        with open(out + "/summary", "a") as f:
            f.write("%s %s rc=%s %s\n" % (name, n, rc, " | ".join(x[:70] for x in res)))
