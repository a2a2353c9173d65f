#!/usr/bin/env bash
# resume.sh — an interrupted-and-resumed run ends exactly where an uninterrupted one does (2 ranks, SGD with
# momentum, cosine schedule, mid-epoch checkpoints), --resume auto skips a corrupt newest checkpoint, and a
# checkpoint of another model shape is refused with a clear message.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
common=(--data "$TMP/d.h5" --model mlp:24 --epochs 3 --batch-size 16 --eval-every 1 --progress off
        --checkpoint-every 25 --keep 0 --decay cosine --warmup-steps 10 --seed 3)
# 960 samples / (2 x 16) = 30 steps per epoch, 90 in all.
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/full" --metrics "$TMP/full.jsonl" >/dev/null
[ -f "$TMP/full/ckpt-00000090.h5" ] || fail "the uninterrupted run left no ckpt-00000090.h5: $(ls "$TMP/full")"

# Interrupted at step 40 (mid-epoch 2), resumed from the newest checkpoint.
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/cut" --max-steps 40 >/dev/null
[ -f "$TMP/cut/ckpt-00000040.h5" ] || fail "no checkpoint at the stop: $(ls "$TMP/cut")"
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/cut" --resume auto --metrics "$TMP/cut.jsonl" >"$TMP/resume.out"
grep -q "resumed from .*ckpt-00000040.h5 at step 40" "$TMP/resume.out" || fail "no resume line: $(cat "$TMP/resume.out")"
"$MIRROR_CKPT" diff "$TMP/full/ckpt-00000090.h5" "$TMP/cut/ckpt-00000090.h5" --tol 0 \
  || fail "resumed run differs from the uninterrupted one"
echo "ok: interrupted at step 40 and resumed == uninterrupted (bit-exact)"
# The epoch lines of the resumed run's metrics match the uninterrupted run's for loss and accuracy.
python3 - "$TMP/full.jsonl" "$TMP/cut.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    for k in ("epoch", "step", "train_loss", "train_acc", "test_loss", "test_acc"):
        assert abs(x[k] - y[k]) <= 1e-9 * max(1, abs(x[k])), (k, x[k], y[k])
print("ok: metrics of the resumed run equal the uninterrupted run's")
PY

# A corrupt newest checkpoint is skipped by --resume auto.
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/bad" --max-steps 50 >/dev/null
truncate -s 300 "$TMP/bad/ckpt-00000050.h5"
mpi 2 "$TRAINER" "${common[@]}" --checkpoint-dir "$TMP/bad" --resume auto >"$TMP/bad.out" 2>&1
grep -q "skipping corrupt checkpoint .*ckpt-00000050.h5" "$TMP/bad.out" || fail "corrupt checkpoint not reported: $(cat "$TMP/bad.out")"
grep -q "resumed from .*ckpt-00000025.h5" "$TMP/bad.out" || fail "did not fall back to step 25: $(cat "$TMP/bad.out")"
"$MIRROR_CKPT" diff "$TMP/full/ckpt-00000090.h5" "$TMP/bad/ckpt-00000090.h5" --tol 0 || fail "fallback run differs"
echo "ok: corrupt newest checkpoint skipped; resumed from step 25 to the same end"

# Another model shape is refused, naming both.
expect_error nonzero "holds model 'mlp:24'.*builds 'mlp:32'" \
  mpi 2 "$TRAINER" "${common[@]}" --model mlp:32 --checkpoint-dir "$TMP/full" --resume auto

# With augmentation and lr milestones: interrupted mid-epoch and resumed == uninterrupted, bit for bit; a
# resume without the checkpoint's augmentation flags is refused.
image_data "$TMP/img.h5"
aug=(--data "$TMP/img.h5" --model mlp:16 --epochs 4 --batch-size 16 --eval-every 1 --progress off --keep 0
     --checkpoint-every 10 --random-crop 2 --hflip --lr-milestones 1,3 --seed 3)
# 800 samples / (2 x 16) = 25 steps per epoch, 100 in all.
mpi 2 "$TRAINER" "${aug[@]}" --checkpoint-dir "$TMP/aug-full" >/dev/null
mpi 2 "$TRAINER" "${aug[@]}" --checkpoint-dir "$TMP/aug-cut" --max-steps 40 >/dev/null
mpi 2 "$TRAINER" "${aug[@]}" --checkpoint-dir "$TMP/aug-cut" --resume auto >/dev/null
"$MIRROR_CKPT" diff "$TMP/aug-full/ckpt-00000100.h5" "$TMP/aug-cut/ckpt-00000100.h5" --tol 0 \
  || fail "augmented run resumed at step 40 differs from the uninterrupted one"
echo "ok: with --random-crop 2 --hflip --lr-milestones 1,3, resumed at step 40 == uninterrupted (bit-exact)"
plain=()
for a in "${aug[@]}"; do [ "$a" = --hflip ] || plain+=("$a"); done
expect_error 3 "trained with --random-crop 2 --hflip, this run uses --random-crop 0 \(no --hflip\)" \
  mpi 2 "$TRAINER" "${plain[@]}" --random-crop 0 --checkpoint-dir "$TMP/aug-cut" --resume auto
