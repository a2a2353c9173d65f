#!/usr/bin/env bash
# gtest_skip_status.sh — runs a GoogleTest program (or mpirun of one) for CTest and turns its outcome into
# CTest's: the program's own non-zero exit code when it failed; 77 (the tests' SKIP_RETURN_CODE) when it
# passed but skipped cases ("[  SKIPPED ] N test"); 0 otherwise. CTest's SKIP_REGULAR_EXPRESSION would mark
# a test skipped whenever the line appears, even when other cases failed: this keeps failures failures.
#   gtest_skip_status.sh PROGRAM [ARGS...]
set -uo pipefail
if [ "$#" -eq 0 ]; then
  echo "gtest_skip_status.sh: no program given (usage: gtest_skip_status.sh PROGRAM [ARGS...])" >&2
  exit 2
fi
log="$(mktemp "${TMPDIR:-/tmp}/gtest-skip-status.XXXXXX")" || exit 2
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
if grep -Eq '^\[  SKIPPED \] [0-9]+ tests?' "$log"; then
  exit 77
fi
exit 0
