#!/usr/bin/env bash
# bench_cluster.sh — Mirror across 2 namespaced test hosts (scripts/cluster.sh) whose cables are limited with
# tc tbf: allreduce busbw on 2 hosts x 2 ranks, Mirror hierarchical (mirror-bench --transport hierarchical)
# against flat Mirror MPI (--transport mpi) and Open MPI's own MPI_Allreduce (mirror-bench's MPI column, and
# the peer program /work/shared/peers/mpi_allreduce.c built with this machine's Open MPI), alternated size by
# size in one run, with the link-limited bound beside it; then training samples/s, 2 hosts x 1 rank over the
# limited link with gradient overlap on and off, against 1 host x 2 ranks. Needs root (namespaces). Not part
# of scripts/test.sh: it prints figures, it asserts nothing.
#
# The bound (docs/multi-node.md, "Over a limited link"): busbw = algbw * 2(n-1)/n with algbw = S / t, so for
# n = 4 busbw = 1.5 S / t. The cable's rate R (each direction) bounds t from below by the bytes that must
# cross one direction of it per allreduce of S bytes:
#   flat ring over ranks 0,1 | 2,3: every rank sends 2(n-1)/n S = 1.5 S to its ring successor, and the ring
#     links 1->2 and 3->0 cross the cable, one each way: 1.5 S per direction, so busbw <= 1.5 S / (1.5 S / R) = R
#   hierarchical: each local rank all-reduces its S/2 shard with its peer on the other host (2 ranks: it
#     sends 2(2-1)/2 * S/2 = S/2), 2 local ranks per host: S per direction, so busbw <= 1.5 S / (S / R) = 1.5 R
# (payload only: TCP/IP headers take about 3 % of a 1500-byte MTU frame on top).
#
#   scripts/bench_cluster.sh [--rates 1gbit,10gbit] [--min 64K] [--max 64M] [--iters 10] [--no-peer]
#                            [--no-train] [--train-steps 60] [--model mlp:2048,2048] [--tcp-links 2]
#                            [--grad-dtypes fp32,bf16]
# --grad-dtypes: the training rows are run for each of these --grad-dtype values (default fp32 only).
# --tcp-links: Open MPI's btl_tcp_links (TCP connections per pair of ranks, default 2 here, Open MPI's 1): one
# connection carrying a large exchange both ways reached only half the cable (docs/multi-node.md, "Why
# 2 hosts x 1 rank trained at a third of the link").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rates="1gbit,10gbit"; min=64K; max=64M; iters=10; peer=1; train=1; steps=60; model="mlp:2048,2048"; links=2
grad_dtypes=fp32
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    --no-train) train=0; shift ;;
    --train-steps) steps="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --tcp-links) links="$2"; shift 2 ;;
    --grad-dtypes) grad_dtypes="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_cluster.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$links" =~ ^[1-9][0-9]?$ ]] || { echo "bench_cluster.sh: --tcp-links '$links': expected 1..99" >&2; exit 2; }
[[ "$grad_dtypes" =~ ^(fp32|bf16|fp16)(,(fp32|bf16|fp16))*$ ]] ||
  { echo "bench_cluster.sh: --grad-dtypes '$grad_dtypes': expected a comma-separated list of fp32, bf16, fp16" >&2; exit 2; }
build="$root/${BUILD_DIR:-build}"
bench="$build/collectives/mirror-bench"; trainer="$build/trainer/tools/trainer"; data="$build/data/mirror-data"
for p in "$bench" "$trainer" "$data"; do
  [ -x "$p" ] || { echo "bench_cluster.sh: $p not built (cmake --build build --target mirror-bench trainer mirror-data)" >&2; exit 2; }
done
cluster="$root/scripts/cluster.sh"
why="$("$cluster" check 2>&1)" || { echo "bench_cluster.sh: test hosts cannot be made here: $why" >&2; exit 2; }
peer_src="${MIRROR_PEERS_DIR:-$root/../shared/peers}/mpi_allreduce.c"
[ -f "$peer_src" ] || peer_src=/work/shared/peers/mpi_allreduce.c
py=/usr/bin/python3

prefix=bc$$; prefix="${prefix:0:8}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-cluster.XXXXXX")"
cleanup() { "$cluster" down --prefix "$prefix" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 143' TERM INT

# shellcheck source=machine.sh
source "$(dirname "${BASH_SOURCE[0]}")/machine.sh"
machine() {
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; caches: $(cpu_caches); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %T UTC')"
}
machine

if [ "$peer" = 1 ]; then
  if command -v mpicc >/dev/null && [ -f "$peer_src" ]; then
    mpicc -O2 -DPEER_NAME='"openmpi-system"' "$peer_src" -o "$tmp/mpi_allreduce"
  else
    echo "# no peer: mpicc or $peer_src missing (Open MPI's column of mirror-bench is still shown)"; peer=0
  fi
fi

timeout 60 "$cluster" up 2 --prefix "$prefix" >/dev/null
eval "$("$cluster" env --prefix "$prefix")"
h0="$prefix-h0"; h1="$prefix-h1"
"$cluster" hostfile --prefix "$prefix" --slots 2 >"$tmp/hosts2x2"
"$cluster" hostfile --prefix "$prefix" --slots 1 >"$tmp/hosts2x1"
echo "$h0 slots=2" >"$tmp/hosts1x2"
mpi=(mpirun --oversubscribe --mca btl_tcp_links "$links"); [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
echo "# Open MPI btl_tcp_links $links (TCP connections per pair of ranks)"

set_rate() { "$cluster" rate "$h0" "$1" 2>/dev/null; "$cluster" rate "$h1" "$1" 2>/dev/null; }

# bench_run TRANSPORT OUT.json — one mirror-bench sweep on 2 hosts x 2 ranks.
bench_run() {
  timeout 900 "${mpi[@]}" -np 4 --hostfile "$tmp/hosts2x2" "$bench" allreduce -b "$min" -e "$max" -f 4 -n "$iters" \
    -w 2 -c 0 --stream 0 --transport "$1" --json "$2" >"$2.out" 2>&1 || { cat "$2.out" >&2; return 1; }
}
peer_run() {  # OUT.jsonl
  timeout 900 "${mpi[@]}" -np 4 --hostfile "$tmp/hosts2x2" "$tmp/mpi_allreduce" >"$1" 2>"$1.err" || { cat "$1.err" >&2; return 1; }
}

table() {  # RATE — prints the busbw table of this rate's runs
  "$py" - "$1" "$tmp/hier.json" "$tmp/flat.json" "$tmp/peer.jsonl" <<'PY'
import json, os, re, sys
rate, hier, flat, peer = sys.argv[1:5]
m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate)
R = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8 / 1e9 if m else None  # GB/s each way
rows = lambda p: {r["bytes"]: r for r in json.load(open(p))["rows"]}
H, F = rows(hier), rows(flat)
P = {}
if os.path.exists(peer):
    for line in open(peer):
        if line.startswith("{"):
            j = json.loads(line); P[j["bytes"]] = j["busbw_GBs"]
print(f"# allreduce float32 sum, 2 hosts x 2 ranks, cables limited to {rate} each way" if R else "# allreduce, unlimited cables")
print("# busbw in GB/s = (S / t) * 2(n-1)/n, n = 4; bound: R for a flat ring (1.5 S per cable direction), 1.5 R hierarchical (S)")
hdr = f"{'size':>9} {'hier':>7} {'flat':>7} {'OMPI':>7} {'OMPIpeer':>8} {'hier/flat':>9} {'hier/OMPI':>9}"
if R: hdr += f" {'bound_hier':>10} {'hier%':>6} {'bound_flat':>10} {'flat%':>6}"
print(hdr)
for b in sorted(H):
    h, f = H[b]["out_of_place"]["busbw_gbs"], F[b]["out_of_place"]["busbw_gbs"]
    o = (H[b]["mpi"]["busbw_gbs"] + F[b]["mpi"]["busbw_gbs"]) / 2  # MPI_Allreduce, timed in both sweeps
    p = P.get(b)
    size = f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K"
    line = f"{size:>9} {h:7.3f} {f:7.3f} {o:7.3f} {p if p is not None else float('nan'):8.3f} {h / f:9.2f} {h / o:9.2f}"
    if R: line += f" {1.5 * R:10.3f} {100 * h / (1.5 * R):5.0f}% {R:10.3f} {100 * f / R:5.0f}%"
    print(line)
PY
}

# train_run HOSTFILE NP [flags] — steady samples/s of one short training run (rank 0's metrics).
train_run() {
  local hosts="$1" np="$2"; shift 2
  timeout 600 "${mpi[@]}" -np "$np" --hostfile "$hosts" "$trainer" --data "$tmp/d.h5" --model "$model" --batch-size 64 \
    --epochs 1 --eval-every 0 --progress off --device cpu --metrics "$tmp/m.jsonl" "$@" >"$tmp/t.out" 2>&1 \
    || { cat "$tmp/t.out" >&2; return 1; }
  "$py" -c "import json; m=json.loads(open('$tmp/m.jsonl').read().splitlines()[-1]); print(round(m['steady_samples_per_s']))"
}

if [ "$train" = 1 ]; then
  "$data" synth --out "$tmp/d.h5" --train $((64 * 2 * steps)) --test 64 --features 784 --classes 10 --seed 5 >/dev/null
fi

IFS=, read -r -a rate_list <<<"$rates"
for rate in "${rate_list[@]}"; do
  set_rate "$rate"
  echo
  echo "## $rate ($(cut -d' ' -f1-3 /proc/loadavg) load at start)"
  rm -f "$tmp/peer.jsonl"
  bench_run hierarchical "$tmp/hier.json"
  bench_run mpi "$tmp/flat.json"
  [ "$peer" = 0 ] || peer_run "$tmp/peer.jsonl"
  table "$rate"
  if [ "$train" = 1 ]; then
    echo "# training $model, batch 64 per rank, $steps steps, steady samples/s (rank 0's metrics)"
    IFS=, read -r -a dtype_list <<<"$grad_dtypes"
    for g in "${dtype_list[@]}"; do
      a=$(train_run "$tmp/hosts2x1" 2 --grad-dtype "$g"); b=$(train_run "$tmp/hosts2x1" 2 --no-overlap --grad-dtype "$g")
      c=$(train_run "$tmp/hosts1x2" 2 --grad-dtype "$g"); d=$(train_run "$tmp/hosts1x2" 2 --no-overlap --grad-dtype "$g")
      printf '%-40s %10s\n' "2 hosts x 1 rank, overlap, $g" "$a" "2 hosts x 1 rank, --no-overlap, $g" "$b" \
        "1 host x 2 ranks, overlap, $g" "$c" "1 host x 2 ranks, --no-overlap, $g" "$d"
    done
  fi
done
set_rate off
echo
machine
