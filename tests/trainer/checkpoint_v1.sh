#!/usr/bin/env bash
# checkpoint_v1.sh — a checkpoint in format version 1, written here by h5py after docs/checkpoint-format.md
# (not by Mirror's writer), still verifies, evaluates to the loss, accuracy and probabilities numpy computes
# for the same MLP, and resumes training, which then writes the current format version (3) with the sample shape.
source "$(dirname "$0")/../scripts/lib.sh"
py=/usr/bin/python3  # Debian's python3-h5py and python3-numpy belong to it, not to another python3 on PATH
synth_data "$TMP/d.h5"
expected="$("$py" "$(dirname "$0")/write_v1_checkpoint.py" "$TMP/d.h5" "$TMP/v1.h5" 8)"

"$MIRROR_CKPT" verify "$TMP/v1.h5" | grep -q "valid" || fail "a version-1 checkpoint does not verify"
out="$("$MIRROR_CKPT" inspect "$TMP/v1.h5")"
echo "$out" | grep -Eq "format version 1" || fail "inspect does not say version 1: $out"
echo "$out" | grep -Eq "model mlp:8: samples \[20\] \(20 features\), 4 classes" || fail "inspect: $out"

out="$(mpi 2 "$MIRROR_EVAL" --checkpoint "$TMP/v1.h5" --data "$TMP/d.h5" --predict "$TMP/pred.csv")"
"$py" - "$expected" "$out" "$TMP/pred.csv" "$TMP/v1.h5.expected.csv" <<'PY'
import sys
_, want_loss, _, want_acc = sys.argv[1].split()
got = next(l for l in sys.argv[2].splitlines() if l.startswith("loss "))
_, got_loss, _, got_acc = got.split()
assert abs(float(got_loss) - float(want_loss)) <= 6e-5, (got_loss, want_loss)
assert abs(float(got_acc) - float(want_acc)) <= 6e-5, (got_acc, want_acc)
rows = [l.strip().split(",") for l in open(sys.argv[3]).readlines()[1:]]
ref = [l.strip().split(",") for l in open(sys.argv[4])]
assert len(rows) == len(ref) == 200, (len(rows), len(ref))
for r, e in zip(rows, ref):
    assert r[0] == e[0], (r, e)
    if float(e[2]) > 1e-4:  # not a near tie
        assert r[2] == e[1], ("predicted", r, e)
    for p, q in zip(r[3:], e[3:]):
        assert abs(float(p) - float(q)) <= 1e-5, ("probability", r, e)
print("ok: mirror-eval of a version-1 checkpoint equals numpy's MLP (loss, accuracy, 200 x 4 probabilities)")
PY

# Resuming it (an epoch boundary: any rank count) trains on and writes the current version (3).
mpi 2 "$TRAINER" --data "$TMP/d.h5" --model mlp:8 --epochs 2 --batch-size 16 --progress off \
  --checkpoint-dir "$TMP/ck" --resume "$TMP/v1.h5" >"$TMP/train.out" || fail "resume from v1: $(cat "$TMP/train.out")"
grep -q "resumed from $TMP/v1.h5 at step 30 (epoch 2, micro-batch 0)" "$TMP/train.out" || fail "$(cat "$TMP/train.out")"
out="$("$MIRROR_CKPT" inspect "$TMP/ck/ckpt-00000060.h5")"
echo "$out" | grep -Eq "format version 5" || fail "the resumed run's checkpoint is not version 5: $out"
echo "ok: a version-1 checkpoint resumes; the run writes version 5"
