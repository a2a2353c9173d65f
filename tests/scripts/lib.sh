# lib.sh — helpers for Mirror's script tests (sourced). CTest passes the programs' paths in the environment:
# TRAINER, MIRROR_DATA, MIRROR_EVAL, MIRROR_CKPT, MPIEXEC, MPIEXEC_FLAGS.
set -euo pipefail

TMP="$(mktemp -d "${TMPDIR:-/tmp}/mirror-test.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# mpi N PROGRAM ARGS... — runs PROGRAM under mpirun with N ranks.
mpi() {
  local n="$1"; shift
  # shellcheck disable=SC2086
  "$MPIEXEC" -np "$n" $MPIEXEC_FLAGS "$@"
}

# expect_error CODE PATTERN CMD... — CMD must exit with CODE (or any non-zero for CODE "nonzero") and print
# something matching PATTERN (grep -E) on stdout or stderr, within 120 s.
expect_error() {
  local code="$1" pattern="$2"; shift 2
  local out rc=0
  if [ "$1" = mpi ]; then  # timeout cannot run a shell function: spell the mpirun command out
    local n="$2"; shift 2
    # shellcheck disable=SC2086
    set -- "$MPIEXEC" -np "$n" $MPIEXEC_FLAGS "$@"
  fi
  out="$(timeout 120 "$@" 2>&1)" || rc=$?
  if [ "$code" = "nonzero" ]; then
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit from: $*; got 0. Output: $out"
  else
    [ "$rc" -eq "$code" ] || fail "expected exit $code from: $*; got $rc. Output: $out"
  fi
  [ "$rc" -ne 124 ] || fail "timed out: $*"
  echo "$out" | grep -Eq -- "$pattern" || fail "output of '$*' lacks /$pattern/: $out"
  echo "ok: exit $rc with /$pattern/ from: ${*:1:6}"
}

# synth_data FILE [extra mirror-data synth args] — a small learnable dataset.
synth_data() {
  local file="$1"; shift
  "$MIRROR_DATA" synth --out "$file" --train 960 --test 200 --features 20 --classes 4 --seed 11 "$@" >/dev/null
}
