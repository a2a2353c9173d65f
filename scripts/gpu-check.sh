#!/usr/bin/env bash
# gpu-check.sh — what to run on a machine with a GPU: configures a CUDA build (-DMIRROR_WITH_CUDA=ON) in
# build-gpu, builds everything, runs the whole CTest suite there (the GPU tests run instead of skipping),
# then times allreduce over NCCL with mirror-bench, one rank per GPU. Prints a summary; exits non-zero if
# the build, any test or the benchmark's check failed, or if GPU tests skipped although a GPU is present.
# Needs only the repository and its dependencies (scripts/install-deps.sh, the CUDA toolkit with NCCL).
#   scripts/gpu-check.sh            # build dir: <repo>/build-gpu (override with BUILD_DIR=...)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-gpu}"
jobs="$(nproc 2>/dev/null || echo 2)"
log="$build/gpu-check"
status_build="not run"; status_tests="not run"; status_bench="not run"; rc=0

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
fi
echo "== gpu-check: $gpus GPU(s) visible (nvidia-smi -L), build dir $build"
[ "$gpus" -gt 0 ] 2>/dev/null || echo "   no GPU: the GPU tests will skip and the NCCL benchmark is not run"

mpiflags=(--oversubscribe)
[ "$(id -u)" = "0" ] && mpiflags+=(--allow-run-as-root)
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

mkdir -p "$build"
echo "== configure and build (MIRROR_WITH_CUDA=ON)"
if cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMIRROR_WITH_CUDA=ON >"$log.configure.log" 2>&1 &&
   cmake --build "$build" -j "$jobs" >"$log.build.log" 2>&1; then
  status_build="ok"
else
  status_build="FAILED (see $log.configure.log / $log.build.log)"
  tail -30 "$log.build.log" 2>/dev/null || tail -30 "$log.configure.log"
  rc=1
fi

if [ "$status_build" = "ok" ]; then
  echo "== ctest (whole suite)"
  (cd "$build" && ctest --output-on-failure 2>&1) | tee "$log.ctest.log"
  test_rc=${PIPESTATUS[0]}
  summary_line="$(grep -E 'tests passed|tests failed' "$log.ctest.log" | tail -1)"
  skipped="$(grep -c '(Skipped)' "$log.ctest.log" || true)"
  if [ "$test_rc" -eq 0 ]; then status_tests="ok: $summary_line; $skipped skipped"; else status_tests="FAILED: $summary_line"; rc=1; fi
  if [ "$gpus" -gt 0 ] 2>/dev/null && [ "$skipped" -gt 0 ]; then
    status_tests="$status_tests — but a GPU is present, so nothing should skip:"
    status_tests="$status_tests $(grep '(Skipped)' "$log.ctest.log" | awk '{print $3}' | tr '\n' ' ')"
    rc=1
  fi

  if [ "$gpus" -gt 0 ] 2>/dev/null; then
    echo "== mirror-bench allreduce --backend nccl, $gpus rank(s)"
    if mpirun -np "$gpus" "${mpiflags[@]}" "$build/collectives/mirror-bench" allreduce --backend nccl \
         -b 1K -e 256M -f 4 -c 1 --json "$log.bench.json" 2>&1 | tee "$log.bench.log"; then
      status_bench="ok ($(grep 'Avg bus bandwidth' "$log.bench.log" | sed 's/^# *//'))"
    else
      status_bench="FAILED (see $log.bench.log)"
      rc=1
    fi
  else
    status_bench="skipped (no GPU)"
  fi

  status_train="skipped (no GPU)"
  if [ "$gpus" -gt 0 ] 2>/dev/null; then
    echo "== training throughput on 1 GPU: Mirror (cuBLAS) against PyTorch, same MLP, batch 256, 2 epochs"
    data="$build/fmnist.h5"
    [ -f "$data" ] || "$build/data/mirror-data" fashion-mnist --out "$data" >/dev/null
    status_train=""
    for hidden in 512,256 2048,2048; do
      m="$(mpirun -np 1 "${mpiflags[@]}" "$build/trainer/tools/trainer" --data "$data" --device cuda \
             --model "mlp:$hidden" --batch-size 256 --epochs 2 --eval-every 0 --progress off \
             --metrics "$log.train.jsonl" >/dev/null 2>"$log.train.err" &&
           python3 -c "import json; print(round(json.loads(open('$log.train.jsonl').read().splitlines()[-1])['samples_per_s']))")" \
        || { m="FAILED"; rc=1; }
      t="$(python3 "$root/scripts/torch_mlp_gpu.py" --hidden "$hidden" --batch 256 --epochs 2 2>/dev/null |
           python3 -c "import json,sys; print(round(json.loads(sys.stdin.read())['samples_per_s']))" 2>/dev/null || echo "n/a")"
      echo "   mlp:$hidden  mirror $m samples/s   pytorch $t samples/s"
      status_train="$status_train mlp:$hidden mirror $m / torch $t;"
    done
  fi
fi

echo
echo "== gpu-check summary"
echo "   GPUs:      $gpus"
echo "   build:     $status_build"
echo "   tests:     $status_tests"
echo "   nccl bench: $status_bench"
echo "   training:  ${status_train:-not run}"
echo "   result:    $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
