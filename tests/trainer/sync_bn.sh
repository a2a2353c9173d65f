#!/usr/bin/env bash
# sync_bn.sh — synchronised BatchNorm keeps data parallelism exact on CNNs: on tiny synthetic images (1x12x12,
# 4 classes), 1 rank x 64 == 2 ranks x 32 == 4 ranks x 16 within 1e-4 in the parameters, the BatchNorm running
# statistics (/buffers) and the optimizer state, for cnn-bn after one epoch (with its dropout: masks keyed by
# sample id) and for resnet20 at each of 8 steps taken from the same state (see below). The 1-rank run is the serial reference. With --no-sync-bn the runs are
# NOT equivalent (the comparison can fail), and the ranks' running statistics are averaged before the
# checkpoint: after one step the first BatchNorm's running mean is 0.1 x the mean of the ranks' batch means,
# which for equal halves is the global batch mean, what 1 rank x 64 stores (rank 0's own would differ).
#
# How far rounding carries: 1 rank and N ranks round differently (other summation orders), about 1e-7 after
# a step. Those differences grow, between ANY two runs that round differently, as inputs of the ReLUs and
# max-pools cross their kinks: one crossing changes a gradient by up to ~4e-3 at once (seen on an Intel Xeon
# with AVX-512, in resnet20, 1 step from the same state), and every later step carries and multiplies the jump.
# That is float arithmetic, not SyncBN. So cnn-bn trains one 50-step epoch at lr 0.01 with momentum 0.9 (largest
# difference seen 8e-7, AMD EPYC and Intel Xeon), and resnet20, whose 19 ReLU layers cross kinks far more often
# (a 5-step epoch at lr 0.01 differed by 2.3e-4 on the Xeon while it stayed at 5e-7 on the AMD), is checked
# step by step: 1 rank x 64 trains 8 one-step epochs, and from each of its checkpoints (epoch boundaries, which
# resume with any rank count) 2 ranks x 32 and 4 ranks x 16 take the same next step. No jump carries over, so
# every step's SyncBN forward and backward is checked against the serial run (largest difference seen 2.8e-6 at
# lr 0.003; with --no-sync-bn every one of the 8 steps differs by 3e-3 to 1.5e-2).
source "$(dirname "$0")/../scripts/lib.sh"
"$MIRROR_DATA" synth --out "$TMP/img.h5" --train 3200 --test 64 --shape 1,12,12 --classes 4 --seed 3 >/dev/null
"$MIRROR_DATA" synth --out "$TMP/img1.h5" --train 64 --test 64 --shape 1,12,12 --classes 4 --seed 3 >/dev/null

# equivalent NAME STEPS ARGS... — 1 x 64, 2 x 32 and 4 x 16 for one epoch; the checkpoints agree within 1e-4.
equivalent() {
  local name="$1" steps="$2"; shift 2
  local common=(--epochs 1 --eval-every 0 --progress off --seed 5 --checkpoint-every "$steps" "$@")
  local ckpt
  ckpt="ckpt-$(printf %08d "$steps").h5"
  mpi 1 "$TRAINER" "${common[@]}" --global-batch-size 64 --checkpoint-dir "$TMP/$name-np1" >/dev/null
  for n in 2 4; do
    mpi "$n" "$TRAINER" "${common[@]}" --batch-size $((64 / n)) --checkpoint-dir "$TMP/$name-np$n" >/dev/null
    out="$("$MIRROR_CKPT" diff "$TMP/$name-np1/$ckpt" "$TMP/$name-np$n/$ckpt" --tol 1e-4)" \
      || fail "$name: $n ranks x $((64 / n)) differ from 1 rank x 64 after $steps steps: $out"
    echo "$out" | grep -Eq "^  bn1\.running_var .* ok$" || fail "$name: the diff does not cover /buffers: $out"
    echo "ok: $name, $n ranks x $((64 / n)) == 1 rank x 64 after one epoch ($steps steps), parameters and running statistics"
  done
}
equivalent cnn-bn 50 --data "$TMP/img.h5" --model cnn-bn --lr 0.01 --momentum 0.9

# stepwise NAME STEPS ARGS... — 1 x 64 trains STEPS one-step epochs; from its start and from each of its
# checkpoints, 2 x 32 and 4 x 16 take the next step; the checkpoints agree within 1e-4.
stepwise() {
  local name="$1" steps="$2"; shift 2
  local common=(--data "$TMP/img1.h5" --eval-every 0 --progress off --seed 5 --checkpoint-every epoch --keep 0 "$@")
  mpi 1 "$TRAINER" "${common[@]}" --epochs "$steps" --global-batch-size 64 --checkpoint-dir "$TMP/$name-np1" >/dev/null
  local k n from next out
  for ((k = 0; k < steps; k++)); do
    from=(); [ "$k" -gt 0 ] && from=(--resume "$TMP/$name-np1/ckpt-$(printf %08d "$k").h5")
    next="ckpt-$(printf %08d $((k + 1))).h5"
    for n in 2 4; do
      rm -rf "$TMP/$name-step"
      mpi "$n" "$TRAINER" "${common[@]}" "${from[@]}" --epochs $((k + 1)) --batch-size $((64 / n)) \
        --checkpoint-dir "$TMP/$name-step" >/dev/null
      out="$("$MIRROR_CKPT" diff "$TMP/$name-np1/$next" "$TMP/$name-step/$next" --tol 1e-4)" \
        || fail "$name: step $((k + 1)) from the same state, $n ranks x $((64 / n)) differ from 1 rank x 64: $out"
      echo "$out" | grep -Eq "^  bn1\.running_var .* ok$" || fail "$name: the diff does not cover /buffers: $out"
    done
  done
  echo "ok: $name, every one of $steps steps from the same state: 2 x 32 == 4 x 16 == 1 x 64 (parameters, statistics)"
}
stepwise resnet20 8 --model resnet20 --lr 0.003 --momentum 0
# The step-by-step check can fail: without SyncBN the first step already differs.
rm -rf "$TMP/resnet20-nosync"
mpi 2 "$TRAINER" --data "$TMP/img1.h5" --model resnet20 --lr 0.003 --momentum 0 --epochs 1 --eval-every 0 \
  --progress off --seed 5 --batch-size 32 --no-sync-bn --checkpoint-dir "$TMP/resnet20-nosync" >/dev/null
expect_error 1 "DIFFERENT" "$MIRROR_CKPT" diff "$TMP/resnet20-np1/ckpt-00000001.h5" \
  "$TMP/resnet20-nosync/ckpt-00000001.h5" --tol 1e-4
echo "ok: resnet20 --no-sync-bn with 2 ranks fails the step-by-step check"

# --no-sync-bn: each rank normalises with its own 32 samples, so 2 ranks no longer train like 1.
mpi 2 "$TRAINER" --data "$TMP/img.h5" --model cnn-bn --epochs 1 --eval-every 0 --progress off --seed 5 \
  --checkpoint-every 50 --lr 0.01 --batch-size 32 --no-sync-bn --checkpoint-dir "$TMP/nosync" >/dev/null
expect_error 1 "DIFFERENT" "$MIRROR_CKPT" diff "$TMP/cnn-bn-np1/ckpt-00000050.h5" "$TMP/nosync/ckpt-00000050.h5" --tol 1e-4
echo "ok: --no-sync-bn with 2 ranks is not equivalent to 1 rank (as documented)"

# --no-sync-bn averages the running statistics over the ranks before the checkpoint: one step from the same
# initial parameters, bn1's running mean (0.9 x 0 + 0.1 x batch mean) equals 1 rank x 64's.
one_step=(--data "$TMP/img.h5" --model cnn-bn --epochs 1 --max-steps 1 --checkpoint-every 1 --eval-every 0
          --progress off --seed 5)
mpi 1 "$TRAINER" "${one_step[@]}" --global-batch-size 64 --checkpoint-dir "$TMP/step-np1" >/dev/null
mpi 2 "$TRAINER" "${one_step[@]}" --batch-size 32 --no-sync-bn --checkpoint-dir "$TMP/step-nosync" >/dev/null
out="$("$MIRROR_CKPT" diff "$TMP/step-np1/ckpt-00000001.h5" "$TMP/step-nosync/ckpt-00000001.h5" --tol 1e-6 || true)"
echo "$out" | grep -Eq "^  bn1\.running_mean .* ok$" \
  || fail "--no-sync-bn: bn1.running_mean in the checkpoint is not the ranks' average: $out"
echo "ok: --no-sync-bn, 2 ranks: the checkpoint's running mean is the average over the ranks (== 1 rank x 64's)"
# The check can fail: one half's own statistics (what rank 0 would store without the averaging) differ.
mpi 1 "$TRAINER" "${one_step[@]}" --global-batch-size 32 --checkpoint-dir "$TMP/step-half" >/dev/null
out="$("$MIRROR_CKPT" diff "$TMP/step-np1/ckpt-00000001.h5" "$TMP/step-half/ckpt-00000001.h5" --tol 1e-6 || true)"
echo "$out" | grep -Eq "^  bn1\.running_mean .* DIFFERS$" || fail "a 32-sample batch's running mean equals 64's: $out"
