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
