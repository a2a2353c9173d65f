#!/usr/bin/env bash
# bench_scaling.sh — Mirror's trainer at np 1 and np 2 (and, with --ceiling, two independent 1-rank trainers
# at once, one per core: what 2 ranks could reach with no communication at all), alternated and repeated, for one or more
# trainer binaries (e.g. the current build against an older one built in another worktree) or trainer
# flags. Prints every run and the medians: samples/s at np 1 and np 2, scaling np 2 / np 1 (of the
# medians, and per repeat).
#   scripts/bench_scaling.sh [--repeats 5] [--model mlp:512,256] [--batch 64] [--ceiling] [TRAINER ...]
# TRAINER is a binary, optionally with trainer flags in the same (quoted) argument, e.g.
#   scripts/bench_scaling.sh build/trainer/tools/trainer "build/trainer/tools/trainer --shard-optimizer off"
# and defaults to $BUILD_DIR/trainer/tools/trainer (BUILD_DIR default build). Data: data/fmnist.h5.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
repeats=5; model="mlp:512,256"; batch=64; ceiling=0; trainers=()
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --ceiling) ceiling=1; shift ;;
    -*) echo "bench_scaling.sh: unknown argument $1" >&2; exit 2 ;;
    *) trainers+=("$1"); shift ;;
  esac
done
for v in "$repeats" "$batch"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench_scaling.sh: --repeats and --batch take a positive integer, got '$v'" >&2; exit 2; }
done
build="${BUILD_DIR:-build}"
[ ${#trainers[@]} -gt 0 ] || trainers=("$root/$build/trainer/tools/trainer")
for t in "${trainers[@]}"; do
  read -ra words <<< "$t"
  [ -x "${words[0]}" ] || { echo "bench_scaling.sh: no trainer at ${words[0]}; build first (scripts/test.sh) or name one" >&2; exit 2; }
done
[ -f data/fmnist.h5 ] || "$root/$build/data/mirror-data" fashion-mnist --out data/fmnist.h5 >/dev/null
mpi=(mpirun)  # Open MPI's default binding (one core per rank at np <= 2), as bench_train.sh and users run it
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
args=(--data data/fmnist.h5 --model "$model" --batch-size "$batch" --epochs 1 --eval-every 0 --progress off)
rate() { python3 -c "import json,sys; print(round([json.loads(l) for l in open(sys.argv[1])][-1]['samples_per_s']))" "$1"; }

echo "# bench_scaling: model $model, batch $batch per rank, 1 epoch per run, $repeats repeats; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$repeats"); do
  for i in "${!trainers[@]}"; do
    read -ra t <<< "${trainers[$i]}"  # the binary and its extra flags
    for np in 1 2; do
      "${mpi[@]}" -np "$np" -x OPENBLAS_NUM_THREADS=1 "${t[@]}" "${args[@]}" --metrics "$tmp/m.jsonl" >/dev/null </dev/null
      echo "{\"repeat\": $rep, \"trainer\": $i, \"run\": \"np$np\", \"samples_per_s\": $(rate "$tmp/m.jsonl")}"
    done
    if [ "$ceiling" = 1 ] && [ "$i" = 0 ]; then
      # Each of the pair on its own core (as the 2 ranks are bound), independent of each other.
      for k in 0 1; do
        taskset -c "$k" "${mpi[@]}" --bind-to none -np 1 -x OPENBLAS_NUM_THREADS=1 "${t[@]}" "${args[@]}" \
          --metrics "$tmp/$k.jsonl" >/dev/null </dev/null &
      done
      wait
      echo "{\"repeat\": $rep, \"trainer\": $i, \"run\": \"pair\", \"samples_per_s\": $(( $(rate "$tmp/0.jsonl") + $(rate "$tmp/1.jsonl") ))}"
    fi
  done
done > "$tmp/runs.jsonl"
cat "$tmp/runs.jsonl"
python3 - "$tmp/runs.jsonl" "${trainers[@]}" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
names = sys.argv[2:]
print(f"\n{'trainer':>7} {'np1':>8} {'np2':>8} {'scaling':>8} {'pair':>8} {'pair/np1':>8}  per-repeat scaling   binary")
for i, name in enumerate(names):
    got = lambda run: [r["samples_per_s"] for r in runs if r["trainer"] == i and r["run"] == run]
    n1, n2, pair = got("np1"), got("np2"), got("pair")
    m1, m2 = st.median(n1), st.median(n2)
    p = f"{st.median(pair):>8.0f} {st.median(pair) / m1:>8.2f}" if pair else f"{'-':>8} {'-':>8}"
    per = " ".join(f"{b / a:.2f}" for a, b in zip(n1, n2))
    print(f"{i:>7} {m1:>8.0f} {m2:>8.0f} {m2 / m1:>8.2f} {p}  {per}   {name}")
PY
