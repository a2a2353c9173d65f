#!/usr/bin/env bash
# non_finite.sh — a run whose loss overflows (--lr 1e30) stops on every rank with one error naming the step
# and exit code 5, before the broken step is applied: every checkpoint left verifies and holds only finite
# parameters (read back with h5py, an independent reader), and none is of the failing step or later.
# mirrorrun --max-restarts 2 does not restart such a job. np 1 and 2.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
args=(--data "$TMP/d.h5" --model mlp:32 --epochs 3 --batch-size 16 --lr 1e30 --progress off --checkpoint-every 1
      --keep 0)
for n in 1 2; do
  rc=0
  out="$(timeout 120 "$MPIEXEC" -np "$n" $MPIEXEC_FLAGS "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/c$n" 2>&1)" || rc=$?
  [ "$rc" -eq 5 ] || fail "np $n: exit $rc, expected 5: $out"
  [ "$(grep -c "error:" <<<"$out")" -eq 1 ] || fail "np $n: not exactly one error line: $out"
  if grep -q "MPI_ABORT" <<<"$out"; then fail "np $n: MPI_ABORT banner: $out"; fi
  step="$(sed -n 's/.*training diverged at step \([0-9]*\) .*/\1/p' <<<"$out" | head -1)"
  [ -n "$step" ] || fail "np $n: the error does not name the step: $out"
  ls "$TMP/c$n"/ckpt-*.h5 >/dev/null 2>&1 || fail "np $n: no good checkpoint before step $step: $(ls "$TMP/c$n")"
  for f in "$TMP/c$n"/ckpt-*.h5; do
    "$MIRROR_CKPT" verify "$f" >/dev/null || fail "np $n: $f does not verify"
    s=$((10#$(basename "$f" .h5 | sed 's/ckpt-//')))
    [ "$s" -lt "$step" ] || fail "np $n: checkpoint $f of step $s is not before the failing step $step"
  done
  /usr/bin/python3 - "$TMP/c$n" <<'PY' || fail "np $n: a checkpoint holds non-finite values"
import glob, sys, h5py, numpy as np
for f in sorted(glob.glob(sys.argv[1] + "/ckpt-*.h5")):
    with h5py.File(f, "r") as h:
        for g in ("params", "optimizer"):
            for name, ds in h[g].items():
                assert np.isfinite(ds[()]).all(), (f, g, name)
PY
  echo "ok: np $n: stopped at step $step with exit 5 and one error line; $(ls "$TMP/c$n" | wc -l) checkpoint(s) before it, all finite"
done

# mirrorrun does not restart a diverged job.
rc=0
out="$(timeout 120 "$MIRRORRUN" -np 2 --max-restarts 2 --restart-delay 0 "$TRAINER" "${args[@]}" \
       --checkpoint-dir "$TMP/mr" --resume auto 2>&1)" || rc=$?
[ "$rc" -eq 5 ] || fail "mirrorrun: exit $rc, expected 5: $out"
grep -q "training diverged); not restarted" <<<"$out" || fail "mirrorrun: no 'not restarted' line: $out"
if grep -q "restart 1 of" <<<"$out"; then fail "mirrorrun restarted a diverged job: $out"; fi
echo "ok: mirrorrun --max-restarts 2 does not restart a diverged job (exit 5)"
