#!/usr/bin/env bash
# equivalence.sh — the property that defines data-parallel correctness: N ranks with batch B end with the same
# parameters as 1 rank with batch N*B (same seed, same 100 steps), max |difference| <= 1e-5. The 1-rank run
# is the independent serial reference. Also checks that a different seed is caught as different (the
# comparison can fail), and gradient accumulation: 1 rank x batch 2B x accum 1 == 1 rank x batch B x accum 2.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
common=(--data "$TMP/d.h5" --model mlp:32,16 --epochs 1000 --max-steps 100 --eval-every 0 --progress off
        --checkpoint-every 100 --lr 0.05 --momentum 0.9 --seed 5)

for opt in sgd adamw; do
  extra=(--optimizer "$opt")
  [ "$opt" = adamw ] && extra+=(--lr 0.002 --weight-decay 0.01)
  mpi 1 "$TRAINER" "${common[@]}" "${extra[@]}" --global-batch-size 12 --checkpoint-dir "$TMP/$opt-np1" >/dev/null
  for n in 2 3; do
    mpi "$n" "$TRAINER" "${common[@]}" "${extra[@]}" --batch-size $((12 / n)) --checkpoint-dir "$TMP/$opt-np$n" >/dev/null
    "$MIRROR_CKPT" diff "$TMP/$opt-np1/ckpt-00000100.h5" "$TMP/$opt-np$n/ckpt-00000100.h5" --tol 1e-5 \
      || fail "$opt: $n ranks x batch $((12 / n)) differ from 1 rank x batch 12"
    echo "ok: $opt, $n ranks x batch $((12 / n)) == 1 rank x batch 12 after 100 steps"
  done
done

# A model whose gradients (43844 floats, 171 KiB) exceed the 64 KiB small-message path: on the
# shared-memory transport the 2 ranks all-reduce straight between their shared gradient buffers. Its
# results must be bit-identical to the MPI transport's (2 ranks: one addition per element either way),
# and after 10 steps equal to 1 rank x batch 12 (over 100 steps this wider model, at lr 0.05 with
# momentum, amplifies the rounding differences between batch 12 and 2 x batch 6 past 1e-5, for every
# transport alike).
big=(--data "$TMP/d.h5" --model mlp:512,64 --epochs 1000 --eval-every 0 --lr 0.05 --momentum 0.9 --seed 5
     --progress off)
for steps in 10 100; do
  for t in shm mpi; do
    mpi 2 "$TRAINER" "${big[@]}" --max-steps $steps --checkpoint-every $steps --batch-size 6 --host-transport $t \
      --checkpoint-dir "$TMP/big-$t-$steps" >"$TMP/big-$t.log"
  done
  grep -q "gradients over host (shm, in a shared buffer)" "$TMP/big-shm.log" \
    || fail "2 ranks did not put the gradients in a shared buffer: $(head -1 "$TMP/big-shm.log")"
  grep -q "gradients over host (mpi)" "$TMP/big-mpi.log" || fail "--host-transport mpi: $(head -1 "$TMP/big-mpi.log")"
  "$MIRROR_CKPT" diff "$TMP/big-shm-$steps/ckpt-$(printf %08d $steps).h5" \
    "$TMP/big-mpi-$steps/ckpt-$(printf %08d $steps).h5" --tol 0 \
    || fail "mlp:512,64, $steps steps: the shared-buffer allreduce differs from the MPI transport's"
done
mpi 1 "$TRAINER" "${big[@]}" --max-steps 10 --checkpoint-every 10 --global-batch-size 12 \
  --checkpoint-dir "$TMP/big-np1" >/dev/null
"$MIRROR_CKPT" diff "$TMP/big-np1/ckpt-00000010.h5" "$TMP/big-shm-10/ckpt-00000010.h5" --tol 1e-5 \
  || fail "mlp:512,64: 2 ranks x batch 6 differ from 1 rank x batch 12 after 10 steps"
echo "ok: mlp:512,64 on a shared gradient buffer == MPI transport bit for bit (10, 100 steps), == 1 rank after 10"

# The sharded optimizer step (reduce-scatter, update of each rank's shard, all-gather; the default for CPU
# models with more than one rank) computes exactly what every rank updating everything after an all-reduce
# does: parameters and optimizer state (gathered for the checkpoint) bit for bit, for SGD with momentum
# and AdamW with weight decay, on both host transports, with 2 and 3 ranks (3 leaves tails of buckets not
# divisible by the rank count), and with small buckets (several buckets, overlapped with backward).
for opt in sgd adamw; do
  for case in "2 shm 25" "3 shm 25" "2 mpi 25" "2 shm 0.05"; do
    read -r n t mb <<< "$case"
    for s in on off; do
      mpi "$n" "$TRAINER" "${big[@]}" --optimizer "$opt" --weight-decay 0.01 --max-steps 20 --checkpoint-every 20 \
        --batch-size 4 --host-transport "$t" --bucket-mb "$mb" --shard-optimizer "$s" \
        --checkpoint-dir "$TMP/shard-$opt-$n-$t-$mb-$s" >"$TMP/shard-$s.log"
    done
    grep -q "optimizer sharded over $n ranks" "$TMP/shard-on.log" || fail "--shard-optimizer on: $(head -1 "$TMP/shard-on.log")"
    if grep -q "optimizer sharded" "$TMP/shard-off.log"; then fail "--shard-optimizer off: $(head -1 "$TMP/shard-off.log")"; fi
    "$MIRROR_CKPT" diff "$TMP/shard-$opt-$n-$t-$mb-on/ckpt-00000020.h5" "$TMP/shard-$opt-$n-$t-$mb-off/ckpt-00000020.h5" \
      --tol 0 >/dev/null || fail "$opt, $n ranks over $t, $mb MB buckets: the sharded step differs from the all-reduce one"
  done
done
echo "ok: the sharded optimizer step == all-reduce + full step bit for bit (sgd, adamw; 2 and 3 ranks; shm, mpi)"

# The comparison is able to fail: another seed gives other parameters.
mpi 2 "$TRAINER" "${common[@]}" --seed 6 --batch-size 6 --checkpoint-dir "$TMP/other" >/dev/null
if "$MIRROR_CKPT" diff "$TMP/sgd-np1/ckpt-00000100.h5" "$TMP/other/ckpt-00000100.h5" --tol 1e-5 >/dev/null; then
  fail "runs with different seeds compared equal"
fi
echo "ok: a different seed is detected as different"

# Gradient accumulation: K micro-batches of B, accumulated, make one step over the same K*B samples as one
# batch of K*B (the sampler's consecutive global batches), so 1 rank x 6 x accum 2 and 2 ranks x 3 x accum 2
# must both equal 1 rank x batch 12.
mpi 1 "$TRAINER" "${common[@]}" --batch-size 6 --accum-steps 2 --checkpoint-dir "$TMP/acc-np1" >/dev/null
mpi 2 "$TRAINER" "${common[@]}" --batch-size 3 --accum-steps 2 --checkpoint-dir "$TMP/acc-np2" >/dev/null
for d in acc-np1 acc-np2; do
  "$MIRROR_CKPT" diff "$TMP/sgd-np1/ckpt-00000100.h5" "$TMP/$d/ckpt-00000100.h5" --tol 1e-5 \
    || fail "accumulation ($d) differs from 1 rank x batch 12"
done
echo "ok: accumulation of 2 x 6 (1 rank) and 2 x 3 (2 ranks) equals batch 12"

# With augmentation (random crop with padding 2 and horizontal flips of 1 x 8 x 8 images, drawn per (seed,
# epoch, sample)), N ranks x B still equal 1 rank x N*B; and the augmentation is applied (without it the
# parameters differ).
image_data "$TMP/img.h5"
aug=(--data "$TMP/img.h5" --model mlp:16 --epochs 1000 --max-steps 60 --checkpoint-every 60 --eval-every 0
     --progress off --lr 0.05 --seed 5 --random-crop 2 --hflip)
mpi 1 "$TRAINER" "${aug[@]}" --global-batch-size 12 --checkpoint-dir "$TMP/aug-np1" >/dev/null
for n in 2 3; do
  mpi "$n" "$TRAINER" "${aug[@]}" --batch-size $((12 / n)) --checkpoint-dir "$TMP/aug-np$n" >/dev/null
  "$MIRROR_CKPT" diff "$TMP/aug-np1/ckpt-00000060.h5" "$TMP/aug-np$n/ckpt-00000060.h5" --tol 1e-5 \
    || fail "augmented: $n ranks x batch $((12 / n)) differ from 1 rank x batch 12"
done
mpi 2 "$TRAINER" "${aug[@]}" --random-crop 0 --batch-size 6 --checkpoint-dir "$TMP/aug-none" >/dev/null
if "$MIRROR_CKPT" diff "$TMP/aug-np1/ckpt-00000060.h5" "$TMP/aug-none/ckpt-00000060.h5" --tol 1e-5 >/dev/null; then
  fail "--random-crop 2 --hflip trained the same as --hflip alone: the crop is not applied"
fi
echo "ok: with --random-crop 2 --hflip, 2 and 3 ranks == 1 rank x batch 12 after 60 steps; the crop matters"
