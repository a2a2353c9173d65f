#!/usr/bin/env bash
# gpu-check.sh — what to run on a machine with a GPU. Two modes:
#   bundle (when gpu-bundle/ is there, made by scripts/gpu-bundle.sh on the build machine and carried over):
#     runs the bundled GPU tests (every op and layer on CUDA against the CPU) against that machine's
#     cuBLAS and cuDNN (its CUDA toolkit or its Python's nvidia-* wheels). Needs no compiler, MPI or HDF5,
#     which a GPU machine's image may lack.
#   full (otherwise, or --full): configures a CUDA build (-DMIRROR_WITH_CUDA=ON) in build-gpu, builds it,
#     runs the GPU-labelled CTest entries (NCCL at 2-4 ranks only with a GPU per rank, or with
#     NCCL_MULTI_RANK_GPU_ENABLE=1 set for NCCL 2.30's experimental ranks sharing a GPU), times allreduce
#     over NCCL with mirror-bench, an MLP's training against PyTorch, and gpt-mini's and gpt2-small's tokens/s in fp32
#     and bf16. --cpu-suite adds the rest of the
#     suite with the GPU hidden (CUDA_VISIBLE_DEVICES=), as CI runs it.
# First it prints what the machine has (GPU, driver, CUDA, cuDNN/NCCL wheels, mpirun). Prints a summary;
# exits non-zero if anything failed, or if a GPU test skipped although a GPU is present.
#   scripts/gpu-check.sh [--bundle DIR | --full] [--cpu-suite]     logs: LOG_DIR (default $OUT or /tmp)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/gpu-bundle"
mode=""
cpu_suite=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$2"; mode=bundle; shift 2 ;;
    --full) mode=full; shift ;;
    --cpu-suite) cpu_suite=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (expected --bundle DIR, --full, --cpu-suite)" >&2; exit 2 ;;
  esac
done
[ -n "$mode" ] || { [ -d "$bundle/bin" ] && mode=bundle || mode=full; }
logs="${LOG_DIR:-${OUT:-/tmp}/gpu-check-logs}"
mkdir -p "$logs"
rc=0

echo "== gpu-check ($mode mode), logs in $logs"
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/   gpu: /'
fi
echo "   $gpus GPU(s) (nvidia-smi -L)"
echo "   nvcc: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo none)"
echo "   mpirun: $(command -v mpirun || echo none)"
# The Python that has the nvidia-* wheels (PyTorch's): where cuBLAS, cuDNN and NCCL libraries may be.
wheel_libs="$(python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    for base in nvidia.__path__:
        for lib in sorted(glob.glob(os.path.join(base, "*", "lib"))):
            print(lib)
except Exception:
    pass
PY
)"
python3 - <<'PY' 2>/dev/null | sed 's/^/   /'
import importlib.metadata as m
for name in ("torch", "nvidia-cudnn-cu13", "nvidia-nccl-cu13", "nvidia-cublas"):
    try:
        print(f"{name} {m.version(name)}")
    except Exception:
        pass
PY

# Runs one GoogleTest binary; appends "name: passed P, failed F, skipped S" to $results; sets rc on failure.
results=""
run_gtest() {
  local name="$1"; shift
  local log="$logs/$name.log" trc
  timeout 300 "$@" >"$log" 2>&1
  trc=$?
  local passed failed skipped
  passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?.*/\1/p' "$log" | tail -1)"
  failed="$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below.*/\1/p' "$log" | tail -1)"
  skipped="$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?, listed below.*/\1/p' "$log" | tail -1)"
  local line="$name: exit $trc, passed ${passed:-0}, failed ${failed:-0}, skipped ${skipped:-0}"
  if [ "$trc" -ne 0 ]; then
    rc=1
    line="$line  FAILED"
    grep -E '^\[  FAILED  \] [A-Za-z]|Failure|error:' "$log" | head -20 | sed 's/^/      /'
    [ "$trc" -ge 124 ] && tail -15 "$log" | sed 's/^/      /'
  elif [ "$gpus" -gt 0 ] && [ "${skipped:-0}" -gt 0 ]; then
    rc=1
    line="$line  (a GPU is present: nothing should skip)"
    grep '^\[  SKIPPED \] [A-Za-z]' "$log" | head -10 | sed 's/^/      /'
  fi
  echo "   $line"
  results="$results$line"$'\n'
}

if [ "$mode" = bundle ]; then
  echo "== bundle $bundle"
  sed 's/^/   /' "$bundle/MANIFEST" 2>/dev/null
  libpath="$bundle/lib"
  for d in $wheel_libs /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && libpath="$libpath:$d"
  done
  export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  missing=0
  for bin in "$bundle"/bin/*; do
    if ldd "$bin" | grep -q 'not found'; then
      echo "   $(basename "$bin") cannot load: $(ldd "$bin" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
      missing=1
    fi
  done
  [ "$missing" -eq 0 ] || { echo "   LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; rc=1; }
  echo "   libraries: $(ldd "$bundle/bin/test_nn_cuda" | grep -E 'cublas|cudnn|cudart' | awk '{print $3}' | tr '\n' ' ')"
  echo "== GPU tests (each op, layer and model step on CUDA against the CPU)"
  for bin in "$bundle"/bin/*; do
    run_gtest "$(basename "$bin")" "$bin"
  done
else
  build="${BUILD_DIR:-$root/build-gpu}"
  jobs="$(nproc 2>/dev/null || echo 2)"
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  mkdir -p "$build"
  echo "== configure and build in $build (MIRROR_WITH_CUDA=ON)"
  if cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMIRROR_WITH_CUDA=ON \
       >"$logs/configure.log" 2>&1 && cmake --build "$build" -j "$jobs" >"$logs/build.log" 2>&1; then
    echo "   build ok"
  else
    echo "   build FAILED (the image may lack MPI, HDF5 or oneDNN: then carry scripts/gpu-bundle.sh's bundle)"
    tail -25 "$logs/build.log" 2>/dev/null || tail -25 "$logs/configure.log"
    rc=1
  fi
  if [ "$rc" -eq 0 ]; then
    # NCCL at 2-4 ranks needs a GPU per rank, or NCCL 2.30's experimental sharing asked for by the caller.
    exclude=()
    if [ "$gpus" -lt 2 ] && [ "${NCCL_MULTI_RANK_GPU_ENABLE:-0}" != 1 ]; then
      exclude=(-E 'test_nccl_collectives\.np[234]')
      echo "   (NCCL at 2-4 ranks left out: $gpus GPU(s); set NCCL_MULTI_RANK_GPU_ENABLE=1 with NCCL >= 2.30 to run them)"
    fi
    echo "== ctest -L GPU"
    (cd "$build" && ctest -L GPU "${exclude[@]}" --output-on-failure 2>&1) >"$logs/ctest-gpu.log"
    gpu_rc=$?
    grep -E 'Test +#|tests passed|tests failed' "$logs/ctest-gpu.log" | sed 's/^/   /'
    [ "$gpu_rc" -eq 0 ] || rc=1
    if [ "$gpus" -gt 0 ] && grep -q '(Skipped)\|\*\*\*Skipped' "$logs/ctest-gpu.log"; then
      echo "   a GPU is present, but GPU tests skipped"; rc=1
    fi
    run_gtest test_nn_finite "$build/tests/nn/test_nn_finite"
    if [ "$cpu_suite" -eq 1 ]; then
      echo "== ctest -LE GPU, the GPU hidden"
      (cd "$build" && CUDA_VISIBLE_DEVICES= ctest -LE GPU -j "$jobs" --output-on-failure 2>&1) >"$logs/ctest-cpu.log" || rc=1
      grep -E 'tests passed|tests failed' "$logs/ctest-cpu.log" | sed 's/^/   /'
    fi
    if [ "$gpus" -gt 0 ] && command -v mpirun >/dev/null 2>&1; then
      mpiflags=(--oversubscribe)
      [ "$(id -u)" = "0" ] && mpiflags+=(--allow-run-as-root)
      echo "== mirror-bench allreduce --backend nccl, 1 rank per GPU"
      np=$([ "$gpus" -gt 1 ] && echo "$gpus" || echo 1)
      if mpirun -np "$np" "${mpiflags[@]}" "$build/collectives/mirror-bench" allreduce --backend nccl \
           -b 1K -e 256M -f 4 -c 1 >"$logs/bench.log" 2>&1; then
        grep -E 'Avg bus bandwidth|^ *[0-9]+ ' "$logs/bench.log" | tail -12 | sed 's/^/   /'
      else
        echo "   mirror-bench FAILED"; tail -10 "$logs/bench.log"; rc=1
      fi
      echo "== training throughput on 1 GPU: Mirror (cuBLAS) against PyTorch, same MLP, batch 256, 2 epochs"
      data="$build/fmnist.h5"
      [ -f "$data" ] || "$build/data/mirror-data" fashion-mnist --out "$data" >/dev/null
      for hidden in 512,256 2048,2048; do
        m="$(mpirun -np 1 "${mpiflags[@]}" "$build/trainer/tools/trainer" --data "$data" --device cuda \
               --model "mlp:$hidden" --batch-size 256 --epochs 2 --eval-every 0 --progress off \
               --metrics "$logs/train.jsonl" >/dev/null 2>"$logs/train.err" &&
             python3 -c "import json; print(round(json.loads(open('$logs/train.jsonl').read().splitlines()[-1])['samples_per_s']))")" \
          || { m="FAILED"; rc=1; }
        t="$(python3 "$root/scripts/torch_mlp_gpu.py" --hidden "$hidden" --batch 256 --epochs 2 2>/dev/null |
             python3 -c "import json,sys; print(round(json.loads(sys.stdin.read())['samples_per_s']))" 2>/dev/null || echo "n/a")"
        echo "   mlp:$hidden  mirror $m samples/s   pytorch $t samples/s"
      done
      echo "== language models on 1 GPU: tokens/s (30 steps, the first 20 left out) and achieved TFLOP/s, fp32 and bf16"
      cat "$root"/docs/*.md "$root"/README.md >"$logs/lm.txt"
      "$build/data/mirror-data" text --out "$build/lm-text.h5" "$logs/lm.txt" >/dev/null 2>&1 || rc=1
      for spec in gpt-mini:8 gpt2-small:4; do
        for precision in fp32 bf16; do
          model="${spec%%:*}"; batch="${spec##*:}"
          if mpirun -np 1 "${mpiflags[@]}" "$build/trainer/tools/trainer" --data "$build/lm-text.h5" --device cuda \
               --model "$model" --batch-size "$batch" --train-steps 30 --precision "$precision" --optimizer adamw \
               --eval-every 0 --progress off --metrics "$logs/lm.jsonl" --checkpoint-dir "$logs/ck-$model-$precision" \
               >"$logs/lm-$model-$precision.log" 2>&1; then
            # (6 x parameters + 6 x layers x context x channels) FLOP per token, as scripts/bench_lm.sh counts them.
            python3 - "$logs/lm.jsonl" "$model" "$precision" "$build/trainer/tools/trainer" <<'PY' | sed 's/^/   /'
import json, subprocess, sys
path, model, precision, trainer = sys.argv[1:]
tps = json.loads(open(path).read().splitlines()[-1])["tokens_per_s"]
m = json.loads(subprocess.run([trainer, "--print-model", model], capture_output=True, text=True).stdout)["layers"]
C, T = m[0]["channels"], m[1]["context"]
V = 256 if m[0]["vocab"] == "classes" else m[0]["vocab"]
L = sum(1 for l in m if l["type"] == "causal_self_attention")
flop = 6 * (V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C) + 6 * L * T * C
print(f"{model} {precision}: {tps:,.0f} tokens/s, {tps * flop / 1e12:.1f} TFLOP/s")
PY
          else
            echo "   $model $precision FAILED"; tail -5 "$logs/lm-$model-$precision.log" | sed 's/^/      /'; rc=1
          fi
        done
      done
      echo "== mirror-generate --device cuda (gpt-mini's checkpoint, key/value cache on the GPU), 200 tokens, greedy"
      start=$(date +%s.%N)
      if "$build/trainer/tools/mirror-generate" --checkpoint "$logs/ck-gpt-mini-fp32" --prompt "The " --device cuda \
           --max-new-tokens 200 --temperature 0 >"$logs/generate.out" 2>"$logs/generate.err"; then
        echo "   ok in $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s: $(head -c 80 "$logs/generate.out" | tr '\n' ' ')"
      else
        echo "   mirror-generate FAILED: $(tail -3 "$logs/generate.err")"; rc=1
      fi
    fi
  fi
fi

echo
echo "== gpu-check summary ($mode mode, $gpus GPU(s))"
printf '%s' "$results" | sed 's/^/   /'
echo "   result: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
