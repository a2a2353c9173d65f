#!/usr/bin/env bash
# eval_ckpt.sh — mirror-eval and mirror-ckpt on checkpoints made by a short trainer run: list/inspect/verify/diff,
# evaluation under 1 and 3 ranks giving the same per-sample predictions with every test sample exactly once,
# accuracy consistent with the prediction file, and the corrupt-file cases. The trainer's banner names the host.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
mpi 2 "$TRAINER" --data "$TMP/d.h5" --model mlp:24 --epochs 2 --batch-size 16 --progress off \
  --checkpoint-dir "$TMP/ck" --metrics "$TMP/m.jsonl" >"$TMP/train.out"
# The banner's hosts line, against this machine's own name.
grep -qx "  2 ranks on 1 host ($(hostname))" "$TMP/train.out" \
  || fail "banner: no '2 ranks on 1 host ($(hostname))' line: $(head -3 "$TMP/train.out")"

out="$("$MIRROR_CKPT" list "$TMP/ck")"
echo "$out" | grep -Eq "ckpt-00000030.h5 +30 +1 .*valid" || fail "list: $out"
echo "$out" | grep -Eq "ckpt-00000060.h5 +60 +2 .*valid" || fail "list: $out"
out="$("$MIRROR_CKPT" inspect "$TMP/ck/ckpt-00000060.h5")"
for want in '"model": "mlp:24"' 'fc1.weight +\[24, 20\]' 'fc2.bias +\[4\]' 'momentum'; do
  echo "$out" | grep -Eq "$want" || fail "inspect lacks /$want/: $out"
done
"$MIRROR_CKPT" verify "$TMP/ck/ckpt-00000060.h5" >/dev/null || fail "verify of a good checkpoint failed"
"$MIRROR_CKPT" diff "$TMP/ck/ckpt-00000060.h5" "$TMP/ck/ckpt-00000060.h5" --tol 0 >/dev/null || fail "diff with itself"
expect_error 1 "DIFFERENT" "$MIRROR_CKPT" diff "$TMP/ck/ckpt-00000030.h5" "$TMP/ck/ckpt-00000060.h5" --tol 1e-6
echo "ok: list, inspect, verify, diff"

# Evaluation: 1 rank and 3 ranks (3 does not divide 200) give the same rows; each test index exactly once.
mpi 1 "$MIRROR_EVAL" --checkpoint "$TMP/ck" --data "$TMP/d.h5" --batch-size 64 --predict "$TMP/p1.csv" >"$TMP/e1.out"
mpi 3 "$MIRROR_EVAL" --checkpoint "$TMP/ck" --data "$TMP/d.h5" --batch-size 7 --predict "$TMP/p3.csv" >"$TMP/e3.out"
grep -q "ckpt-00000060.h5" "$TMP/e1.out" || fail "a directory must mean its newest checkpoint: $(cat "$TMP/e1.out")"
python3 - "$TMP/p1.csv" "$TMP/p3.csv" "$TMP/e1.out" "$TMP/e3.out" "$TMP/m.jsonl" <<'PY'
import csv, json, re, sys
def rows(p):
    with open(p) as f:
        r = list(csv.reader(f))
    assert r[0][:3] == ["index", "label", "predicted"] and len(r[0]) == 3 + 4, r[0]
    return r[1:]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert [int(x[0]) for x in a] == list(range(200)), "1 rank: indices are not 0..199 once each"
assert [int(x[0]) for x in b] == list(range(200)), "3 ranks: indices are not 0..199 once each"
for x, y in zip(a, b):
    assert x[:3] == y[:3], (x, y)
    assert all(abs(float(p) - float(q)) < 1e-5 for p, q in zip(x[3:], y[3:])), (x, y)
    assert abs(sum(float(p) for p in x[3:]) - 1) < 1e-4
    assert int(x[2]) == max(range(4), key=lambda c: float(x[3 + c]))
acc = sum(x[1] == x[2] for x in a) / 200
for out in sys.argv[3:5]:
    printed = float(re.search(r"accuracy ([0-9.]+)", open(out).read()).group(1))
    assert abs(printed - acc) < 1e-4, (out, printed, acc)
last = json.loads(open(sys.argv[5]).read().splitlines()[-1])
assert abs(last["test_acc"] - acc) < 1e-9, (last["test_acc"], acc)
print(f"ok: predictions equal under 1 and 3 ranks; accuracy {acc:.4f} matches the file and the trainer's metrics")
PY

# Corrupt, truncated and foreign files: clear errors, no crash.
cp "$TMP/ck/ckpt-00000060.h5" "$TMP/bad.h5"
# Damage the middle of a parameter tensor's data, found by h5dump (its byte offset in the file), not by
# guessing where the file's middle falls.
h5dump -p -H -d /params/fc1.weight "$TMP/bad.h5" >"$TMP/layout.txt"
python3 - "$TMP/bad.h5" "$TMP/layout.txt" <<'PY'
import re, sys
p = sys.argv[1]; layout = open(sys.argv[2]).read()
offset = int(re.search(r"OFFSET (\d+)", layout).group(1)); size = int(re.search(r"SIZE (\d+)", layout).group(1))
b = bytearray(open(p, "rb").read())
b[offset + size // 2] ^= 0xFF; b[offset + size // 2 + 1] ^= 0xFF
open(p, "wb").write(bytes(b))
PY
expect_error 1 "CORRUPT" "$MIRROR_CKPT" verify "$TMP/bad.h5"
head -c 1000 "$TMP/ck/ckpt-00000060.h5" >"$TMP/trunc.h5"
expect_error 1 "CORRUPT.*(truncated|damaged)" "$MIRROR_CKPT" verify "$TMP/trunc.h5"
echo "just text" >"$TMP/text.h5"
expect_error 2 "not an HDF5 file" "$MIRROR_CKPT" inspect "$TMP/text.h5"
expect_error 2 "is an HDF5 file but not a Mirror checkpoint" "$MIRROR_CKPT" inspect "$TMP/d.h5"
expect_error 2 "does not exist" "$MIRROR_CKPT" list "$TMP/nowhere"
expect_error nonzero "truncated|damaged" mpi 1 "$MIRROR_EVAL" --checkpoint "$TMP/trunc.h5" --data "$TMP/d.h5"
expect_error nonzero "no valid checkpoint" mpi 1 "$MIRROR_EVAL" --checkpoint "$TMP" --data "$TMP/d.h5"
