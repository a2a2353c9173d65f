#!/usr/bin/env bash
# expect_run.sh — runs one command for CTest and checks both its exit code and its output:
#   expect_run.sh EXPECTED_RC [TEXT ...] -- COMMAND [ARGS...]
# EXPECTED_RC is a number or "nonzero"; each TEXT must appear in stdout+stderr (fixed string).
# The command gets 60 s at most (timeout), so a hang is a failure, never a stuck suite.
set -uo pipefail
expected=$1
shift
texts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do texts+=("$1"); shift; done
[ $# -gt 0 ] && shift
out=$(timeout 60 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
status=0
if [ "$expected" = nonzero ]; then
  [ "$rc" -ne 0 ] || { echo "FAIL: exit code 0, expected non-zero"; status=1; }
  [ "$rc" -ne 124 ] || { echo "FAIL: timed out"; status=1; }
else
  [ "$rc" -eq "$expected" ] || { echo "FAIL: exit code $rc, expected $expected"; status=1; }
fi
for t in "${texts[@]}"; do
  grep -qF -- "$t" <<<"$out" || { echo "FAIL: output lacks: $t"; status=1; }
done
[ $status -eq 0 ] && echo "PASS (exit code $rc)"
exit $status
