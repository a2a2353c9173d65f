#!/usr/bin/env bash
# precision.sh — --precision bf16 end to end. Where oneDNN has no bfloat16 kernels (held to AVX2 here with
# ONEDNN_MAX_CPU_ISA) the trainer, mirror-eval and mirror-generate refuse it with one error naming the
# instruction set. Where it has them: a tiny GPT's loss falls in bfloat16 and tracks float32's; N ranks x B ==
# 1 rank x N*B within 1e-3 after 20 steps (the kernels' reduction order may change with the batch); a cut and
# resumed run ends bit-identical to the uninterrupted one; a float32 run resumes in bfloat16 (checkpoints hold
# float32 weights); the metrics name the precision and the kernel; mirror-eval's bfloat16 loss is float32's within
# bfloat16's tolerance; mirror-generate runs in bfloat16; a tiny CNN learns in bfloat16; a diverging bfloat16 run
# stops with exit 5 as in float32. Skips (77) after the refusal on a CPU without the kernels.
source "$(dirname "$0")/../scripts/lib.sh"

word_text_data "$TMP/text.h5" 5
tiny_gpt "$TMP/tiny.json" 32 2 24 1

common=(--data "$TMP/text.h5" --model "$TMP/tiny.json" --train-steps 20 --optimizer adamw --lr 0.01 --warmup-steps 4
        --decay cosine --min-lr 0.001 --grad-clip 1 --seed 7 --progress off --checkpoint-every 10)

# --- the refusal where oneDNN has no bfloat16 kernels -------------------------------------------------------
expect_error 3 "no bfloat16 matrix kernels for avx2" \
  env ONEDNN_MAX_CPU_ISA=AVX2 "$MPIEXEC" -np 2 $MPIEXEC_FLAGS "$TRAINER" "${common[@]}" --batch-size 4 --precision bf16
mpi 1 "$TRAINER" "${common[@]}" --batch-size 8 --checkpoint-dir "$TMP/fp32" --metrics "$TMP/fp32.jsonl" \
  --eval-every-steps 20 --eval-batches 4 >"$TMP/fp32.log" || fail "float32: $(cat "$TMP/fp32.log")"
expect_error nonzero "no bfloat16 matrix kernels for avx2" \
  env ONEDNN_MAX_CPU_ISA=AVX2 "$MIRROR_EVAL" --checkpoint "$TMP/fp32" --data "$TMP/text.h5" --precision bf16
expect_error nonzero "no bfloat16 matrix kernels for avx2" \
  env ONEDNN_MAX_CPU_ISA=AVX2 "$(dirname "$MIRROR_EVAL")/mirror-generate" --checkpoint "$TMP/fp32" --prompt "The" \
  --precision bf16

probe="$(mpi 1 "$TRAINER" "${common[@]}" --batch-size 2 --train-steps 1 --precision bf16 2>&1)" || {
  grep -q "no bfloat16 matrix kernels" <<<"$probe" || fail "bf16 probe run: $probe"
  echo "skip: this CPU has no bfloat16 kernels in oneDNN: $(grep -o 'no bfloat16.*' <<<"$probe" | head -1)"
  exit 77
}
grep -Eq "compute bf16 \((brg|gemm|jit)[^)]*\)" <<<"$probe" || fail "the banner does not name the bf16 kernel: $probe"

# --- the loss falls and tracks float32's; the metrics name the precision --------------------------------------
mpi 1 "$TRAINER" "${common[@]}" --batch-size 8 --precision bf16 --checkpoint-dir "$TMP/np1" \
  --metrics "$TMP/np1.jsonl" --eval-every-steps 20 --eval-batches 4 >"$TMP/np1.log" || fail "1 rank bf16: $(cat "$TMP/np1.log")"
/usr/bin/python3 - "$TMP/np1.jsonl" "$TMP/fp32.jsonl" <<'PY' || fail "bf16 metrics against fp32's"
import json, math, sys
bf, fp = (json.loads(open(f).read().splitlines()[-1]) for f in sys.argv[1:3])
assert bf["precision"] == "bf16" and fp["precision"] == "fp32", (bf, fp)
assert bf["bf16_kernel"] != "none" and "bf16_kernel" not in fp, (bf, fp)
assert bf["train_loss"] < 0.8 * math.log(256), bf
assert abs(bf["test_loss"] - fp["test_loss"]) < 0.03, (bf["test_loss"], fp["test_loss"])
assert bf["test_loss"] != fp["test_loss"], "bf16 gave float32's exact loss"
print(f"ok: bf16 ({bf['bf16_kernel']}) test loss {bf['test_loss']:.4f} vs fp32 {fp['test_loss']:.4f}, "
      f"train loss {bf['train_loss']:.4f} below {0.8 * math.log(256):.4f}")
PY

# --- N ranks x B windows == 1 rank x N*B within 1e-3 -------------------------------------------------------------
# SGD with momentum: every parameter within 1e-3. AdamW: every parameter but the attention's key bias, whose true
# gradient is 0 (a constant added to every key changes no softmax): its gradient is rounding noise, which bfloat16
# makes larger than Adam's eps, and Adam turns noise of either sign into steps of lr, so there only |a - b| <=
# 2 lr per step is promised (float32's noise stays below eps, where Adam's steps are small).
sgd=("${common[@]}" --optimizer sgd --momentum 0.9 --lr 0.05 --precision bf16)
adam=("${common[@]}" --lr 0.001 --min-lr 0.0001 --precision bf16)
for n in 1 2 4; do
  mpi "$n" "$TRAINER" "${sgd[@]}" --batch-size $((8 / n)) --checkpoint-dir "$TMP/sgd$n" >/dev/null || fail "$n ranks sgd"
  mpi "$n" "$TRAINER" "${adam[@]}" --batch-size $((8 / n)) --checkpoint-dir "$TMP/adam$n" >/dev/null || fail "$n ranks adam"
  [ "$n" = 1 ] && continue
  "$MIRROR_CKPT" diff "$TMP/sgd1/ckpt-00000020.h5" "$TMP/sgd$n/ckpt-00000020.h5" --tol 1e-3 \
    || fail "$n ranks x $((8 / n)) windows differ from 1 rank x 8 by more than 1e-3 after 20 bf16 SGD steps"
  /usr/bin/python3 - "$TMP/adam1/ckpt-00000020.h5" "$TMP/adam$n/ckpt-00000020.h5" <<'PY' \
    || fail "$n ranks x $((8 / n)) windows against 1 rank x 8 after 20 bf16 AdamW steps"
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r")["params"] for f in sys.argv[1:3])
worst = {}
for name in a:
    d = np.abs(a[name][()].astype(np.float64) - b[name][()])
    if name.endswith("attn.qkv.bias"):
        c = d.size // 3
        assert d[c:2 * c].max() <= 2 * 0.001 * 20, (name, "key bias", d[c:2 * c].max())
        d = np.concatenate([d[:c], d[2 * c:]])
    worst[name] = d.max()
name = max(worst, key=worst.get)
assert worst[name] <= 1e-3, (name, worst[name])
print(f"  AdamW: largest difference {worst[name]:.2e} ({name}), key bias aside")
PY
  echo "ok: $n ranks x $((8 / n)) windows == 1 rank x 8 within 1e-3 after 20 bf16 steps (SGD; AdamW but the key bias)"
done

# --- resume bit-identical; a float32 run resumed in bfloat16 ------------------------------------------------------
mpi 2 "$TRAINER" "${adam[@]}" --batch-size 4 --max-steps 13 --checkpoint-dir "$TMP/cut" >/dev/null
mpi 2 "$TRAINER" "${adam[@]}" --batch-size 4 --checkpoint-dir "$TMP/cut" --resume auto \
  >"$TMP/cut.log" || fail "resume: $(cat "$TMP/cut.log")"
grep -q "resumed from" "$TMP/cut.log" || fail "did not resume: $(cat "$TMP/cut.log")"
"$MIRROR_CKPT" diff "$TMP/adam2/ckpt-00000020.h5" "$TMP/cut/ckpt-00000020.h5" --tol 0 \
  || fail "a bf16 run cut at step 13 and resumed is not bit-identical to the uninterrupted one"
echo "ok: a bf16 run cut at step 13 and resumed ends bit-identical"
mpi 2 "$TRAINER" "${adam[@]}" --precision fp32 --batch-size 4 --max-steps 10 --checkpoint-dir "$TMP/switch" >/dev/null
mpi 2 "$TRAINER" "${adam[@]}" --batch-size 4 --checkpoint-dir "$TMP/switch" --resume auto \
  >"$TMP/switch.log" || fail "fp32 -> bf16 resume: $(cat "$TMP/switch.log")"
grep -q "compute bf16" "$TMP/switch.log" && grep -q "resumed from" "$TMP/switch.log" \
  || fail "the resumed run is not bf16: $(head -3 "$TMP/switch.log")"
"$MIRROR_CKPT" diff "$TMP/adam2/ckpt-00000020.h5" "$TMP/switch/ckpt-00000020.h5" --tol 1e-2 >/dev/null \
  || fail "fp32 for 10 steps then bf16 for 10 is far from bf16 throughout"
echo "ok: a float32 run resumes in bfloat16 from its float32 checkpoint"

# --- mirror-eval and mirror-generate in bfloat16 ---------------------------------------------------------------------
fp_eval="$("$MIRROR_EVAL" --checkpoint "$TMP/np1" --data "$TMP/text.h5" 2>/dev/null)"
bf_eval="$("$MIRROR_EVAL" --checkpoint "$TMP/np1" --data "$TMP/text.h5" --precision bf16 2>"$TMP/eval.err")"
grep -q "compute bf16" "$TMP/eval.err" || fail "mirror-eval does not say it computes in bf16: $(cat "$TMP/eval.err")"
/usr/bin/python3 -c "
import sys
fp, bf = (float(s.split()[1]) for s in sys.argv[1:3])
assert abs(fp - bf) < 1e-2 * fp and sys.argv[1] != sys.argv[2], sys.argv[1:3]
print(f'ok: mirror-eval loss in bf16 {bf:.4f}, in fp32 {fp:.4f}')
" "$fp_eval" "$bf_eval" || fail "mirror-eval bf16 against fp32: '$bf_eval' vs '$fp_eval'"
text="$("$(dirname "$MIRROR_EVAL")/mirror-generate" --checkpoint "$TMP/np1" --prompt "The" --max-new-tokens 30 \
  --temperature 0 --precision bf16 2>"$TMP/gen.err")" || fail "mirror-generate bf16: $(cat "$TMP/gen.err")"
[ "${#text}" -ge 31 ] && [ "${text:0:3}" = "The" ] || fail "mirror-generate bf16 wrote '$text'"
grep -q "compute bf16" "$TMP/gen.err" || fail "mirror-generate does not name bf16: $(cat "$TMP/gen.err")"
echo "ok: mirror-generate in bf16: $text"

# --- a tiny CNN learns in bfloat16; divergence stops as in float32 -----------------------------------------------
image_data "$TMP/img.h5"
cat >"$TMP/cnn.json" <<'JSON'
{"layers": [
  {"type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1}, {"type": "batchnorm2d"}, {"type": "relu"},
  {"type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1}, {"type": "relu"},
  {"type": "maxpool2d", "kernel": 2, "stride": 2}, {"type": "flatten"}, {"type": "linear", "out_features": "classes"}]}
JSON
mpi 2 "$TRAINER" --data "$TMP/img.h5" --model "$TMP/cnn.json" --epochs 3 --batch-size 16 --lr 0.05 --seed 3 \
  --progress off --precision bf16 --metrics "$TMP/cnn.jsonl" >"$TMP/cnn.log" 2>&1 || fail "CNN bf16: $(cat "$TMP/cnn.log")"
/usr/bin/python3 - "$TMP/cnn.jsonl" <<'PY' || fail "the CNN did not learn in bf16: $(cat "$TMP/cnn.log")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[-1]["precision"] == "bf16", lines[-1]
assert lines[-1]["train_loss"] < 0.5 * lines[0]["train_loss"] or lines[-1]["test_acc"] > 0.9, lines
print(f"ok: a tiny CNN in bf16: train loss {lines[0]['train_loss']:.3f} -> {lines[-1]['train_loss']:.3f}, "
      f"test accuracy {lines[-1]['test_acc']:.3f}")
PY
expect_error 5 "training diverged at step" \
  mpi 2 "$TRAINER" "${common[@]}" --batch-size 4 --precision bf16 --lr 1e30 --grad-clip 0 --warmup-steps 0
