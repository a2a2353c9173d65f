#!/usr/bin/env bash
# keep_best.sh — --keep-best test_loss and --early-stop 3 on a run whose test loss improves, then worsens (a
# large lr on a noisy synthetic set), checked against the --metrics JSONL as the independent record: best.h5
# holds the step of the epoch with the lowest test_loss, survives --keep 2's pruning, and the run stops
# exactly 3 evaluations after it, with a final checkpoint. Interrupted mid-way and resumed, the run stops at
# the same epoch with a bit-identical best.h5. mirror-ckpt list marks best.h5, mirror-eval --best reads it.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5" --spread 3
args=(--data "$TMP/d.h5" --model mlp:64 --epochs 15 --lr 0.2 --progress off --keep 2 --keep-best test_loss
      --early-stop 3)
# 960 samples / (2 x 64) = 7 steps per epoch.
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/full" --metrics "$TMP/full.jsonl" >"$TMP/full.out"
grep -q "early stop: test_loss has not improved" "$TMP/full.out" || fail "no early stop line: $(cat "$TMP/full.out")"
/usr/bin/python3 - "$TMP/full.jsonl" "$TMP/full" <<'PY' || fail "best.h5 or the stop epoch disagrees with the metrics"
import json, sys, h5py
lines = [json.loads(l) for l in open(sys.argv[1])]
losses = [l["test_loss"] for l in lines]
best = min(range(len(losses)), key=lambda i: losses[i])
assert best > 0, "the test loss never improved after epoch 1: the case does not test anything"
assert len(lines) == best + 1 + 3, f"stopped after {len(lines)} epochs; best was epoch {best + 1}, patience 3"
assert len(lines) < 15, "did not stop early"
with h5py.File(sys.argv[2] + "/best.h5", "r") as h:
    step = int(h.attrs["step"])
assert step == lines[best]["step"], f"best.h5 holds step {step}, the best epoch ended at step {lines[best]['step']}"
print(f"ok: best epoch {best + 1} (step {step}, test_loss {losses[best]:.4f}); stopped after epoch {len(lines)}")
PY
last="$(ls "$TMP/full"/ckpt-*.h5 | tail -1)"
[ "$(basename "$last")" = "$(printf 'ckpt-%08d.h5' "$(tail -1 "$TMP/full.jsonl" | sed 's/.*"step":\([0-9]*\).*/\1/')")" ] \
  || fail "the final checkpoint $last is not the last epoch's"
"$MIRROR_CKPT" verify "$TMP/full/best.h5" >/dev/null || fail "best.h5 does not verify"
"$MIRROR_CKPT" list "$TMP/full" | grep -q "^best.h5 .*the best checkpoint" || fail "mirror-ckpt list does not show best.h5"
"$MIRROR_EVAL" --checkpoint "$TMP/full" --best --data "$TMP/d.h5" | grep -q "best.h5" || fail "mirror-eval --best"
"$MIRROR_EVAL" --checkpoint "$TMP/full" --data "$TMP/d.h5" | grep -q "$(basename "$last")" \
  || fail "mirror-eval DIR does not take the newest checkpoint"
echo "ok: list shows best.h5; mirror-eval --best reads it, without --best the newest"

# Interrupted at step 24 (mid-epoch 4) and resumed: the same stop, the same best.h5 bit for bit.
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/cut" --max-steps 24 >/dev/null
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/cut" --resume auto --metrics "$TMP/cut.jsonl" >"$TMP/cut.out"
grep -q "early stop" "$TMP/cut.out" || fail "the resumed run did not stop early: $(cat "$TMP/cut.out")"
[ "$(wc -l <"$TMP/cut.jsonl")" -eq "$(wc -l <"$TMP/full.jsonl")" ] || fail "the resumed run stopped at another epoch"
"$MIRROR_CKPT" diff "$TMP/full/best.h5" "$TMP/cut/best.h5" --tol 0 >/dev/null || fail "best.h5 of the resumed run differs"
echo "ok: interrupted at step 24 and resumed: stops after the same epoch, best.h5 identical"
