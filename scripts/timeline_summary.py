#!/usr/bin/env python3
"""timeline_summary.py - a table from a trainer --timeline file: per rank, the spans by name (count, total
and mean ms) and how much of the gradient reductions ran while backward was still computing (hidden
communication: the overlap of each bucket's reduction span with the same rank's backward spans).

Usage: scripts/timeline_summary.py TRACE.json
"""
import json
import sys
from collections import defaultdict


def overlap(a, b):
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def main(path):
    events = json.load(open(path))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    for pid in sorted(names):
        spans = [e for e in events if e["ph"] == "X" and e["pid"] == pid]
        steps = sorted({e["args"]["step"] for e in spans})
        print(f"{names[pid]}: {len(spans)} spans over steps {steps[0]}..{steps[-1]}" if steps else names[pid])
        by = defaultdict(list)
        for e in spans:
            by[e["name"].split(" bucket ")[0] + (" (buckets)" if " bucket " in e["name"] else "")].append(e)
        for name, es in sorted(by.items(), key=lambda kv: -sum(e["dur"] for e in kv[1])):
            total = sum(e["dur"] for e in es) / 1000
            print(f"  {name:28s} {len(es):6d} spans  {total:10.3f} ms  {total / len(es):8.3f} ms each")
        backward = [(e["ts"], e["ts"] + e["dur"]) for e in by.get("backward", [])]
        comm = [(e["ts"], e["ts"] + e["dur"]) for n, es in by.items() if n.endswith("(buckets)") for e in es]
        total = sum(b - a for a, b in comm)
        hidden = sum(overlap(c, w) for c in comm for w in backward)
        if total > 0:
            print(f"  gradient reductions: {total / 1000:.3f} ms, of which {hidden / 1000:.3f} ms "
                  f"({100 * hidden / total:.1f}%) overlapped backward")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
