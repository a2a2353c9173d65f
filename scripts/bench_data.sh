#!/usr/bin/env bash
# bench_data.sh — reader benchmark of mirror::data: throughput per rank (samples/s, MB/s) and the time a
# training loop waits for data with prefetch off and on, for 1 and 2 ranks. Prints the tables of
# `mirror-data bench`; no pass/fail. Usage:
#   scripts/bench_data.sh [BUILD_DIR] [DATASET] [-- extra mirror-data bench flags, e.g. --batch 128 --busy]
# BUILD_DIR defaults to build; DATASET to data/fmnist.h5 (converted from Fashion-MNIST when missing, or a
# synthetic set of the same size when the package is not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
data=${2:-data/fmnist.h5}
shift $(( $# < 2 ? $# : 2 ))
[ "${1:-}" = "--" ] && shift
tool="$build/data/mirror-data"
[ -x "$tool" ] || { echo "bench_data: $tool not built (cmake --build $build --target mirror-data)" >&2; exit 1; }
if [ ! -e "$data" ]; then
  mkdir -p "$(dirname "$data")"
  if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    "$tool" fashion-mnist --out "$data"
  else
    echo "bench_data: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist); using synthetic data"
    "$tool" synth --out "$data" --train 60000 --test 10000 --features 784 --classes 10
  fi
fi
mpiflags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpiflags+=(--allow-run-as-root)
for np in 1 2; do
  echo "== np $np: mpirun -np $np $tool bench --data $data $*"
  mpirun -np "$np" "${mpiflags[@]}" "$tool" bench --data "$data" "$@" | sort -s -t']' -k1,1
done
