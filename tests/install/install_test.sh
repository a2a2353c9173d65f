#!/usr/bin/env bash
# install_test.sh — `cmake --install` of this build into a scratch prefix gives the programs, the headers and a
# package config that another project finds with find_package(Mirror) and links against (then runs it under
# mpirun with 2 ranks). Usage: install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"; build="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/mirror-install.XXXXXX")"; trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/trainer bin/mirrorrun bin/mirror-data bin/mirror-eval bin/mirror-ckpt bin/mirror-bench \
         include/mirror/coll/communicator.h include/mirror/error.h lib/cmake/Mirror/MirrorConfig.cmake; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; ls -R "$tmp/prefix" | head -50; exit 1; }
done
# Prefer the compilers the build used, so a CUDA-enabled package config configures the same way.
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
flags=(--oversubscribe); [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
mpirun -np 2 "${flags[@]}" "$tmp/consumer/consumer"
"$tmp/prefix/bin/mirror-ckpt" --help >/dev/null
echo "ok: installed, found with find_package(Mirror), linked and ran"
