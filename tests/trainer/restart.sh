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

kill_rank_and_restart "$TMP/ck" "$TMP/run.out" "${args[@]}"
"$MIRROR_CKPT" diff "$TMP/ref/ckpt-00012000.h5" "$TMP/ck/ckpt-00012000.h5" --tol 0 \
  || fail "the restarted run ended with other parameters than the uninterrupted one"
echo "ok: rank killed, job restarted, resumed and ended bit-identical to the uninterrupted run"
