#!/usr/bin/env bash
# weight_decay.sh — the trainer's weight-decay convention: BatchNorm's weight/bias and biases take no weight
# decay unless --decay-bn-and-bias. After one SGD step from the same initial parameters the two settings
# differ exactly by the decay term on the exempt parameters (lr x wd x p0: BatchNorm's weight starts at 1,
# so 0.1 x 0.5 x 1 = 0.05; biases start at 0, where decay adds nothing, so test_nn_optimizer and
# test_nn_model_files check their exemption) and not at all elsewhere; the sharded step (2 ranks, shards cutting across the
# exempt ranges) equals the unsharded one bit for bit with the exemption in place.
source "$(dirname "$0")/../scripts/lib.sh"
"$MIRROR_DATA" synth --out "$TMP/img.h5" --train 256 --test 32 --shape 1,8,8 --classes 4 --seed 3 >/dev/null
one=(--data "$TMP/img.h5" --model cnn-bn --epochs 1 --max-steps 1 --checkpoint-every 1 --eval-every 0 --progress off
     --seed 5 --global-batch-size 32 --lr 0.1 --momentum 0 --weight-decay 0.5)
mpi 1 "$TRAINER" "${one[@]}" --checkpoint-dir "$TMP/exempt" >"$TMP/exempt.out"
grep -Eq "weight decay 0.5 on [0-9]+ of [0-9]+ parameters \(normalisation weight/bias and biases exempt\)" "$TMP/exempt.out" \
  || fail "no weight-decay line in the banner: $(cat "$TMP/exempt.out")"
mpi 1 "$TRAINER" "${one[@]}" --decay-bn-and-bias --checkpoint-dir "$TMP/all" >/dev/null
out="$("$MIRROR_CKPT" diff "$TMP/exempt/ckpt-00000001.h5" "$TMP/all/ckpt-00000001.h5" --tol 0 || true)"
for name in conv1.weight conv2.weight fc1.weight fc2.weight; do
  echo "$out" | grep -Eq "^  $name +max \|a-b\| 0 +ok$" || fail "$name: decayed differently: $out"
done
for name in bn1.weight bn2.weight; do
  echo "$out" | grep -Eq "^  $name +max \|a-b\| 0\.05(0000[0-9]*)?  +DIFFERS$|^  $name +max \|a-b\| 0\.04999[0-9]*  +DIFFERS$" \
    || fail "$name: the exemption is not lr x wd x 1 = 0.05: $out"
done
echo "ok: BatchNorm weight/bias and biases skip weight decay by default, --decay-bn-and-bias decays them"

# Sharded == unsharded, bit for bit, with the exempt ranges (SGD with momentum and AdamW).
for opt in sgd adamw; do
  for s in on off; do
    mpi 2 "$TRAINER" --data "$TMP/img.h5" --model cnn-bn --epochs 1 --max-steps 6 --checkpoint-every 6 --eval-every 0 \
      --progress off --seed 5 --batch-size 16 --optimizer "$opt" --lr 0.01 --weight-decay 0.05 --shard-optimizer "$s" \
      --checkpoint-dir "$TMP/$opt-$s" >/dev/null
  done
  "$MIRROR_CKPT" diff "$TMP/$opt-on/ckpt-00000006.h5" "$TMP/$opt-off/ckpt-00000006.h5" --tol 0 >/dev/null \
    || fail "$opt: the sharded step with exempt ranges differs from the unsharded one"
done
echo "ok: the sharded optimizer step with exempt ranges == the unsharded one bit for bit (sgd, adamw)"
