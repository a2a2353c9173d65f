#!/usr/bin/env bash
# cnn_misfits.sh — bad input around CNN models is a clear error and a non-zero exit (model_files.sh covers
# the typo in a model file, a residual block whose body and shortcut disagree and flat [20] data into
# keras-cnn): a pooling window that does not fit its input (named with the shape), flat 32-feature data into
# keras-cnn, image data into a model built for other images at evaluation, and resuming from a checkpoint of
# another model — with a different layout (both models named) and with the very same parameters but
# another layer (maxpool2d against avgpool2d: the first differing layer named).
source "$(dirname "$0")/../scripts/lib.sh"
"$MIRROR_DATA" synth --out "$TMP/img.h5" --train 128 --test 32 --shape 1,8,8 --classes 4 --seed 3 >/dev/null
"$MIRROR_DATA" synth --out "$TMP/img12.h5" --train 128 --test 32 --shape 1,12,12 --classes 4 --seed 3 >/dev/null
"$MIRROR_DATA" synth --out "$TMP/flat.h5" --train 64 --test 16 --features 32 --classes 10 --seed 1 >/dev/null

echo '{"layers": [{"type": "conv2d", "name": "c", "out_channels": 4, "kernel": 3},
  {"type": "maxpool2d", "name": "p", "kernel": 8}, {"type": "flatten"}, {"type": "linear", "out_features": "classes"}]}' \
  >"$TMP/pool.json"
expect_error nonzero "layer 'p' \(maxpool2d\) with input samples of shape \[4, 6, 6\]: maxpool2d window 8x8 does not fit" \
  mpi 2 "$TRAINER" --data "$TMP/img.h5" --model "$TMP/pool.json" --progress off
expect_error nonzero "layer 'conv1' \(conv2d\) needs image samples \[C, H, W\], got \[32\]" \
  mpi 1 "$TRAINER" --data "$TMP/flat.h5" --model keras-cnn --progress off

# A cnn-bn checkpoint on 1x8x8 images.
run=(--data "$TMP/img.h5" --epochs 1 --batch-size 16 --progress off --eval-every 0 --checkpoint-every 4 --seed 2)
mpi 2 "$TRAINER" "${run[@]}" --model cnn-bn --checkpoint-dir "$TMP/ck" >/dev/null
expect_error nonzero "has samples of shape \[1, 12, 12\].*expects samples of shape \[1, 8, 8\]" \
  mpi 2 "$MIRROR_EVAL" --checkpoint "$TMP/ck" --data "$TMP/img12.h5"
expect_error nonzero "holds model .* but this run builds .*\(first difference: layer 1 \('conv1'\) is .*\"padding\":1.* in the checkpoint but .*\"padding\":0.* in this run\)" \
  mpi 2 "$TRAINER" "${run[@]}" --model keras-cnn --epochs 2 --checkpoint-dir "$TMP/ck" --resume auto
# The same layout, another layer: cnn-bn with average instead of max pooling.
"$TRAINER" --print-model cnn-bn | sed 's/"maxpool2d"/"avgpool2d"/' >"$TMP/avg.json"
grep -q avgpool2d "$TMP/avg.json" || fail "--print-model cnn-bn has no maxpool2d to replace: $(cat "$TMP/avg.json")"
expect_error nonzero "holds another model than this run builds \(the same parameters, but layer 4 \('pool1'\) is .*maxpool2d.* in the checkpoint but .*avgpool2d.* in this run\)" \
  mpi 2 "$TRAINER" "${run[@]}" --model "$TMP/avg.json" --epochs 2 --checkpoint-dir "$TMP/ck" --resume auto
# The same model given as its printed file resumes (the description is canonical, not the --model text).
"$TRAINER" --print-model cnn-bn >"$TMP/cnn-bn.json"
mpi 2 "$TRAINER" "${run[@]}" --model "$TMP/cnn-bn.json" --epochs 2 --checkpoint-dir "$TMP/ck" --resume auto >"$TMP/ok.out" \
  || fail "cnn-bn printed as a file does not resume a cnn-bn checkpoint: $(cat "$TMP/ok.out")"
grep -q "resumed from" "$TMP/ok.out" || fail "no resume: $(cat "$TMP/ok.out")"
echo "ok: the same model as a file resumes its built-in's checkpoint"
