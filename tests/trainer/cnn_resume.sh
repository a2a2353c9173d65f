#!/usr/bin/env bash
# cnn_resume.sh — resume and restart are exact for a CNN with BatchNorm and dropout: cnn-bn on synthetic
# 1x12x12 images, 2 ranks with SyncBN, (1) interrupted mid-epoch and resumed with --resume auto, (2) one rank
# killed with SIGKILL under mirrorrun --max-restarts; both end bit-identical (--tol 0: parameters, BatchNorm
# running statistics, optimizer state) to a run that was never interrupted. The running statistics and the
# dropout masks (keyed by seed, step and sample) and the augmentation (random crop and flip keyed by seed,
# epoch and sample) are what this adds over resume.sh / restart.sh.
source "$(dirname "$0")/../scripts/lib.sh"
"$MIRROR_DATA" synth --out "$TMP/img.h5" --train 960 --test 64 --shape 1,12,12 --classes 4 --seed 3 >/dev/null
# 960 / (2 x 16) = 30 steps per epoch; 4 epochs, 120 steps.
common=(--data "$TMP/img.h5" --model cnn-bn --epochs 4 --batch-size 16 --eval-every 1 --progress off --lr 0.01
        --checkpoint-every 20 --keep 0 --seed 3 --random-crop 2 --hflip)
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/full" >/dev/null
[ -f "$TMP/full/ckpt-00000120.h5" ] || fail "the uninterrupted run left no ckpt-00000120.h5: $(ls "$TMP/full")"

# (1) Interrupted at step 45 (mid-epoch 2), resumed from there.
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/cut" --max-steps 45 >/dev/null
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/cut" --resume auto >"$TMP/resume.out"
grep -q "resumed from .*ckpt-00000045.h5 at step 45" "$TMP/resume.out" || fail "no resume line: $(cat "$TMP/resume.out")"
out="$("$MIRROR_CKPT" diff "$TMP/full/ckpt-00000120.h5" "$TMP/cut/ckpt-00000120.h5" --tol 0)" \
  || fail "cnn-bn: the resumed run differs from the uninterrupted one: $out"
echo "$out" | grep -Eq "^  bn2\.running_var .* ok$" || fail "the diff does not cover the running statistics: $out"
echo "ok: cnn-bn (SyncBN, dropout), interrupted at step 45 and resumed == uninterrupted (bit-exact, with /buffers)"

# (2) A rank killed with SIGKILL after the first checkpoint; mirrorrun restarts the job, which resumes.
kill_rank_and_restart "$TMP/ck" "$TMP/run.out" "${common[@]}" >/dev/null
"$MIRROR_CKPT" diff "$TMP/full/ckpt-00000120.h5" "$TMP/ck/ckpt-00000120.h5" --tol 0 >/dev/null \
  || fail "cnn-bn: the restarted run ended with other values than the uninterrupted one"
echo "ok: cnn-bn, a rank killed, the job restarted and resumed == uninterrupted (bit-exact)"
