#!/usr/bin/python3
"""bench_collectives_table.py — the table of scripts/bench_collectives.sh: reads the manifest of its runs
(one line per launcher call: repeat, id, status, exit code, milliseconds, output base path), parses each
run's output (mirror-bench --json files, the peers' JSON lines, mirror-bench's memory-bandwidth header),
and prints one markdown table per collective: median busbw per system, the memory-bandwidth bound of the
byte model, and the medians of the per-repeat ratios. With --out, writes every measurement, median and
ratio as JSON lines (to a temporary file, renamed at the end). Not meant to be run by hand."""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess

PEER_LABELS = {"impi": "Intel MPI {}", "oneccl": "oneCCL {}", "ompi5": "Open MPI {}", "mpich": "MPICH {}",
               "gloo": "gloo (torch {}, in place)"}
PEER_DISTS = {"impi": ("venv-impi", "impi_rt"), "oneccl": ("venv-ccl", "oneccl"), "ompi5": ("venv-ompi", "openmpi"),
              "mpich": ("venv-mpich", "mpich"), "gloo": ("venv", "torch")}
VARIANT_LABELS = {"ordinary": "Mirror ordinary", "shared": "Mirror shared (-R 1)"}


def variant_label(v):
    return VARIANT_LABELS.get(v, "Mirror --shm-copy " + v[len("copy-"):] if v.startswith("copy-") else v)


# Byte model (docs/benchmarks.md): memory traffic of the best single-copy scheme, read + write bytes of all
# ranks per message byte, and the bus factor of nccl-tests; bound = B * bus_factor / traffic, B the copy
# bandwidth of all ranks at once counted as read + write bytes.
def traffic(op, n):
    return {"allreduce": 2 * n, "broadcast": 2 * (n - 1), "allgather": 2 * n, "reduce_scatter": n + 1}[op]


def bus_factor(op, n):
    return {"allreduce": 2 * (n - 1) / n, "broadcast": 1.0, "allgather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n}[op]


def working_set(op, n, s):  # bytes of buffers all ranks touch for one call of message size s
    return {"allreduce": 2 * n * s, "broadcast": n * s, "allgather": (n + 1) * s, "reduce_scatter": (n + 1) * s}[op]


def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x):  # about three significant digits
    if x is None:
        return "n/a"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def peer_version(home, peer):
    venv, dist = PEER_DISTS[peer]
    found = glob.glob(os.path.join(home, venv, "lib", "python*", "site-packages", dist + "-*.dist-info"))
    return os.path.basename(found[0])[len(dist) + 1:-len(".dist-info")] if found else "?"


def system_mpi_version():
    try:
        text = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=20).stdout
        m = re.search(r"\(Open MPI\)\s+(\S+)", text)
        return m.group(1) if m else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def last_line(path):
    try:
        lines = [l.strip() for l in open(path, errors="replace") if l.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


class Results:
    def __init__(self, sizes, n):
        self.sizes, self.n = sizes, n
        self.busbw = {}   # (op, system) -> {bytes: {rep: GB/s}}
        self.us = {}      # (op, system) -> {bytes: {rep: us}}
        self.membw = {}   # rep -> {copy, stream_copy, add}
        self.notes, self.footers, self.transports, self.runs, self.missing = [], {}, {}, [], set()

    def put(self, op, system, size, rep, busbw, us):
        self.busbw.setdefault((op, system), {}).setdefault(size, {})[rep] = busbw
        self.us.setdefault((op, system), {}).setdefault(size, {})[rep] = us

    def size_key(self, op, row_bytes):
        # allgather/reduce_scatter rows hold count*n elements: the requested size rounded down to 4*n bytes.
        for s in self.sizes:
            if 0 <= s - row_bytes < 4 * self.n:
                return s
        return None


def parse_membw(res, rep, base):
    for line in open(base + ".out", errors="replace"):
        m = re.search(r"copy ([\d.]+) GB/s, copy with streaming stores ([\d.]+) GB/s, add ([\d.]+) GB/s", line)
        if m:
            res.membw[rep] = dict(zip(("copy", "stream_copy", "add"), map(float, m.groups())))
            return True
    return False


def parse_mirror(res, rep, op, variant, group, base, json_path):
    doc = json.load(open(json_path))
    res.transports[variant] = doc.get("transport", "?")
    for row in doc["rows"]:
        size = res.size_key(op, row["bytes"])
        if size is None:
            continue  # a step of the sweep between the requested sizes
        t = row["out_of_place"] or row["in_place"]  # broadcast has only in place
        res.put(op, "mirror:" + variant, size, rep, t["busbw_gbs"], t["time_us"])
        if variant == "ordinary" and row["mpi"]:
            res.put(op, "ompi4", size, rep, row["mpi"]["busbw_gbs"], row["mpi"]["time_us"])
    lines = [l.strip() for l in open(base + ".out", errors="replace") if l.startswith("# shm") or "copy path" in l]
    res.footers.setdefault((op, variant), {})[group] = list(dict.fromkeys(lines))  # the last repeat's, unique


def parse_peer(res, rep, peer, base):
    got = 0
    for line in open(base + ".out", errors="replace"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec.get("bytes") in res.sizes:
            res.put("allreduce", "peer:" + peer, rec["bytes"], rep, rec["busbw_GBs"], rec["us"])
            got += 1
    return got


def load(args):
    sizes = [int(s) for s in args.sizes.split(",")]
    res = Results(sizes, args.np)
    for line in open(args.manifest):
        rep, rid, status, rc, ms, base = line.rstrip("\n").split("\t")
        rep = int(rep)
        res.runs.append({"type": "run", "repeat": rep, "id": rid, "status": status, "exit": int(rc),
                         "seconds": int(ms) / 1000})
        if status == "missing":
            res.missing.add(rid[len("peer."):])
            res.notes.append(f"{rid[len('peer.'):]}: {base} (column skipped)")
            continue
        kind = rid.split(".")
        if status != "ok":
            why = last_line(base + ".err") or last_line(base + ".out") or "no output"
            if status == "timeout":
                why = f"killed after {int(ms) / 1000:.0f} s (--timeout); last output: {why}"
            kept = kind[0] == "peer" and parse_peer(res, rep, kind[1], base)  # the sizes it finished
            res.notes.append(f"repeat {rep}: {rid} {status} (exit {rc}): {why}" +
                             (f" ({kept} sizes it printed before are kept)" if kept else ""))
            continue
        try:
            if kind[0] == "membw":
                if not parse_membw(res, rep, base):
                    res.notes.append(f"repeat {rep}: no memory-bandwidth line in mirror-bench's output")
            elif kind[0] == "mirror":
                parse_mirror(res, rep, kind[1], kind[2], kind[3], base, base + ".json")
            elif kind[0] == "peer" and not parse_peer(res, rep, kind[1], base):
                res.notes.append(f"repeat {rep}: {rid} printed no results: {last_line(base + '.err')}")
        except (OSError, ValueError, KeyError, TypeError) as e:
            res.notes.append(f"repeat {rep}: {rid}: unreadable output ({e})")
    return res


def ratio(res, op, a, b, size):
    xa, xb = res.busbw.get((op, a), {}).get(size, {}), res.busbw.get((op, b), {}).get(size, {})
    return median([xa[r] / xb[r] for r in xa if r in xb and xb[r] > 0])


def bounds(res, op):  # repeat -> the byte model's bound from that repeat's memory bandwidth
    return {r: max(m["copy"], m["stream_copy"]) * bus_factor(op, res.n) / traffic(op, res.n)
            for r, m in res.membw.items()}


def fraction_of_bound(res, op, system, size, per_rep):
    xs = res.busbw.get((op, system), {}).get(size, {})
    return median([xs[r] / per_rep[r] for r in xs if per_rep.get(r)])


def table(res, op, variants, peers, labels, l3):
    systems = ["mirror:" + v for v in variants]
    if op == "allreduce":
        systems += ["peer:" + p for p in peers if p not in res.missing]  # failed runs: n/a cells
    base = "peer:impi" if op == "allreduce" and ("allreduce", "peer:impi") in res.busbw else "ompi4"
    systems.append("ompi4")
    ratios = [("mirror:" + v, base) for v in variants]
    if op == "allreduce" and ("allreduce", "peer:oneccl") in res.busbw:
        ratios.append(("mirror:ordinary", "peer:oneccl"))
    short = lambda s: {"mirror:ordinary": "ord", "mirror:shared": "shared", "peer:impi": "IMPI",
                       "peer:oneccl": "oneCCL", "ompi4": "OMPI4"}.get(s, s.split(":")[-1].replace("copy-", ""))
    per_rep = bounds(res, op)
    bound = median(list(per_rep.values()))
    head = ["size", "bound"] + [labels[s] for s in systems] + [f"{short(a)}/{short(b)}" for a, b in ratios] + \
           ["ord/bound", "shared/bound"]
    rows, records = [], []
    for s in res.sizes:
        cached = l3 and working_set(op, res.n, s) <= l3
        cells = [human(s) + (" *" if cached else ""), fmt(bound)]
        for sy in systems:
            m = median(list(res.busbw.get((op, sy), {}).get(s, {}).values()))
            cells.append(fmt(m))
            if m is not None:
                records.append({"type": "median", "op": op, "bytes": s, "system": sy, "busbw_gbs": m,
                                "repeats": len(res.busbw[(op, sy)][s])})
        for a, b in ratios:
            r = ratio(res, op, a, b, s)
            cells.append(fmt(r))
            if r is not None:
                records.append({"type": "ratio", "op": op, "bytes": s, "of": a, "to": b, "median": r})
        for sy in ("mirror:ordinary", "mirror:shared"):
            f = fraction_of_bound(res, op, sy, s, per_rep)
            cells.append(fmt(f))
            if f is not None:
                records.append({"type": "ratio", "op": op, "bytes": s, "of": sy, "to": "bound", "median": f})
        if bound:
            records.append({"type": "bound", "op": op, "bytes": s, "busbw_gbs": bound, "in_cache": bool(cached)})
        rows.append(cells)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * len(head)) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in rows]
    return lines, records, base


def main():
    ap = argparse.ArgumentParser()
    for a in ("manifest", "sizes", "ops", "variants", "peers", "peers-home", "machine", "load-start", "load-end",
              "command"):
        ap.add_argument("--" + a, required=a not in ("peers",), default="")
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--l3", default="")
    ap.add_argument("--membw-ranks", type=int, default=0)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    res = load(args)
    variants = args.variants.split(",")
    peers = [p for p in args.peers.split(",") if p]
    l3 = int(args.l3) if args.l3.isdigit() else 0
    labels = {"mirror:" + v: variant_label(v) for v in variants}
    labels.update({"peer:" + p: PEER_LABELS[p].format(peer_version(args.peers_home, p)) for p in peers})
    labels["ompi4"] = f"Open MPI {system_mpi_version()} (mirror-bench's MPI)"
    n = args.np
    records = [{"type": "machine", "machine": args.machine, "load_start": args.load_start,
                "load_end": args.load_end, "command": args.command, "ranks": n}] + res.runs
    records += [{"type": "membw", "repeat": r, **m} for r, m in sorted(res.membw.items())]
    for key, per in res.busbw.items():
        for s, reps in per.items():
            for r, v in reps.items():
                records.append({"type": "measurement", "op": key[0], "system": key[1], "bytes": s, "repeat": r,
                                "busbw_gbs": v, "time_us": res.us[key][s][r]})
    print()
    if res.membw:
        mb = list(res.membw.values())
        rng = lambda k: "–".join(sorted({f"{min(m[k] for m in mb):.1f}", f"{max(m[k] for m in mb):.1f}"}, key=float))
        print(f"Memory bandwidth (mirror-bench --stream 64M, {args.membw_ranks} ranks at once, summed, per repeat): copy "
              f"{rng('copy')} GB/s, copy with streaming stores {rng('stream_copy')} GB/s, add {rng('add')} GB/s.")
    for op in args.ops.split(","):
        lines, recs, base = table(res, op, variants, peers, labels, l3)
        records += recs
        print(f"\n### {op}, {n} ranks, float32{' sum' if op in ('allreduce', 'reduce_scatter') else ''}, "
              f"busbw GB/s, medians of {len({r['repeat'] for r in res.runs if r['repeat'] > 0})} alternated repeats\n")
        print("\n".join(lines))
        print(f"\nbound = max(copy, streaming copy) × {bus_factor(op, n):.3g} / {traffic(op, n)} (byte model: "
              f"{traffic(op, n)} bytes read + written per message byte, all ranks; bus factor {bus_factor(op, n):.3g}); "
              f"* = the buffers of one call ({working_set(op, n, 1)}× the size) fit in L3, the bound does not apply. "
              f"Ratios (to the bound too): medians of the per-repeat ratios; base {labels[base]}.")
        for v in variants:
            for group, lines in res.footers.get((op, v), {}).items():
                lo, hi = (int(x) for x in group.split("-"))
                for f in lines:
                    print(f"  {variant_label(v)}, last {human(lo)}–{human(hi)} run: {f.lstrip('# ')}")
    if "allreduce" in args.ops.split(",") and len(args.ops.split(",")) > 1:
        print("\nThe peer programs of ../shared/peers time only allreduce: the other collectives compare Mirror "
              "with mirror-bench's own MPI column.")
    print(f"\ntransport: " + ", ".join(f"{variant_label(v)} {t}" for v, t in res.transports.items()))
    print(f"load: start {args.load_start.strip()}; end {args.load_end.strip()}")
    if res.notes:
        print("\nnotes:")
        for note in res.notes:
            print("  " + note)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        os.replace(tmp, args.out)
        print(f"\nwrote {len(records)} JSON lines to {args.out}")


if __name__ == "__main__":
    main()
