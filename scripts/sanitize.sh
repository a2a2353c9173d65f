#!/usr/bin/env bash
# sanitize.sh — builds Mirror with a sanitizer and runs the tests under it.
# Usage: scripts/sanitize.sh address|thread [extra ctest arguments...]
#   address: build-asan, -fsanitize=address,undefined, the whole test suite.
#   thread:  build-tsan, -fsanitize=thread, only the threaded tests: the data reader (prefetch thread),
#            every collectives test (async host/shm collectives, timeouts) and test_grad_sync. TSAN_TESTS
#            (a list of test binaries) overrides the selection.
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

# Open MPI (and PMIx) unload their MCA components at MPI_Finalize; keep them loaded so that reports from
# inside them still name their library and the suppressions can match.
export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1

case "$mode" in
  address)
    build_dir="${BUILD_DIR:-build-asan}"
    sanitize="address;undefined"
    # halt_on_error: a UBSan finding fails the test instead of scrolling by.
    # fast_unwind_on_malloc=0: Open MPI is built without frame pointers, so the fast unwinder stops after
    # one frame ("<unknown module>") and no suppression could match its allocations.
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0:${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp:${UBSAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0:${LSAN_OPTIONS:-}"
    ctest_filter=()
    ;;
  thread)
    build_dir="${BUILD_DIR:-build-tsan}"
    sanitize="thread"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:${TSAN_OPTIONS:-}"
    read -r -a tsan_tests <<<"${TSAN_TESTS:-test_data_reader test_grad_sync test_half test_runtime \
test_host_collectives test_host_async test_timeout test_nccl_id test_nccl_collectives test_shm_collectives \
test_shm_async test_shm_timeout test_shm_shared_buffers}"
    pattern="^($(IFS='|'; echo "${tsan_tests[*]}"))(\\.np[0-9]+)?\$"
    ctest_filter=(-R "$pattern")
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
  cmake --build "$build_dir" -j "$jobs" --target "${tsan_tests[@]}"
else
  cmake --build "$build_dir" -j "$jobs"
fi
cd "$build_dir"
start=$(date +%s)
status=0
ctest --output-on-failure -j "$jobs" "${ctest_filter[@]}" "$@" || status=$?
echo "sanitize.sh $mode: ctest took $(( $(date +%s) - start )) s, exit $status"
exit $status
