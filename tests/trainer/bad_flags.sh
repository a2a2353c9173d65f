#!/usr/bin/env bash
# bad_flags.sh — the trainer refuses bad flags before any work, naming the flag, with a non-zero exit on every
# rank and no hang; --help comes from the same table.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
d=(--data "$TMP/d.h5" --progress off --epochs 1)
expect_error 0 "--global-batch-size" "$TRAINER" --help
expect_error 2 "--lr" mpi 2 "$TRAINER" "${d[@]}" --lr -1
expect_error 2 "--batch-size" mpi 2 "$TRAINER" "${d[@]}" --batch-size 0
expect_error 2 "--global-batch-size 7 does not divide by the 2 ranks" mpi 2 "$TRAINER" "${d[@]}" --global-batch-size 7
expect_error 2 "--device" mpi 1 "$TRAINER" "${d[@]}" --device tpu
expect_error 2 "--shard-optimizer" mpi 2 "$TRAINER" "${d[@]}" --shard-optimizer sometimes
expect_error 2 "--checkpoint-every 'often'" mpi 1 "$TRAINER" "${d[@]}" --checkpoint-every often
expect_error 2 "--resume auto needs --checkpoint-dir" mpi 1 "$TRAINER" "${d[@]}" --resume auto
expect_error 2 "--data is required" mpi 1 "$TRAINER" --epochs 1
expect_error nonzero "cnn:3" mpi 2 "$TRAINER" "${d[@]}" --model cnn:3
expect_error nonzero "mlp:0" mpi 1 "$TRAINER" "${d[@]}" --model mlp:0
expect_error nonzero "no CUDA GPU is visible|no GPU" mpi 1 "$TRAINER" "${d[@]}" --device cuda
expect_error nonzero "missing.h5" mpi 2 "$TRAINER" --data "$TMP/missing.h5" --epochs 1
expect_error nonzero "ranks? x batch|fit" mpi 2 "$TRAINER" "${d[@]}" --batch-size 4096
