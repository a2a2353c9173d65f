#!/usr/bin/env bash
# accuracy.sh — the Fashion-MNIST accuracy recipes of docs/benchmarks.md ("Fashion-MNIST accuracy"), at 2 CPU
# ranks: trains each model with its recipe and prints, per model, the test accuracy of every epoch, the best and
# the last, and the wall time. Not part of scripts/test.sh (minutes to an hour on 2 cores).
#   scripts/accuracy.sh [--data data/fmnist.h5] [--models keras-cnn,cnn-bn,resnet20] [--np 2] [--out DIR]
# Needs a build (BUILD_DIR, default build, relative to the repository or absolute) and the data set (mirror-data fashion-mnist --out data/fmnist.h5).
# Each run writes DIR/MODEL.jsonl (the trainer's --metrics) and DIR/MODEL.log (its output); DIR defaults to
# a new directory under /tmp.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
data="data/fmnist.h5"; models="keras-cnn cnn-bn resnet20"; np=2; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --data) data="$2"; shift 2 ;;
    --models) models="${2//,/ }"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "accuracy.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
trainer="$build/trainer/tools/trainer"
[ -x "$trainer" ] || { echo "accuracy.sh: no $trainer; build first (scripts/test.sh)" >&2; exit 2; }
[ -f "$data" ] || { echo "accuracy.sh: no data set $data; make it with: mirror-data fashion-mnist --out $data" >&2; exit 2; }
[[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "accuracy.sh: --np must be a positive integer, got '$np'" >&2; exit 2; }
[ -n "$out" ] || out="$(mktemp -d /tmp/mirror-accuracy.XXXXXX)"
mkdir -p "$out"

# The recipes (batch 64 per rank, so global 128 at 2 ranks; docs/benchmarks.md gives the accuracy they reached).
recipe() {
  case "$1" in
    keras-cnn) echo "--epochs 15 --optimizer adamw --lr 1e-3 --lr-milestones 10,13 --gamma 0.1 --random-crop 1 --hflip" ;;
    cnn-bn) echo "--epochs 50 --optimizer adamw --lr 1e-3 --decay cosine --weight-decay 0.05 --random-crop 1 --hflip" ;;
    resnet20) echo "--epochs 30 --optimizer sgd --lr 0.1 --momentum 0.9 --nesterov --weight-decay 5e-4 --warmup-steps 200 --decay cosine --random-crop 2 --hflip" ;;
    *) echo "accuracy.sh: no recipe for model '$1' (keras-cnn, cnn-bn, resnet20)" >&2; exit 2 ;;
  esac
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
extra=(); [ "$np" -gt "$(nproc)" ] && extra=(--oversubscribe)
for model in $models; do
  args="$(recipe "$model")"
  echo "== $model: mpirun -np $np trainer --data $data --model $model $args"
  start=$(date +%s)
  # shellcheck disable=SC2086  # the recipe is a list of options
  mpirun "${extra[@]}" -np "$np" "$trainer" --data "$data" --model "$model" $args --progress off \
    --metrics "$out/$model.jsonl" > "$out/$model.log" 2>&1 ||
    { echo "accuracy.sh: $model failed; its output is in $out/$model.log" >&2; exit 1; }
  wall=$(( $(date +%s) - start ))
  /usr/bin/python3 - "$out/$model.jsonl" "$wall" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
accs = [r["test_acc"] for r in rows if "test_acc" in r]
print("   test_acc per epoch: " + " ".join("%.4f" % a for a in accs))
best = max(range(len(accs)), key=lambda i: accs[i])
print("   best %.4f (epoch %d), last %.4f, wall %s s" % (accs[best], best + 1, accs[-1], sys.argv[2]))
EOF
done
echo "metrics and logs: $out"
