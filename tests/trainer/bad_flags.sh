#!/usr/bin/env bash
# bad_flags.sh — the trainer refuses bad flags before any work, naming the flag, with a non-zero exit on every
# rank and no hang; --help comes from the same table. A value out of range reads as a sentence that says what is
# allowed ("--batch-size must be a positive integer, got 0"), never CLI11's "not in range 0 to 1.79e308".
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
d=(--data "$TMP/d.h5" --progress off --epochs 1)
expect_error 0 "--global-batch-size" "$TRAINER" --help
expect_error 2 "--lr must be a number > 0, got -1" mpi 2 "$TRAINER" "${d[@]}" --lr -1
expect_error 2 "--batch-size must be a positive integer, got 0" mpi 2 "$TRAINER" "${d[@]}" --batch-size 0
expect_error 2 "--batch-size must be a positive integer, got 'abc'" mpi 1 "$TRAINER" "${d[@]}" --batch-size abc
expect_error 2 "--batch-size must be a positive integer, got 2.5" mpi 1 "$TRAINER" "${d[@]}" --batch-size 2.5
expect_error 2 "--epochs must be an integer from 1 to 1000000, got 0" mpi 1 "$TRAINER" "${d[@]}" --epochs 0
expect_error 2 "--max-steps must be a non-negative integer, got -3" mpi 1 "$TRAINER" "${d[@]}" --max-steps -3
expect_error 2 "--momentum must be a number in \[0, 1\), got 1" mpi 1 "$TRAINER" "${d[@]}" --momentum 1
expect_error 2 "--beta2 must be a number in \[0, 1\), got 1.5" mpi 1 "$TRAINER" "${d[@]}" --beta2 1.5
expect_error 2 "--weight-decay must be a number >= 0, got -0.1" mpi 1 "$TRAINER" "${d[@]}" --weight-decay -0.1
expect_error 2 "--timeout must be a number in \[0.1, 86400\], got 0" mpi 1 "$TRAINER" "${d[@]}" --timeout 0
expect_error 2 "--decay must be one of none, cosine, step, got 'linear'" mpi 1 "$TRAINER" "${d[@]}" --decay linear
out="$("$TRAINER" "${d[@]}" --batch-size 0 2>&1)" || true
if echo "$out" | grep -Eq "not in range|179769"; then fail "CLI11's range text leaked: $out"; fi
expect_error 2 "--global-batch-size 7 does not divide by the 2 ranks" mpi 2 "$TRAINER" "${d[@]}" --global-batch-size 7
expect_error 2 "--device must be one of auto, cpu, cuda, got 'tpu'" mpi 1 "$TRAINER" "${d[@]}" --device tpu
expect_error 2 "--shard-optimizer must be one of auto, on, off, got 'sometimes'" mpi 2 "$TRAINER" "${d[@]}" \
  --shard-optimizer sometimes
expect_error 2 "--host-transport must be one of auto, shm, hierarchical, mpi, got 'tcp'" mpi 2 "$TRAINER" "${d[@]}" \
  --host-transport tcp
expect_error 2 "--check-collectives must be one of on, off, got 'maybe'" mpi 1 "$TRAINER" "${d[@]}" \
  --check-collectives maybe
expect_error 2 "--checkpoint-every must be a positive number of steps or 'epoch', got 'often'" mpi 1 "$TRAINER" \
  "${d[@]}" --checkpoint-every often
expect_error 2 "--checkpoint-every must be a positive number of steps or 'epoch', got '0'" mpi 1 "$TRAINER" \
  "${d[@]}" --checkpoint-every 0
expect_error 2 "--resume auto needs --checkpoint-dir" mpi 1 "$TRAINER" "${d[@]}" --resume auto
expect_error 2 "--data is required" mpi 1 "$TRAINER" --epochs 1
expect_error nonzero "cnn:3" mpi 2 "$TRAINER" "${d[@]}" --model cnn:3
expect_error nonzero "mlp:0" mpi 1 "$TRAINER" "${d[@]}" --model mlp:0
# With no GPU visible (hidden where the machine has one), --device cuda is an error that says so.
CUDA_VISIBLE_DEVICES= expect_error nonzero "no CUDA GPU is visible|no GPU" mpi 1 "$TRAINER" "${d[@]}" --device cuda
expect_error nonzero "missing.h5" mpi 2 "$TRAINER" --data "$TMP/missing.h5" --epochs 1
expect_error nonzero "ranks? x batch|fit" mpi 2 "$TRAINER" "${d[@]}" --batch-size 4096

# mirror-eval and mirror-ckpt say it the same way.
expect_error 2 "--batch-size must be a positive integer, got 0" "$MIRROR_EVAL" --checkpoint "$TMP" --data "$TMP/d.h5" \
  --batch-size 0
expect_error 2 "--device must be one of auto, cpu, cuda, got 'gpu'" "$MIRROR_EVAL" --checkpoint "$TMP" \
  --data "$TMP/d.h5" --device gpu
expect_error 2 "--tol must be a number >= 0, got -1" "$MIRROR_CKPT" diff a.h5 b.h5 --tol -1

# mirror-data's range errors are sentences too (its validators are mirror/cli_checks.h's), exit 2.
expect_error 2 "--test-fraction must be a number in \[0, 1\], got 1.5" "$MIRROR_DATA" import x.npz --out o.h5 --test-fraction 1.5
expect_error 2 "--train must be a positive integer, got 0" "$MIRROR_DATA" synth --out "$TMP/o.h5" --train 0
expect_error 2 "--classes must be an integer from 2 to 1048576, got 1" "$MIRROR_DATA" synth --out "$TMP/o.h5" --classes 1
expect_error 2 "--gzip must be an integer from 0 to 9, got 10" "$MIRROR_DATA" fashion-mnist --out "$TMP/o.h5" --gzip 10
out="$("$MIRROR_DATA" synth --out "$TMP/o.h5" --shards 0 2>&1 || true)"
if echo "$out" | grep -Eq "not in range|Value "; then fail "CLI11's range text leaked from mirror-data: $out"; fi
# The new trainer flags' values, and combinations.
expect_error 2 "--lr-milestones must be epochs in ascending order, like 3,7, got '7,3'" mpi 1 "$TRAINER" "${d[@]}" --lr-milestones 7,3
expect_error 2 "--lr-milestones is a schedule of its own" mpi 1 "$TRAINER" "${d[@]}" --lr-milestones 3 --decay cosine
expect_error 2 "--keep-best must be one of none, test_acc, test_loss, train_loss, train_acc, got 'acc'" mpi 1 "$TRAINER" "${d[@]}" --keep-best acc
expect_error 2 "--keep-best needs --checkpoint-dir" mpi 1 "$TRAINER" "${d[@]}" --keep-best test_acc
expect_error 2 "--random-crop must be an integer from 0 to 1024, got -1" mpi 1 "$TRAINER" "${d[@]}" --random-crop -1
