#!/usr/bin/env bash
# bench_interchange.sh — the figures of checkpoint interchange (docs/benchmarks.md, "Interchange"):
#  1. `mirror-ckpt export` and `import` of a gpt2-small checkpoint (124M parameters, with its AdamW state) in both
#     formats, safetensors and hf-gpt2: wall time and peak resident memory from /usr/bin/time -v. The checkpoint
#     is one training step on generated GPT-2 token shards (mirror-data import of llm.c's format).
#  2. Fine-tuning: gpt-nano trained on Shakespeare's plays, exported as hf-gpt2 and imported back (a GPT-2-shaped
#     model read from Hugging Face's layout), then trained with --init-from on another English text (the licence
#     texts of /usr/share/common-licenses); mirror-eval's test loss on that text before and after, beside the same
#     steps from a fresh initialisation.
#   scripts/bench_interchange.sh [--pretrain-steps 1000] [--finetune-steps 300] [--skip-gpt2-small]
# Needs a build (BUILD_DIR, default build), Debian's python3-numpy, and the plays (scripts/fetch-shakespeare.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
pretrain=1000; finetune=300; gpt2_small=1
while [ $# -gt 0 ]; do
  case "$1" in
    --pretrain-steps) pretrain="$2"; shift 2 ;;
    --finetune-steps) finetune="$2"; shift 2 ;;
    --skip-gpt2-small) gpt2_small=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_interchange.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
build="$root/${BUILD_DIR:-build}"
trainer="$build/trainer/tools/trainer"; ckpt="$build/trainer/tools/mirror-ckpt"
evaluate="$build/trainer/tools/mirror-eval"; mirror_data="$build/data/mirror-data"
for p in "$trainer" "$ckpt" "$evaluate" "$mirror_data"; do
  [ -x "$p" ] || { echo "bench_interchange.sh: no $p; build first" >&2; exit 2; }
done
source scripts/machine.sh
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs, $(cpu_caches)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

# timed LABEL CMD...: runs CMD under /usr/bin/time -v; prints "LABEL  wall S s  peak RSS M MiB".
timed() {
  local label="$1"; shift
  /usr/bin/time -v "$@" >"$tmp/out.log" 2>"$tmp/time.log" || { cat "$tmp/out.log" "$tmp/time.log" >&2; exit 1; }
  local wall rss
  wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.log" \
          | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }')"
  rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.log")"
  printf '%-40s wall %8s s   peak RSS %6d MiB\n' "$label" "$wall" "$((rss / 1024))"
}

if [ "$gpt2_small" = 1 ]; then
  echo "== gpt2-small export and import =="
  /usr/bin/python3 - "$tmp/shards" <<'PY'
import os, sys
import numpy as np
out = sys.argv[1]
os.makedirs(out)
rng = np.random.default_rng(1)
for name, n in [("gen_train_000000.bin", 200000), ("gen_val_000000.bin", 20000)]:
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, n]
    with open(os.path.join(out, name), "wb") as f:
        f.write(header.tobytes())
        f.write(rng.integers(0, 50257, n).astype(np.uint16).tobytes())
PY
  "$mirror_data" import "$tmp/shards" --out "$tmp/gpt2.h5" >/dev/null
  mpirun -np 1 "$trainer" --data "$tmp/gpt2.h5" --model gpt2-small --context 64 --batch-size 1 --max-steps 1 \
    --optimizer adamw --eval-every 0 --progress off --checkpoint-dir "$tmp/ck" >"$tmp/train.log" 2>&1 \
    || { cat "$tmp/train.log" >&2; exit 1; }
  ck_file="$(ls "$tmp"/ck/ckpt-*.h5 | tail -1)"
  echo "checkpoint: $(du -m "$ck_file" | cut -f1) MiB (parameters, AdamW moments)"
  timed "export --format safetensors" "$ckpt" export "$ck_file" --format safetensors --out "$tmp/st"
  echo "  model.safetensors: $(du -m "$tmp/st/model.safetensors" | cut -f1) MiB"
  timed "import --format safetensors" "$ckpt" import "$tmp/st" --format safetensors --out "$tmp/st.h5"
  timed "export --format hf-gpt2" "$ckpt" export "$ck_file" --format hf-gpt2 --out "$tmp/hf"
  timed "import --format hf-gpt2" "$ckpt" import "$tmp/hf" --format hf-gpt2 --out "$tmp/hf.h5"
  "$ckpt" diff "$ck_file" "$tmp/hf.h5" --tol 0 >/dev/null && echo "round trip: exact (mirror-ckpt diff --tol 0)"
  rm -rf "$tmp/ck" "$tmp/st" "$tmp/hf" "$tmp"/*.h5
fi

echo "== fine-tuning an imported GPT-2-shaped model =="
[ -f data/shakespeare.h5 ] || bash scripts/fetch-shakespeare.sh >/dev/null
find /usr/share/common-licenses -maxdepth 1 -type f | sort >"$tmp/licences.txt"
mapfile -t licences <"$tmp/licences.txt"
"$mirror_data" text --out "$tmp/licences.h5" "${licences[@]}" >/dev/null
recipe=(--batch-size 12 --optimizer adamw --beta1 0.9 --beta2 0.99 --weight-decay 0.1 --grad-clip 1.0
        --decay cosine --eval-every 0 --progress off --seed 0)
mpirun -np 1 "$trainer" --data data/shakespeare.h5 --model gpt-nano --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 \
  --train-steps "$pretrain" "${recipe[@]}" --checkpoint-dir "$tmp/pre" >"$tmp/pre.log" 2>&1 \
  || { cat "$tmp/pre.log" >&2; exit 1; }
"$ckpt" export "$tmp/pre" --format hf-gpt2 --out "$tmp/hf-nano" >/dev/null
"$ckpt" import "$tmp/hf-nano" --format hf-gpt2 --out "$tmp/imported.h5" >/dev/null
loss() { "$evaluate" --checkpoint "$1" --data "$2" 2>/dev/null | sed -n 's/^loss \([0-9.]*\).*/\1/p'; }
tune=(--data "$tmp/licences.h5" --lr 3e-4 --min-lr 3e-5 --warmup-steps 20 --train-steps "$finetune" "${recipe[@]}")
mpirun -np 1 "$trainer" "${tune[@]}" --init-from "$tmp/imported.h5" --checkpoint-dir "$tmp/tuned" >"$tmp/tuned.log" 2>&1 \
  || { cat "$tmp/tuned.log" >&2; exit 1; }
mpirun -np 1 "$trainer" "${tune[@]}" --model gpt-nano --checkpoint-dir "$tmp/scratch" >"$tmp/scratch.log" 2>&1 \
  || { cat "$tmp/scratch.log" >&2; exit 1; }
echo "pretrained: gpt-nano, $pretrain steps on Shakespeare's plays (test loss there $(loss "$tmp/imported.h5" data/shakespeare.h5))"
echo "fine-tuning text: ${#licences[@]} licence files of /usr/share/common-licenses, $finetune steps, lr 3e-4"
echo "test loss on the licences: imported, before fine-tuning  $(loss "$tmp/imported.h5" "$tmp/licences.h5")"
echo "                           after --init-from fine-tuning $(loss "$tmp/tuned" "$tmp/licences.h5")"
echo "                           the same steps from scratch   $(loss "$tmp/scratch" "$tmp/licences.h5")"
