#!/usr/bin/env bash
# restart.sh — mirrorrun --max-restarts with trainer --resume auto survives a rank killed with SIGKILL mid-run:
# the job is started again, continues from the newest checkpoint, finishes with exit 0, and ends with exactly
# the parameters of a run that never failed.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
args=(--data "$TMP/d.h5" --model mlp:256,256 --epochs 400 --batch-size 16 --eval-every 0 --progress off
      --checkpoint-every 100 --keep 2 --seed 9)
# 960 / (2 x 16) = 30 steps per epoch; 12000 steps in all (a few seconds).
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/ref" >/dev/null

timeout 300 "$MIRRORRUN" -np 2 --max-restarts 2 --restart-delay 0.2 -- \
  "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/ck" --resume auto >"$TMP/run.out" 2>&1 &
job=$!
# Wait for the first checkpoint, then kill -9 one rank (a real trainer process of this job, not mpirun).
first_checkpoint() { compgen -G "$TMP/ck/ckpt-*.h5" >/dev/null; }
for _ in $(seq 1 1200); do
  first_checkpoint && break
  sleep 0.05
done
first_checkpoint || { kill "$job"; fail "no first checkpoint: $(cat "$TMP/run.out")"; }
victim=""
for pid in $(pgrep -x trainer); do
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$TMP/ck"; then victim=$pid; break; fi
done
[ -n "$victim" ] || { kill "$job"; fail "no trainer rank found to kill"; }
kill -9 "$victim"
echo "killed rank pid $victim"
rc=0
wait "$job" || rc=$?
[ "$rc" -eq 0 ] || fail "mirrorrun exited $rc: $(cat "$TMP/run.out")"
grep -q "restart 1 of 2" "$TMP/run.out" || fail "no restart reported: $(cat "$TMP/run.out")"
grep -q "resumed from" "$TMP/run.out" || fail "the restarted job did not resume: $(cat "$TMP/run.out")"
"$MIRROR_CKPT" diff "$TMP/ref/ckpt-00012000.h5" "$TMP/ck/ckpt-00012000.h5" --tol 0 \
  || fail "the restarted run ended with other parameters than the uninterrupted one"
echo "ok: rank killed, job restarted, resumed and ended bit-identical to the uninterrupted run"
