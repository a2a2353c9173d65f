#!/usr/bin/env bash
# gpu-bundle.sh — packs the GPU tests built here (a CUDA build: the toolkit compiles without a GPU) with the
# libraries they need that a GPU machine's image may lack (oneDNN, libgomp, the OpenCL loader, the CUDA
# runtime they were linked with), into one folder to carry there; scripts/gpu-check.sh finds it and runs
# them. cuBLAS and cuDNN (hundreds of MB) are not packed: they come from that machine (its CUDA toolkit
# or its Python's nvidia-* wheels).
#   scripts/gpu-bundle.sh                 # build dir: build (BUILD_DIR=...), bundle: gpu-bundle (OUT=...)
# Exits non-zero if the build has no CUDA, a target fails to build, or the bundle exceeds LIMIT_MB (60).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${OUT:-$root/gpu-bundle}"
limit_mb="${LIMIT_MB:-60}"
targets=(test_nn_cuda test_nn_cnn_cuda test_nn_lm_cuda test_nn_finite)

[ -f "$build/CMakeCache.txt" ] || { echo "gpu-bundle: no build in $build (run scripts/test.sh first)" >&2; exit 2; }
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
binaries=()
for t in "${targets[@]}"; do
  bin="$(find "$build/tests" -name "$t" -type f | head -1)"
  if [ -z "$bin" ] || ! ldd "$bin" | grep -q 'libcudart'; then
    echo "gpu-bundle: $t does not link the CUDA runtime: $build was configured without CUDA" >&2; exit 2
  fi
  binaries+=("$bin")
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "${binaries[@]}" "$out/bin/"
# The libraries to carry: what the binaries load, except glibc's own, the C++ runtime (the other machine's
# is as new or newer) and the CUDA math libraries, which are taken from there.
carry_pattern='libdnnl|libgomp|libOpenCL|libcudart'
for t in "${targets[@]}"; do
  ldd "$out/bin/$t" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -E "$carry_pattern" | while read -r lib; do
  cp -L "$lib" "$out/lib/"
done
{
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo '+changes')"
  echo "on $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  echo "CUDA $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo '?')"
  for t in "${targets[@]}"; do echo "needs ($t): $(ldd "$out/bin/$t" | awk '{print $1}' | grep -E 'cublas|cudnn|cudart' | tr '\n' ' ')"; done
} >"$out/MANIFEST"
mb=$(du -sm "$out" | awk '{print $1}')
cat "$out/MANIFEST"
echo "gpu-bundle: $out, $mb MB: $(ls "$out/bin" | tr '\n' ' ')+ $(ls "$out/lib" | tr '\n' ' ')"
[ "$mb" -le "$limit_mb" ] || { echo "gpu-bundle: $mb MB is more than the $limit_mb MB that can be carried" >&2; exit 1; }
