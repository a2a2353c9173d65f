#!/usr/bin/env bash
# demo.sh — the whole job for a new user on a fresh machine: install what is missing, build, convert the real
# Fashion-MNIST to HDF5, train with mirrorrun on every local GPU (CPU ranks where there is none) with
# checkpoints, evaluate the last checkpoint, plot the metrics, and say where everything is.
#
#   scripts/demo.sh                         # 10 epochs of mlp:512,256, batch 64 per rank
#   scripts/demo.sh -np 2 --epochs 2        # -np and --out are the demo's; every other flag goes to trainer
#   scripts/demo.sh --out runs/big --model mlp:1024,512 --lr 0.1
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

np_args=()
out="runs/demo"
trainer_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -np|--np) np_args=(-np "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) trainer_args+=("$1"); shift ;;
  esac
done

echo "== 1/5 dependencies"
scripts/install-deps.sh dataset-fashion-mnist python3-matplotlib
echo "== 2/5 build"
build="${BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
# An existing build directory keeps its settings (tests, CUDA); only the programs the demo runs are built.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake "$build" >/dev/null
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target trainer mirror-data mirror-eval mirror-ckpt mirrorrun >/dev/null
bin="$build"
trainer="$bin/trainer/tools/trainer"
mirrorrun="$bin/launcher/mirrorrun"
mirror_data="$bin/data/mirror-data"
mirror_eval="$bin/trainer/tools/mirror-eval"

echo "== 3/5 data: Fashion-MNIST -> data/fmnist.h5"
mkdir -p data
if [ ! -f data/fmnist.h5 ]; then
  "$mirror_data" fashion-mnist --out data/fmnist.h5
else
  echo "data/fmnist.h5 is already there"
fi

echo "== 4/5 train (mirrorrun: one rank per GPU, or CPU ranks)"
rm -rf "$out"
mkdir -p "$out"
"$mirrorrun" "${np_args[@]}" -- "$trainer" --data data/fmnist.h5 --model mlp:512,256 --epochs 10 --batch-size 64 \
  --lr 0.05 --momentum 0.9 --decay cosine --warmup-steps 200 --checkpoint-dir "$out/ckpt" --metrics "$out/metrics.jsonl" "${trainer_args[@]}"

echo "== 5/5 evaluate the last checkpoint, plot"
"$mirror_eval" --checkpoint "$out/ckpt" --data data/fmnist.h5 --predict "$out/predictions.csv" | tee "$out/eval.txt"
/usr/bin/python3 scripts/plot_metrics.py "$out/metrics.jsonl" -o "$out/metrics.png" --title "Mirror: $(basename "$out")"

cat <<DONE

Done. Results:
  checkpoints   $out/ckpt/            (mirror-ckpt list $out/ckpt)
  metrics       $out/metrics.jsonl    (one JSON object per epoch)
  plot          $out/metrics.png
  evaluation    $out/eval.txt
  predictions   $out/predictions.csv
DONE
