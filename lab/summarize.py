"""Lab instrument: a timeline of lab/timeline.py in a few lines: when the sweep started and
ended, the pool's compiles, and per shape and phase the span of its rows."""
import json
import sys
from collections import defaultdict

for path in sys.argv[1:]:
    ev = [json.loads(line) for line in open(path)]
    print("==", path)
    t = {e["ev"]: e["t"] for e in ev if e["ev"] in ("run_sweep", "run_sweep_end", "exit")}
    print("  run_sweep at", t.get("run_sweep"), "end", t.get("run_sweep_end"), "exit", t.get("exit"))
    done = [e for e in ev if e["ev"] == "done"]
    starts = [e for e in ev if e["ev"] == "start"]
    if done:
        print("  first row", done[0]["t"], "last row", done[-1]["t"], "rows", len(done))
    cj = [e for e in ev if e["ev"] == "cjob"]
    if cj:
        print("  compiles", len(cj), "first", cj[0]["t"], "last", cj[-1]["t"],
              "sum s", round(sum(e["s"] for e in cj), 1), ">0.2s:", sum(e["s"] > 0.2 for e in cj))
    span = defaultdict(lambda: [1e9, 0, 0])
    for e in done:
        k = (e["shape"], e["phase"] + ("" if e["prov"] == "triton" else "/" + e["prov"]))
        s = span[k]
        s[0], s[1], s[2] = min(s[0], e["t"]), max(s[1], e["t"]), s[2] + 1
    for k in sorted(span, key=lambda k: span[k][0]):
        a, b, n = span[k]
        print(f"  {k[0]:>20} {k[1]:<16} {a:7.2f} -> {b:7.2f}  n={n}")
    # gaps: time the device spent between rows (idle/wait)
    last = None
    gaps = []
    for e in ev:
        if e["ev"] == "start" and last is not None:
            gaps.append((round(e["t"] - last, 2), e["t"], e["phase"], e["sizes"]))
        if e["ev"] == "done":
            last = e["t"]
    gaps.sort(reverse=True)
    print("  largest waits before a start:", gaps[:8])
    print("  total wait before starts:", round(sum(g[0] for g in gaps), 2))
