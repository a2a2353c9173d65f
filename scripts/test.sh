#!/usr/bin/env bash
# test.sh — the one test command: installs what is missing, configures, builds and runs every test.
# Usage: scripts/test.sh [extra cmake -D options...]
#   BUILD_DIR (default build), MIRROR_WITH_CUDA (default AUTO), JOBS (default: cores) may be set.
# Exits non-zero on any build or test failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"

# dataset-fashion-mnist lets the converter test run on the real data set (it skips without it).
scripts/install-deps.sh dataset-fashion-mnist

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
      -DMIRROR_WITH_CUDA="${MIRROR_WITH_CUDA:-AUTO}" -DMIRROR_BUILD_TESTS=ON "$@"
cmake --build "$build_dir" -j "$jobs"
cd "$build_dir"
ctest --output-on-failure -j "$jobs"
