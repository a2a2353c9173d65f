#!/usr/bin/env bash
# gtest_skip_status_test.sh — cmake/gtest_skip_status.sh turns a GoogleTest program's outcome into CTest's:
# a failure stays a failure even when other cases skipped (what SKIP_REGULAR_EXPRESSION got wrong), a pass
# with skipped cases becomes 77, a clean pass 0, and the program's output is passed through.
#   gtest_skip_status_test.sh WRAPPER
set -uo pipefail
wrapper="$1"
failures=0
check() {  # check EXPECTED_RC NAME PROGRAM_SCRIPT
  local want="$1" name="$2" script="$3" out rc
  out="$(bash "$wrapper" bash -c "$script" 2>&1)"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want; output:"; echo "$out"; failures=$((failures + 1))
  elif ! grep -q "marker-$name" <<<"$out"; then
    echo "FAIL $name: the program's output did not come through"; failures=$((failures + 1))
  else
    echo "ok   $name: exit $rc"
  fi
}
# GoogleTest's own summary lines (gtest 1.12), as a program that skipped some cases and failed one prints them.
skipped_and_failed='echo marker-skipped_and_failed
echo "[  PASSED  ] 3 tests."
echo "[  SKIPPED ] 2 tests, listed below:"
echo "[  SKIPPED ] Nccl.AllreduceSum"
echo "[  FAILED  ] 1 test, listed below:"
echo "[  FAILED  ] Nccl.Broadcast"
exit 1'
only_skipped='echo marker-only_skipped
echo "[  PASSED  ] 0 tests."
echo "[  SKIPPED ] 1 test, listed below:"
echo "[  SKIPPED ] Cuda.Gemm"
exit 0'
passed='echo marker-passed
echo "[  PASSED  ] 12 tests."
exit 0'
crashed='echo marker-crashed; echo "[  SKIPPED ] 4 tests, listed below:"; kill -SEGV $$'
check 1 skipped_and_failed "$skipped_and_failed"
check 77 only_skipped "$only_skipped"
check 0 passed "$passed"
check 139 crashed "$crashed"
if bash "$wrapper" >/dev/null 2>&1; then echo "FAIL no_program: exit 0"; failures=$((failures + 1)); else echo "ok   no_program"; fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
