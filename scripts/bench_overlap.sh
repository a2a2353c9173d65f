#!/usr/bin/env bash
# bench_overlap.sh — what overlapping the gradient all-reduce with backward gains: the trainer on a
# communication-heavy model (default mlp:2048,2048, 23 MB of gradients) with overlap (buckets start during
# backward) and --no-overlap (all after backward), alternated, repeated. From the metrics: step time, and the
# communication wait per step after backward; fraction hidden = 1 - wait(overlap) / wait(no overlap). With
# the sharded optimizer step (the default for CPU models) the gradients are reduce-scattered, and the
# parameter all-gather after the update (gather_ms) is never overlapped: printed apart, not in the fraction.
#   scripts/bench_overlap.sh [--np 2] [--model mlp:2048,2048] [--bucket-mb 4] [--repeats 3]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
np=2; model="mlp:2048,2048"; bucket=4; repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --bucket-mb) bucket="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    *) echo "bench_overlap.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build}"
trainer="$root/$build/trainer/tools/trainer"
[ -x "$trainer" ] || { echo "bench_overlap.sh: build first (scripts/test.sh)" >&2; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$root/$build/data/mirror-data" synth --out "$tmp/d.h5" --train $((64 * np * 100)) --test 100 --features 784 \
  --classes 10 >/dev/null
mpi=(mpirun -np "$np"); [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
run() {  # extra flags -> "step_s comm_wait_s gather_s"
  "${mpi[@]}" "$trainer" --data "$tmp/d.h5" --model "$model" --batch-size 64 --epochs 1 --eval-every 0 \
    --progress off --bucket-mb "$bucket" --metrics "$tmp/m.jsonl" "$@" >/dev/null
  python3 -c "import json; m=json.loads(open('$tmp/m.jsonl').read().splitlines()[-1]); print(m['step_s'], m['comm_wait_s'], m['gather_s'])"
}
echo "# bench_overlap: $np ranks, $model, batch 64 per rank, buckets of $bucket MB, 100 steps per run"
printf '%-8s %-12s %12s %16s %12s\n' repeat mode step_ms comm_wait_ms gather_ms
S_on=(); W_on=(); S_off=(); W_off=(); G=()
ms() { python3 -c "print($1*1e3)"; }
for rep in $(seq 1 "$repeats"); do
  read -r s w g < <(run); S_on+=("$s"); W_on+=("$w"); G+=("$g")
  printf '%-8s %-12s %12.2f %16.2f %12.2f\n' "$rep" overlap "$(ms "$s")" "$(ms "$w")" "$(ms "$g")"
  read -r s w g < <(run --no-overlap); S_off+=("$s"); W_off+=("$w"); G+=("$g")
  printf '%-8s %-12s %12.2f %16.2f %12.2f\n' "$rep" no-overlap "$(ms "$s")" "$(ms "$w")" "$(ms "$g")"
done
python3 - "${S_on[*]}" "${W_on[*]}" "${S_off[*]}" "${W_off[*]}" "${G[*]}" <<'PY'
import statistics as st, sys
s_on, w_on, s_off, w_off, g = (st.median(float(x) for x in a.split()) for a in sys.argv[1:6])
print(f"\nmedian step: overlap {s_on*1e3:.2f} ms, no overlap {s_off*1e3:.2f} ms ({s_off/s_on:.2f}x)")
print(f"communication after backward: overlap {w_on*1e3:.2f} ms, no overlap {w_off*1e3:.2f} ms")
print(f"parameter all-gather after the update (sharded step, not overlapped): {g*1e3:.2f} ms")
print(f"fraction of communication hidden: {max(0.0, 1 - w_on / w_off):.2f}" if w_off > 0 else "no communication measured")
PY
