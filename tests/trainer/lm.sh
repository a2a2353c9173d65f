#!/usr/bin/env bash
# lm.sh — language models end to end: a byte-level token dataset from a text (mirror-data text), a tiny GPT
# (odd sizes: 12 channels, 3 heads, context 9, two blocks, head tied to the embedding) trained data-parallel.
# N ranks x B windows == 1 rank x N*B after 20 steps (AdamW, warmup + cosine over --train-steps, gradient
# clipping that bites, sharded and unsharded optimizer steps); the clip against its definition, also with fp16
# gradients; a run cut by --max-steps and resumed, and one whose rank is killed and restarted by mirrorrun, end
# bit-identical to the uninterrupted run; the metrics lines (the schedule spanning --train-steps, recorded in the
# checkpoint); mirror-eval's loss against an independent numpy forward of the checkpoint's tensors;
# --print-model gpt-nano's file training bit for bit as the built-in; bad inputs.
source "$(dirname "$0")/../scripts/lib.sh"

word_text_data "$TMP/text.h5" 3
tiny_gpt "$TMP/tiny.json" 12 3 9 2

common=(--data "$TMP/text.h5" --model "$TMP/tiny.json" --train-steps 20 --optimizer adamw --lr 0.01
        --weight-decay 0.1 --warmup-steps 4 --decay cosine --min-lr 0.001 --grad-clip 0.5 --seed 7 --progress off
        --checkpoint-every 10)

# --- N ranks x B windows == 1 rank x N*B ------------------------------------------------------------------------
mpi 1 "$TRAINER" "${common[@]}" --batch-size 8 --checkpoint-dir "$TMP/np1" --metrics "$TMP/np1.jsonl" >"$TMP/np1.log" \
  || fail "1 rank: $(cat "$TMP/np1.log")"
grep -q "windows of 9 tokens" "$TMP/np1.log" || fail "the banner does not give the window: $(head -5 "$TMP/np1.log")"
grep -q "gradient norm clipped to 0.5" "$TMP/np1.log" || fail "no clipping line in the banner"
for n in 2 4; do
  for shard in on off; do
    [ "$n" = 4 ] && [ "$shard" = off ] && continue
    mpi "$n" "$TRAINER" "${common[@]}" --batch-size $((8 / n)) --shard-optimizer $shard \
      --checkpoint-dir "$TMP/np$n-$shard" >"$TMP/np$n.log" || fail "$n ranks: $(cat "$TMP/np$n.log")"
    "$MIRROR_CKPT" diff "$TMP/np1/ckpt-00000020.h5" "$TMP/np$n-$shard/ckpt-00000020.h5" --tol 1e-5 \
      || fail "$n ranks x $((8 / n)) windows (--shard-optimizer $shard) differ from 1 rank x 8 after 20 steps"
    echo "ok: $n ranks x $((8 / n)) windows == 1 rank x 8 after 20 steps (--shard-optimizer $shard)"
  done
done
mpi 2 "$TRAINER" "${common[@]}" --batch-size 4 --grad-clip 0 --checkpoint-dir "$TMP/noclip" >/dev/null
if "$MIRROR_CKPT" diff "$TMP/np1/ckpt-00000020.h5" "$TMP/noclip/ckpt-00000020.h5" --tol 1e-5 >/dev/null; then
  fail "--grad-clip 0.5 trained the same as no clipping: the clip does not bite"
fi
echo "ok: the clipping changes the result (it bites)"

# --- the clipping against its definition: one SGD step (no momentum) at lr L and at 2L gives the gradient g
# and the start p0; a clipped step must give p0 - L g min(1, C / (|g| + 1e-6)), and the metrics its norm |g|.
sgd=(--data "$TMP/text.h5" --model "$TMP/tiny.json" --train-steps 1 --optimizer sgd --momentum 0 --seed 7
     --progress off --eval-every 0 --batch-size 4)
mpi 2 "$TRAINER" "${sgd[@]}" --lr 0.1 --checkpoint-dir "$TMP/sgd1" >/dev/null
mpi 2 "$TRAINER" "${sgd[@]}" --lr 0.2 --checkpoint-dir "$TMP/sgd2" >/dev/null
mpi 2 "$TRAINER" "${sgd[@]}" --lr 0.1 --grad-clip 0.3 --checkpoint-dir "$TMP/sgdc" --metrics "$TMP/sgdc.jsonl" >/dev/null
# The same step with the gradients sent in fp16 (loss scale 2^16): the norm is the unscaled gradient's.
mpi 2 "$TRAINER" "${sgd[@]}" --lr 0.1 --grad-clip 0.3 --grad-dtype fp16 --checkpoint-dir "$TMP/sgdh" \
  --metrics "$TMP/sgdh.jsonl" >/dev/null
/usr/bin/python3 - "$TMP" <<'PY' || fail "clipping against its definition"
import json, sys
import h5py, numpy as np
t = sys.argv[1]
def params(d):
    with h5py.File(f"{t}/{d}/ckpt-00000001.h5", "r") as f:
        return {k: np.asarray(f["params"][k], np.float64) for k in f["params"]}
p1, p2, pc = params("sgd1"), params("sgd2"), params("sgdc")
g = {k: (p1[k] - p2[k]) / 0.1 for k in p1}
p0 = {k: 2 * p1[k] - p2[k] for k in p1}
norm = np.sqrt(sum((v ** 2).sum() for v in g.values()))
factor = min(1.0, 0.3 / (norm + 1e-6))
assert factor < 0.9, f"the gradient norm {norm} is too small for the test: the clip does not bite"
worst = max(np.abs(pc[k] - (p0[k] - 0.1 * factor * g[k])).max() for k in p1)
assert worst < 1e-6, worst
reported = json.loads(open(f"{t}/sgdc.jsonl").read().splitlines()[-1])["grad_norm"]
assert abs(reported - norm) < 1e-3 * norm, (reported, norm)
print(f"ok: clipped step == p0 - lr g min(1, C/|g|) within {worst:.1e}; |g| {norm:.4f}, reported {reported:.4f}")
half = json.loads(open(f"{t}/sgdh.jsonl").read().splitlines()[-1])["grad_norm"]
assert abs(half - norm) < 1e-3 * norm, (half, norm)  # fp16 rounds each element by at most 2^-11 relative
ph = params("sgdh")
worst_half = max(np.abs(ph[k] - (p0[k] - 0.1 * factor * g[k])).max() for k in p1)
assert worst_half < 1e-4, worst_half
print(f"ok: with --grad-dtype fp16 the clip sees the unscaled norm ({half:.4f}) and steps within {worst_half:.1e}")
PY

# --- the metrics: one line per evaluation, the last the end of training --------------------------------------
/usr/bin/python3 - "$TMP/np1.jsonl" "$TMP/np1/ckpt-00000020.h5" <<'PY' || fail "metrics of the 1-rank run"
import json, math, sys
import h5py
lines = [json.loads(l) for l in open(sys.argv[1])]
last = lines[-1]
assert last["step"] == 20, last
# --train-steps 20: the schedule spans them, so the last step (index 19) runs at cosine progress 15/16 after 4
# warmup steps, and the checkpoint records the 20.
want = 0.001 + (0.01 - 0.001) * 0.5 * (1 + math.cos(math.pi * 15 / 16))
assert abs(last["lr"] - want) < 1e-6 * want, (last["lr"], want)
with h5py.File(sys.argv[2], "r") as f:
    assert json.loads(bytes(f["config_json"][()]).decode())["train_steps"] == 20  # a dataset of uint8
for key in ("train_loss", "test_loss", "test_perplexity", "test_bits_per_byte", "tokens_per_s", "grad_norm"):
    assert isinstance(last.get(key), (int, float)), (key, last)
assert abs(last["test_perplexity"] - math.exp(last["test_loss"])) < 1e-9 * last["test_perplexity"], last
assert abs(last["test_bits_per_byte"] - last["test_loss"] / math.log(2)) < 1e-12, last
assert last["tokens_per_s"] > 0 and last["context"] == 9, last
assert last["train_loss"] < math.log(256), last
print("ok: the end-of-training line carries", ", ".join(sorted(last)))
PY
mpi 2 "$TRAINER" "${common[@]}" --batch-size 4 --eval-every-steps 6 --eval-batches 2 --metrics "$TMP/every.jsonl" \
  >"$TMP/every.log" || fail "--eval-every-steps: $(cat "$TMP/every.log")"
/usr/bin/python3 - "$TMP/every.jsonl" "$TMP/np1.jsonl" <<'PY' || fail "--eval-every-steps 6 metrics"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines] == [6, 12, 18, 20], [l["step"] for l in lines]
assert all("test_loss" in l and l["tokens_per_s"] > 0 for l in lines), lines
final = json.loads(open(sys.argv[2]).read().splitlines()[-1])
assert abs(lines[-1]["test_loss"] - final["test_loss"]) < 1e-5, (lines[-1], final)
print("ok: --eval-every-steps 6 writes lines at steps 6, 12, 18 and the end-of-training line at 20")
PY
grep -Eq "^step 20/20 \(epoch [0-9]+\)  loss [0-9.]+  test_loss [0-9.]+  perplexity [0-9.]+  bits/byte [0-9.]+  tokens/s [0-9]+" \
  "$TMP/every.log" || fail "the printed end-of-training line: $(tail -3 "$TMP/every.log")"
mpi 1 "$TRAINER" "${common[@]}" --batch-size 8 --eval-every 0 --metrics "$TMP/noeval.jsonl" >/dev/null
/usr/bin/python3 -c "
import json, sys
last = json.loads(open('$TMP/noeval.jsonl').read().splitlines()[-1])
assert not any(k.startswith('test_') for k in last) and last['tokens_per_s'] > 0, last
" || fail "--eval-every 0 left test_* keys in the last line"
echo "ok: --eval-every 0 leaves the test_* keys out"

if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/../../scripts/plot_metrics.py" "$TMP/every.jsonl" -o "$TMP/lm.png" >"$TMP/plot.out" \
    || fail "plot_metrics.py on a language model's metrics: $(cat "$TMP/plot.out")"
  grep -q "wrote $TMP/lm.png (4 line(s); last: step 20" "$TMP/plot.out" && [ -s "$TMP/lm.png" ] \
    || fail "plot_metrics.py: $(cat "$TMP/plot.out")"
  echo "ok: plot_metrics.py draws the language model's loss per step"
fi

# --- resume and restart end bit-identical ---------------------------------------------------------------------
mpi 2 "$TRAINER" "${common[@]}" --batch-size 4 --max-steps 13 --checkpoint-dir "$TMP/cut" >/dev/null
mpi 2 "$TRAINER" "${common[@]}" --batch-size 4 --checkpoint-dir "$TMP/cut" --resume auto >"$TMP/cut.log"
grep -q "resumed from .*ckpt-00000013.h5 at step 13" "$TMP/cut.log" || fail "no resume: $(head -8 "$TMP/cut.log")"
"$MIRROR_CKPT" diff "$TMP/np2-on/ckpt-00000020.h5" "$TMP/cut/ckpt-00000020.h5" --tol 0 \
  || fail "a run cut at step 13 and resumed differs from the uninterrupted one"
echo "ok: cut at step 13 and resumed == uninterrupted, bit for bit"
kill_rank_and_restart "$TMP/restart" "$TMP/restart.log" "${common[@]}" --batch-size 4 --checkpoint-every 3
"$MIRROR_CKPT" diff "$TMP/np2-on/ckpt-00000020.h5" "$TMP/restart/ckpt-00000020.h5" --tol 0 \
  || fail "a run restarted by mirrorrun differs from the uninterrupted one"
echo "ok: a rank killed, the job restarted by --max-restarts == uninterrupted, bit for bit"

# --- mirror-eval, and an independent numpy forward of the checkpoint --------------------------------------------
"$MIRROR_EVAL" --checkpoint "$TMP/np1" --data "$TMP/text.h5" >"$TMP/eval.out" 2>"$TMP/eval.err" \
  || fail "mirror-eval: $(cat "$TMP/eval.err")"
grep -Eq "^loss [0-9.]+  perplexity [0-9.]+  bits_per_byte [0-9.]+$" "$TMP/eval.out" || fail "mirror-eval: $(cat "$TMP/eval.out")"
[ "$(wc -l <"$TMP/eval.out")" = 1 ] || fail "mirror-eval printed more than one line: $(cat "$TMP/eval.out")"
mpi 3 "$MIRROR_EVAL" --checkpoint "$TMP/np1" --data "$TMP/text.h5" --batch-size 5 >"$TMP/eval3.out" 2>/dev/null
cmp -s "$TMP/eval.out" "$TMP/eval3.out" || fail "3 ranks: $(cat "$TMP/eval3.out"), 1 rank: $(cat "$TMP/eval.out")"
echo "ok: mirror-eval prints one line, the same on 1 and 3 ranks: $(cat "$TMP/eval.out")"
/usr/bin/python3 - "$TMP/np1/ckpt-00000020.h5" "$TMP/text.h5" "$TMP/np1.jsonl" "$TMP/eval.out" "$TMP/np1.log" <<'PY' \
  || fail "numpy forward"
import json, math, sys
import h5py, numpy as np
ckpt, data, metrics, evaluated = sys.argv[1:5]
with h5py.File(ckpt, "r") as f:
    P = {k: np.asarray(f["params"][k], dtype=np.float64) for k in f["params"]}
    assert f.attrs["tokenizer"].decode().rstrip("\0") == "bytes" if isinstance(f.attrs["tokenizer"], bytes) \
        else str(f.attrs["tokenizer"]) == "bytes"
    assert list(f.attrs["sample_shape"]) == [9]
    total = sum(v.size for v in P.values())
banner = [l for l in open(sys.argv[5]) if "total: " in l][0]
assert f"total: {total} parameters" in banner, (banner, total)  # the tied head's W counted once
with h5py.File(data, "r") as f:
    tokens = np.asarray(f["test/tokens"], dtype=np.int64)
T, C, H = 9, 12, 3
n = (len(tokens) - 1) // T
windows = np.stack([tokens[i * T:i * T + T + 1] for i in range(n)])
x_ids, y = windows[:, :-1], windows[:, 1:]

def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * P[p + ".weight"] + P[p + ".bias"]
def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
def attn(x, p):
    qkv = x @ P[p + ".qkv.weight"].T + P[p + ".qkv.bias"]
    q, k, v = np.split(qkv, 3, axis=-1)
    d = C // H
    heads = lambda a: a.reshape(a.shape[0], T, H, d).transpose(0, 2, 1, 3)
    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
    a = (s @ v).transpose(0, 2, 1, 3).reshape(-1, T, C)
    return a @ P[p + ".proj.weight"].T + P[p + ".proj.bias"]
x = P["wte.weight"][x_ids] + P["wpe.weight"][:T]
for l in range(2):
    h = f"h{l}_"
    x = x + attn(ln(x, h + "ln1"), h + "attn")
    m = gelu(ln(x, h + "ln2") @ P[h + "fc.weight"].T + P[h + "fc.bias"])
    x = x + m @ P[h + "proj.weight"].T + P[h + "proj.bias"]
logits = ln(x, "ln_f") @ P["wte.weight"].T
z = logits - logits.max(-1, keepdims=True)
logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
loss = -np.take_along_axis(logp, y[..., None], -1).mean()
trained = json.loads(open(metrics).read().splitlines()[-1])["test_loss"]
printed = float(open(evaluated).read().split()[1])
assert abs(loss - trained) < 1e-5, (loss, trained)
assert abs(loss - printed) < 1e-4, (loss, printed)
print(f"ok: numpy forward of the checkpoint: loss {loss:.6f} over {n} windows; trainer {trained:.6f}, mirror-eval {printed}")
PY

# --- --init-from: a fine-tune starts from the checkpoint's weights with a fresh optimizer and schedule --------------
ft=(--data "$TMP/text.h5" --init-from "$TMP/np1" --optimizer sgd --momentum 0 --lr 1e-30 --train-steps 1 --seed 9
    --progress off --eval-every 0 --batch-size 4)
mpi 2 "$TRAINER" "${ft[@]}" --checkpoint-dir "$TMP/ft" >"$TMP/ft.log" || fail "--init-from: $(cat "$TMP/ft.log")"
grep -q "initialised from $TMP/np1/ckpt-00000020.h5" "$TMP/ft.log" || fail "no init line: $(head -4 "$TMP/ft.log")"
grep -q "model $TMP/tiny.json (the model of $TMP/np1/ckpt-00000020.h5)" "$TMP/ft.log" \
  || fail "without --model the checkpoint's model is not taken: $(grep "model " "$TMP/ft.log" | head -2)"
/usr/bin/python3 - "$TMP/np1/ckpt-00000020.h5" "$TMP/ft/ckpt-00000001.h5" <<'PY' || fail "--init-from did not start from the checkpoint"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    assert int(b.attrs["step"]) == 1 and int(b.attrs["optimizer_step"]) == 1
    worst = max(np.abs(np.asarray(a["params"][k]) - np.asarray(b["params"][k])).max() for k in a["params"])
    assert worst < 1e-6, worst
print(f"ok: --init-from starts from the checkpoint's weights (max diff {worst:.1e} after one step at lr 1e-30), step 1")
PY
mpi 2 "$TRAINER" "${ft[@]}" --train-steps 3 --max-steps 2 --lr 0.01 --checkpoint-dir "$TMP/ft2" --checkpoint-every 1 >/dev/null
mpi 2 "$TRAINER" "${ft[@]}" --train-steps 3 --lr 0.01 --checkpoint-dir "$TMP/ft2" --resume auto >"$TMP/ft2.log"
grep -q "resumed from $TMP/ft2/ckpt-00000002.h5 at step 2" "$TMP/ft2.log" && ! grep -q "initialised from" "$TMP/ft2.log" \
  || fail "a restarted fine-tune did not continue its own run: $(grep -E "resumed|initialised" "$TMP/ft2.log")"
echo "ok: --resume auto finding the fine-tune's own checkpoint wins over --init-from"
expect_error nonzero "--init-from .* does not fit this run's model: parameter 1 is 'wte.weight' \[256, 12\] in the checkpoint but 'wte.weight' \[256, 128\]" \
  mpi 1 "$TRAINER" "${ft[@]}" --model gpt-nano

# --- --print-model gpt-nano gives a file that trains exactly as the built-in ------------------------------------------
"$TRAINER" --print-model gpt-nano >"$TMP/nano.json" || fail "--print-model gpt-nano"
for m in gpt-nano "$TMP/nano.json"; do
  mpi 1 "$TRAINER" --data "$TMP/text.h5" --model "$m" --context 8 --train-steps 2 --batch-size 2 --optimizer adamw \
    --seed 3 --progress off --eval-every 0 --checkpoint-dir "$TMP/pm-$(basename "$m" .json)" >/dev/null \
    || fail "training $m failed"
done
"$MIRROR_CKPT" diff "$TMP/pm-gpt-nano/ckpt-00000002.h5" "$TMP/pm-nano/ckpt-00000002.h5" --tol 0 >/dev/null \
  || fail "--print-model gpt-nano's file trains otherwise than --model gpt-nano"
echo "ok: --print-model gpt-nano's file trains bit for bit as --model gpt-nano"

# --- bad input ----------------------------------------------------------------------------------------------------
expect_error nonzero "--context 10 is longer than the context of model .* \(9 positions" \
  mpi 1 "$TRAINER" "${common[@]}" --context 10
sed 's/"vocab": "classes"/"vocab": 100/; s/"out_features": "classes"/"out_features": 100/' "$TMP/tiny.json" >"$TMP/v100.json"
expect_error nonzero "vocabulary of 256 tokens \(bytes\), more than the 100 of model" \
  mpi 1 "$TRAINER" "${common[@]}" --model "$TMP/v100.json"
printf 'short text' >"$TMP/short.txt"
"$MIRROR_DATA" text --out "$TMP/short.h5" --test-fraction 0.5 "$TMP/short.txt" >/dev/null
expect_error nonzero "windows|too short" mpi 1 "$TRAINER" "${common[@]}" --data "$TMP/short.h5"
synth_data "$TMP/d.h5"
expect_error nonzero "--context is for language models" mpi 1 "$TRAINER" --data "$TMP/d.h5" --model mlp:8 --context 4
expect_error nonzero "holds tokens, but model 'mlp:8' does not start with an embedding" \
  mpi 1 "$TRAINER" --data "$TMP/text.h5" --model mlp:8
expect_error nonzero "--predict writes one row per classified sample" \
  "$MIRROR_EVAL" --checkpoint "$TMP/np1" --data "$TMP/text.h5" --predict "$TMP/p.csv"
[ ! -e "$TMP/p.csv" ] || fail "--predict left a file behind"
