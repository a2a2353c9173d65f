#!/usr/bin/env bash
# sanitize.sh — builds Mirror with a sanitizer and runs the tests under it.
# Usage: scripts/sanitize.sh address|thread [extra ctest arguments...]
#   address: build-asan, -fsanitize=address,undefined, the whole test suite.
#   thread:  build-tsan, -fsanitize=thread, only the threaded tests (data prefetch, async collectives,
#            gradient sync) selected by TSAN_TESTS (a ctest -R pattern).
#   JOBS (default 2) sets the build and ctest parallelism; BUILD_DIR overrides the build directory.
# Suppressions for reports from inside Open MPI / HDF5 live in tests/sanitizers/ (each entry explained).
# Exits non-zero when the build fails or any test fails (a sanitizer report makes its test fail).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-}"
shift || true
jobs="${JOBS:-2}"
supp="$root/tests/sanitizers"

case "$mode" in
  address)
    build_dir="${BUILD_DIR:-build-asan}"
    sanitize="address;undefined"
    # halt_on_error: a UBSan finding fails the test instead of scrolling by.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp:${UBSAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    ctest_filter=()
    ;;
  thread)
    build_dir="${BUILD_DIR:-build-tsan}"
    sanitize="thread"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:${TSAN_OPTIONS:-}"
    ctest_filter=(-R "${TSAN_TESTS:-^(test_data_reader|test_host_async|test_host_collectives|test_timeout|test_grad_sync)}")
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [ctest args...]" >&2
    exit 2
    ;;
esac

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIRROR_WITH_CUDA=OFF \
      -DMIRROR_BUILD_TESTS=ON "-DMIRROR_SANITIZE=$sanitize" >/dev/null
if [ "$mode" = thread ]; then
  # Only the binaries the selected tests run (the whole project is not needed).
  targets=(test_data_reader test_host_async test_host_collectives test_timeout test_grad_sync)
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j "$jobs"
fi
cd "$build_dir"
start=$(date +%s)
status=0
ctest --output-on-failure -j "$jobs" "${ctest_filter[@]}" "$@" || status=$?
echo "sanitize.sh $mode: ctest took $(( $(date +%s) - start )) s, exit $status"
exit $status
