#!/usr/bin/env bash
# bench_train.sh — end-to-end training throughput: Mirror's trainer against PyTorch DDP (gloo, CPU) on the same
# model, per-rank batch, data (Fashion-MNIST), thread count (1 per rank) and rank counts, alternated in one run and
# repeated; prints medians, the ratio Mirror/PyTorch and each one's scaling from 1 to 2 ranks.
#   scripts/bench_train.sh [--model mlp:512,256] [--batch 64] [--epochs 1] [--repeats 3] [--np "1 2"]
# Needs a build (BUILD_DIR, default build) and python3-torch (apt-get install python3-torch) for the peer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
model="mlp:512,256"; batch=64; epochs=1; repeats=3; nps="1 2"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --np) nps="$2"; shift 2 ;;
    *) echo "bench_train.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build}"
trainer="$root/$build/trainer/tools/trainer"
[ -x "$trainer" ] || { echo "bench_train.sh: no $trainer; build first (scripts/test.sh)" >&2; exit 2; }
peer="$root/../shared/peers/torch_ddp_fmnist.py"
[ -f "$peer" ] || peer="/work/shared/peers/torch_ddp_fmnist.py"
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "bench_train.sh: apt-get install python3-torch" >&2; exit 2; }
[ -f data/fmnist.h5 ] || "$root/$build/data/mirror-data" fashion-mnist --out data/fmnist.h5 >/dev/null
mpi=(mpirun)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
hidden="${model#mlp:}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

mirror_run() {  # np -> samples/s (mean over the epochs' train loops)
  "${mpi[@]}" -np "$1" -x OPENBLAS_NUM_THREADS=1 "$trainer" --data data/fmnist.h5 --model "$model" \
    --batch-size "$batch" --epochs "$epochs" --eval-every 0 --progress off --metrics "$tmp/m.jsonl" >/dev/null
  python3 -c "import json,sys; r=[json.loads(l)['samples_per_s'] for l in open('$tmp/m.jsonl')]; print(sum(r)/len(r))"
}
torch_run() {
  "${mpi[@]}" -np "$1" /usr/bin/python3 "$peer" --epochs "$epochs" --batch "$batch" --hidden "$hidden" --threads 1 \
    2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['samples_per_s'])"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

echo "# bench_train: model $model, batch $batch per rank, $epochs epoch(s) per run, $repeats repeats, alternated"
declare -A M T
for rep in $(seq 1 "$repeats"); do
  for np in $nps; do
    m="$(mirror_run "$np")"; t="$(torch_run "$np")"
    M[$np]="${M[$np]:-} $m"; T[$np]="${T[$np]:-} $t"
    printf '{"repeat": %d, "np": %d, "mirror_samples_per_s": %.0f, "torch_samples_per_s": %.0f}\n' "$rep" "$np" "$m" "$t"
  done
done
printf '\n%4s %16s %16s %10s\n' np mirror_median torch_median ratio
for np in $nps; do
  mm="$(median ${M[$np]})"; tm="$(median ${T[$np]})"
  printf '%4d %16.0f %16.0f %10.2f\n' "$np" "$mm" "$tm" "$(python3 -c "print($mm/$tm)")"
done
set -- $nps
if [ $# -ge 2 ]; then
  first="$1"; last="${!#}"
  printf '\nscaling np %s -> %s: mirror %.2fx, torch %.2fx\n' "$first" "$last" \
    "$(python3 -c "print($(median ${M[$last]})/$(median ${M[$first]}))")" \
    "$(python3 -c "print($(median ${T[$last]})/$(median ${T[$first]}))")"
fi
