#!/usr/bin/env bash
# fuzz.sh — builds the libFuzzer targets (tests/fuzz) with clang under AddressSanitizer + UBSan and runs each
# for a bounded time on seed corpora made from real files: a small synthetic dataset and a tiny uint8
# dataset converted from IDX files, small IDX files (plain and gzipped), and checkpoints from a short trainer
# run (SGD and AdamW).
# Usage: scripts/fuzz.sh [fuzzer...]     (default: fuzz_dataset fuzz_idx fuzz_checkpoint fuzz_import)
#   FUZZ_SECONDS (default 60) per fuzzer; BUILD_DIR (default build-fuzz); JOBS (default 2) for the build.
# The corpus grows in BUILD_DIR/corpus/<fuzzer>; crashing inputs are kept in BUILD_DIR/crashes/<fuzzer>/.
# Exits non-zero when a fuzzer finds a crash (or the build fails).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${JOBS:-2}"
fuzzers=("$@")
[ ${#fuzzers[@]} -eq 0 ] && fuzzers=(fuzz_dataset fuzz_idx fuzz_checkpoint fuzz_import)

# clang and its runtime libraries (libFuzzer, ASan, UBSan) are needed here only.
scripts/install-deps.sh clang libclang-rt-dev

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMIRROR_WITH_CUDA=OFF -DMIRROR_BUILD_TESTS=OFF -DMIRROR_BUILD_FUZZERS=ON \
  "-DMIRROR_SANITIZE=address;undefined;fuzzer-no-link" >/dev/null
cmake --build "$build_dir" -j "$jobs" --target "${fuzzers[@]}" mirror-data trainer

b="$(cd "$build_dir" && pwd)"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"

# ---- seed corpora (made once per build directory) ------------------------------------------------
seeds="$b/seeds"
if [ ! -f "$seeds/.done" ]; then
  rm -rf "$seeds"
  mkdir -p "$seeds/dataset" "$seeds/idx" "$seeds/checkpoint" "$seeds/work/fm"
  w="$seeds/work"
  # Tiny IDX files in the Fashion-MNIST layout (28x28 images, labels), plain and gzipped, plus a 2x4x4 one.
  python3 - "$w/fm" "$seeds/idx" <<'PY'
import gzip, struct, sys, random, os
fm, idx = sys.argv[1], sys.argv[2]
random.seed(1)
def images(n, r=28, c=28):
    return struct.pack(">BBBBIII", 0, 0, 8, 3, n, r, c) + bytes(random.randrange(256) for _ in range(n * r * c))
def labels(n):
    return struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes(random.randrange(10) for _ in range(n))
files = {"train-images-idx3-ubyte": images(6), "train-labels-idx1-ubyte": labels(6),
         "t10k-images-idx3-ubyte": images(3), "t10k-labels-idx1-ubyte": labels(3)}
for name, data in files.items():
    with gzip.open(os.path.join(fm, name + ".gz"), "wb") as f: f.write(data)
    with gzip.open(os.path.join(idx, name + ".gz"), "wb") as f: f.write(data)
    open(os.path.join(idx, name), "wb").write(data)
small = images(2, 4, 4)
open(os.path.join(idx, "small-images"), "wb").write(small)
with gzip.open(os.path.join(idx, "small-images.gz"), "wb") as f: f.write(small)
PY
  md="$b/data/mirror-data"
  # The seed programs run with leak detection off: Open MPI and HDF5 keep globals until exit.
  saved_asan="$ASAN_OPTIONS"
  export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  "$md" fashion-mnist --src "$w/fm" --out "$seeds/dataset/fm-uint8.h5" >/dev/null
  "$md" fashion-mnist --src "$w/fm" --out "$seeds/dataset/fm-uint8-chunked-gzip.h5" --chunk 2 --gzip 1 >/dev/null
  "$md" synth --out "$seeds/dataset/synth.h5" --train 40 --test 12 --features 6 --classes 3 >/dev/null
  "$md" synth --out "$seeds/dataset/synth-chunked.h5" --train 40 --test 12 --features 6 --classes 3 --chunk 8 >/dev/null
  "$md" synth --out "$w/train.h5" --train 64 --test 16 --features 8 --classes 3 >/dev/null
  root_flags=()
  [ "$(id -u)" = 0 ] && root_flags=(--allow-run-as-root)
  for opt in sgd adamw; do
    mpirun -np 1 --oversubscribe "${root_flags[@]}" "$b/trainer/tools/trainer" --data "$w/train.h5" \
      --model mlp:5 --epochs 1 --batch-size 16 --optimizer "$opt" --device cpu --checkpoint-dir "$w/ckpt-$opt" \
      --checkpoint-every 2 --progress off >/dev/null
    for f in "$w/ckpt-$opt"/ckpt-*.h5; do cp "$f" "$seeds/checkpoint/$opt-$(basename "$f")"; done
  done
  export ASAN_OPTIONS="$saved_asan"
  rm -rf "$w"
  touch "$seeds/.done"
fi

# Seeds of fuzz_import: small .npy files (dtypes, byte orders, shapes, header versions) and .npz archives
# (stored and deflated), written by Debian's numpy (/usr/bin/python3).
if [ ! -d "$seeds/import" ]; then
  mkdir -p "$seeds/import"
  /usr/bin/python3 - "$seeds/import" <<'PY'
import io, os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
arrays = {"i64": np.arange(12) % 3, "u8": np.arange(10, dtype=np.uint8) % 4, "be_i2": (np.arange(8) % 2).astype(">i2"),
          "f4_2d": rng.standard_normal((6, 5)).astype(np.float32), "f8_3d": rng.standard_normal((4, 3, 2)),
          "f2": rng.standard_normal((5, 2)).astype(np.float16), "bool": np.arange(6) % 2 == 0}
for name, a in arrays.items():
    np.save(os.path.join(d, name + ".npy"), a)
buf = io.BytesIO()
np.lib.format.write_array(buf, np.arange(9) % 3, version=(2, 0))
open(os.path.join(d, "v2.npy"), "wb").write(buf.getvalue())
np.savez(os.path.join(d, "stored.npz"), x=arrays["f4_2d"], y=np.arange(6) % 2)
np.savez_compressed(os.path.join(d, "deflated.npz"), x_train=arrays["f8_3d"], y_train=np.arange(4) % 2,
                    x_test=arrays["f8_3d"][:2], y_test=np.arange(2))
PY
fi

# ---- fuzzing ------------------------------------------------------------------------------------
# Fork mode with -ignore_crashes: a crash inside HDF5 itself (which Mirror cannot prevent, see
# docs/robustness.md) must not end the run before Mirror's code got its time. Every crashing input is kept
# and re-run alone afterwards to classify it by the first frame of its stack that is in HDF5 or elsewhere.
status=0
summary=()
for fz in "${fuzzers[@]}"; do
  case "$fz" in
    fuzz_dataset) seed="$seeds/dataset"; max_len=65536 ;;
    fuzz_idx) seed="$seeds/idx"; max_len=32768 ;;
    fuzz_checkpoint) seed="$seeds/checkpoint"; max_len=65536 ;;
    fuzz_import) seed="$seeds/import"; max_len=16384 ;;
    *) echo "fuzz.sh: unknown fuzzer '$fz'" >&2; exit 2 ;;
  esac
  corpus="$b/corpus/$fz"
  crashes="$b/crashes/$fz"
  mkdir -p "$corpus" "$crashes"
  log="$b/$fz.log"
  before=$(ls "$crashes" | wc -l)
  echo "fuzz.sh: running $fz for $seconds s (log $log)"
  start=$(date +%s)
  rc=0
  (cd "$b" && "$b/tests/fuzz/$fz" "$corpus" "$seed" -fork=1 -ignore_crashes=1 -ignore_ooms=0 -ignore_timeouts=0 \
      -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -artifact_prefix="$crashes/" >"$log" 2>&1) || rc=$?
  took=$(( $(date +%s) - start ))
  runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
  mirror_found=()
  hdf5_found=()
  for f in "$crashes"/*; do
    [ -e "$f" ] || continue
    report=$("$b/tests/fuzz/$fz" "$f" 2>&1 || true)
    # The first stack frame in HDF5 or in Mirror's sources decides (sanitizer/libc frames are skipped).
    first=$(printf '%s\n' "$report" | grep -E '^ +#[0-9]+ ' | grep -E 'libhdf5|\.(cc|h):[0-9]+' \
            | head -1 || true)
    if printf '%s' "$first" | grep -q libhdf5 && ! printf '%s' "$(basename "$f")" | grep -qE '^(oom|timeout|leak)-'; then
      hdf5_found+=("$(basename "$f")")
    elif printf '%s\n' "$report" | grep -qE 'ERROR|deadly signal|runtime error|out-of-memory|timeout'; then
      mirror_found+=("$(basename "$f")")
    fi
  done
  line="$fz: ${took} s, ${runs:-?} executions, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) files"
  line="$line, new crash files $(( $(ls "$crashes" | wc -l) - before ))"
  [ ${#hdf5_found[@]} -gt 0 ] && line="$line; inside HDF5 (docs/robustness.md): ${hdf5_found[*]}"
  if [ ${#mirror_found[@]} -gt 0 ] || { [ "$rc" -ne 0 ] && [ ${#hdf5_found[@]} -eq 0 ]; }; then
    status=1
    line="$line; FAILED (exit $rc), Mirror findings kept in $crashes: ${mirror_found[*]}"
  fi
  [ "${FUZZ_STRICT:-0}" = 1 ] && [ ${#hdf5_found[@]} -gt 0 ] && status=1
  summary+=("$line")
done
printf '%s\n' "${summary[@]}"
exit $status
