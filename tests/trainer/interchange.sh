#!/usr/bin/env bash
# interchange.sh — mirror-ckpt export/import (docs/checkpoint-format.md, "Export and import"): for every built-in
# (mlp, keras-cnn, cnn-bn with buffers, resnet20, gpt-nano) export --format safetensors then import is exact
# (diff --tol 0, the missing optimizer state "not compared"), and the file read by the `safetensors` PyPI
# package (numpy API) holds the tensors h5py reads from the checkpoint. A tiny gpt-nano exported as hf-gpt2: an
# independent numpy GPT-2 forward over the Hugging Face names and layout (Conv1D: x @ W + b) gives mirror-eval's
# test loss, and importing it back gives the same loss line; a hand-written Hugging Face-style directory (no
# "transformer." prefix, attention-mask buffers, lm_head = wte, F16) and F16/BF16 safetensors import as their
# float32 values. Bad input is refused with a clear error, a non-zero exit and nothing written.
# Exit 77 (skipped) only when the package index cannot be reached to install safetensors.
source "$(dirname "$0")/../scripts/lib.sh"
src="$(cd "$(dirname "$0")/../.." && pwd)"
rc=0
python="$(bash "$src/scripts/python-env.sh")" || rc=$?
if [ "$rc" -eq 77 ]; then echo "SKIPPED: safetensors cannot be installed (no package index)"; exit 77; fi
[ "$rc" -eq 0 ] || fail "scripts/python-env.sh failed ($rc)"

# --- checkpoints of every built-in, two steps each ---------------------------------------------------------------
synth_data "$TMP/d.h5"
image_data "$TMP/img.h5"
/usr/bin/python3 - "$TMP/text.txt" <<'PY'
import sys, random
rng = random.Random(5)
words = "the of and to in a is that for it as was with be by on not he this are".split()
open(sys.argv[1], "w").write("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + "."
                                       for _ in range(400)) + "\n")
PY
"$MIRROR_DATA" text --out "$TMP/text.h5" "$TMP/text.txt" >/dev/null
train() {  # train NAME DATA MODEL [ARGS...]: two steps (adamw) into $TMP/ck-NAME
  local name="$1" data="$2" model="$3"; shift 3
  mpi 1 "$TRAINER" --data "$data" --model "$model" --max-steps 2 --batch-size 8 --optimizer adamw --lr 0.01 \
    --progress off --seed 3 --checkpoint-dir "$TMP/ck-$name" "$@" >"$TMP/train-$name.log" 2>&1 \
    || fail "training $model: $(cat "$TMP/train-$name.log")"
}
train mlp "$TMP/d.h5" mlp:16
train keras "$TMP/img.h5" keras-cnn
train cnnbn "$TMP/img.h5" cnn-bn
train resnet "$TMP/img.h5" resnet20
train gpt "$TMP/text.h5" gpt-nano --context 16

# --- safetensors round trip, and the file as the safetensors package reads it ----------------------------------
for name in mlp keras cnnbn resnet gpt; do
  ck="$TMP/ck-$name/ckpt-00000002.h5"
  "$MIRROR_CKPT" export "$TMP/ck-$name" --format safetensors --out "$TMP/st-$name" >/dev/null || fail "export $name"
  "$MIRROR_CKPT" import "$TMP/st-$name" --format safetensors --out "$TMP/im-$name.h5" >/dev/null || fail "import $name"
  "$MIRROR_CKPT" diff "$ck" "$TMP/im-$name.h5" --tol 0 >"$TMP/diff-$name.out" \
    || fail "$name: export -> import is not exact: $(cat "$TMP/diff-$name.out")"
  grep -q "^optimizer state: not compared" "$TMP/diff-$name.out" || fail "$name: $(cat "$TMP/diff-$name.out")"
  "$python" - "$TMP/st-$name/model.safetensors" "$TMP/st-$name.npz" <<'PY' || fail "safetensors.numpy cannot read $name"
import sys, numpy as np
from safetensors.numpy import load_file
np.savez(sys.argv[2], **load_file(sys.argv[1]))
PY
  /usr/bin/python3 - "$ck" "$TMP/st-$name.npz" "$TMP/st-$name/model.json" <<'PY' || fail "$name: safetensors != checkpoint"
import json, sys, h5py, numpy as np
ckpt, npz, model_json = sys.argv[1:]
st = dict(np.load(npz))
with h5py.File(ckpt, "r") as f:
    want = {k: np.asarray(f[g][k]) for g in ("params", "buffers") for k in f[g]}
    desc = f["model_description"][()].tobytes().decode()
    shape = list(f.attrs["sample_shape"])
assert sorted(st) == sorted(want), (sorted(st), sorted(want))
for k, v in want.items():
    assert st[k].dtype == np.float32 and st[k].shape == v.shape and np.array_equal(st[k], v), k
m = json.load(open(model_json))
assert m["format"] == "mirror-model" and m["sample_shape"] == shape, m
d = m["model_description"]
assert (json.loads(desc) == d) if isinstance(d, dict) else d == desc, (d, desc)
print(f"ok: {len(st)} tensors equal")
PY
  echo "ok: $name: safetensors export -> import exact; the safetensors package reads the checkpoint's tensors"
done
grep -q "running_mean" "$TMP/diff-cnnbn.out" || fail "cnn-bn's buffers were not compared: $(cat "$TMP/diff-cnnbn.out")"

# diff: a tensor missing inside a group still fails (the imported mlp with fc2.bias removed).
cp "$TMP/im-mlp.h5" "$TMP/im-mlp-cut.h5"
/usr/bin/python3 - "$TMP/im-mlp-cut.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    del f["params"]["fc2.bias"]
    order = "fc1.weight\nfc1.bias\nfc2.weight\n".encode()
    del f["params"].attrs["order"]
    f["params"].attrs.create("order", np.bytes_(order), dtype=h5py.string_dtype("ascii", len(order)))
PY
expect_error 1 "fc2.bias +only in A" "$MIRROR_CKPT" diff "$TMP/ck-mlp/ckpt-00000002.h5" "$TMP/im-mlp-cut.h5" --tol 0

# --- hf-gpt2: an independent numpy GPT-2 forward over the Hugging Face layout ---------------------------------------
"$MIRROR_CKPT" export "$TMP/ck-gpt" --format hf-gpt2 --out "$TMP/hf" >/dev/null || fail "hf-gpt2 export"
"$MIRROR_EVAL" --checkpoint "$TMP/ck-gpt" --data "$TMP/text.h5" >"$TMP/eval.out" 2>"$TMP/eval.err" \
  || fail "mirror-eval: $(cat "$TMP/eval.err")"
/usr/bin/python3 -c "import sys, h5py, numpy as np; np.save(sys.argv[2], np.asarray(h5py.File(sys.argv[1])['test/tokens']))" \
  "$TMP/text.h5" "$TMP/tokens.npy"
"$python" - "$TMP/hf" "$TMP/tokens.npy" "$TMP/eval.out" <<'PY' || fail "numpy GPT-2 forward of the hf-gpt2 export"
import json, math, re, sys
import numpy as np
from safetensors.numpy import load_file
from safetensors import safe_open
d, tokens_file, evaluated = sys.argv[1:]
cfg = json.load(open(d + "/config.json"))
for k, v in {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
             "layer_norm_epsilon": 1e-05, "tie_word_embeddings": True, "n_layer": 4, "n_head": 4, "n_embd": 128,
             "n_positions": 64, "n_ctx": 64, "resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}.items():
    assert cfg[k] == v, (k, cfg[k], v)
V, C, H, L = cfg["vocab_size"], cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
assert cfg["eos_token_id"] == cfg["bos_token_id"] == V - 1, cfg
P = {k: v.astype(np.float64) for k, v in load_file(d + "/model.safetensors").items()}
assert "lm_head.weight" not in P and all(k.startswith("transformer.") for k in P), sorted(P)
assert P["transformer.h.0.attn.c_attn.weight"].shape == (C, 3 * C)
assert P["transformer.h.0.mlp.c_fc.weight"].shape == (C, 4 * C) and P["transformer.h.0.mlp.c_proj.weight"].shape == (4 * C, C)
with safe_open(d + "/model.safetensors", framework="numpy") as f:
    assert f.metadata()["format"] == "pt", f.metadata()
T = 16  # the training window (--context 16); the position embedding has 64 rows
tokens = np.load(tokens_file).astype(np.int64)
n = (len(tokens) - 1) // T
w = np.stack([tokens[i * T:i * T + T + 1] for i in range(n)])
x_ids, y = w[:, :-1], w[:, 1:]
g = lambda name: P["transformer." + name]
def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g(p + ".weight") + g(p + ".bias")
def conv1d(x, p):  # Hugging Face's Conv1D: x @ W + b, W [in, out]
    return x @ g(p + ".weight") + g(p + ".bias")
def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
def attn(x, p):
    q, k, v = np.split(conv1d(x, p + ".c_attn"), 3, axis=-1)
    hd = C // H
    heads = lambda a: a.reshape(a.shape[0], T, H, hd).transpose(0, 2, 1, 3)
    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
    return conv1d((s @ v).transpose(0, 2, 1, 3).reshape(-1, T, C), p + ".c_proj")
x = g("wte.weight")[x_ids] + g("wpe.weight")[:T]
for l in range(L):
    h = f"h.{l}."
    x = x + attn(ln(x, h + "ln_1"), h + "attn")
    x = x + conv1d(gelu_new(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc")), h + "mlp.c_proj")
logits = ln(x, "ln_f") @ g("wte.weight").T  # the tied head
logits -= logits.max(-1, keepdims=True)
logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
loss = -np.take_along_axis(logp, y[..., None], -1).mean()
line = open(evaluated).read()
got = float(re.match(r"loss ([0-9.]+)  perplexity", line).group(1))
assert abs(got - loss) <= 1e-4, (got, loss)
print(f"ok: numpy GPT-2 forward over the Hugging Face layout: loss {loss:.6f}, mirror-eval: {line.strip()}")
PY
"$MIRROR_CKPT" import "$TMP/hf" --format hf-gpt2 --out "$TMP/hf-im.h5" >/dev/null || fail "hf-gpt2 import"
"$MIRROR_CKPT" diff "$TMP/ck-gpt/ckpt-00000002.h5" "$TMP/hf-im.h5" --tol 0 >"$TMP/hfdiff.out" \
  || fail "hf-gpt2 export -> import is not exact: $(cat "$TMP/hfdiff.out")"
"$MIRROR_EVAL" --checkpoint "$TMP/hf-im.h5" --data "$TMP/text.h5" >"$TMP/eval-im.out" 2>/dev/null || fail "mirror-eval import"
cmp -s "$TMP/eval.out" "$TMP/eval-im.out" || fail "imported: $(cat "$TMP/eval-im.out"), original: $(cat "$TMP/eval.out")"
echo "ok: hf-gpt2 import of the export is exact and evaluates the same: $(cat "$TMP/eval-im.out")"

# --- 16-bit tensors: a Hugging Face-style directory in F16, and F16/BF16 in the safetensors format -------------------
mkdir -p "$TMP/hf16" "$TMP/st16"
cp "$TMP/hf/config.json" "$TMP/hf16/"
cp "$TMP/st-mlp/model.json" "$TMP/st16/"
"$python" - "$TMP/hf/model.safetensors" "$TMP/hf16" "$TMP/st-mlp/model.safetensors" "$TMP/st16" <<'PY' || fail "16-bit files"
import sys, numpy as np
from safetensors.numpy import load_file, save_file
hf, hf16, mlp, st16 = sys.argv[1:]
P = load_file(hf)
# No "transformer." prefix, GPT-2's attention-mask buffers, a head equal to wte; everything F16.
out = {k[len("transformer."):]: v.astype(np.float16) for k, v in P.items()}
out["lm_head.weight"] = out["wte.weight"]
for l in range(4):
    out[f"h.{l}.attn.bias"] = np.tril(np.ones((1, 1, 64, 64), np.float16))
    out[f"h.{l}.attn.masked_bias"] = np.array(-1e4, np.float16)
save_file(out, hf16 + "/model.safetensors", metadata={"format": "pt", "mirror.context": "16"})
np.savez(hf16 + "/want.npz", **{k: v.astype(np.float32) for k, v in out.items()})
# The mlp: fc1.weight F16, fc1.bias BF16 (written by hand: numpy has no bfloat16), the rest F32.
import json, struct
M = load_file(mlp)
bf16 = lambda a: ((a.astype(np.float32).view(np.uint32) + 0x7FFF + ((a.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16)
parts = {"fc1.weight": ("F16", M["fc1.weight"].astype(np.float16).tobytes()),
         "fc1.bias": ("BF16", bf16(M["fc1.bias"]).tobytes()),
         "fc2.weight": ("F32", M["fc2.weight"].tobytes()), "fc2.bias": ("F32", M["fc2.bias"].tobytes())}
header, data = {}, b""
for k, (dt, raw) in parts.items():
    header[k] = {"dtype": dt, "shape": list(M[k].shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header).encode()
open(st16 + "/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
want = {"fc1.weight": M["fc1.weight"].astype(np.float16).astype(np.float32),
        "fc1.bias": (bf16(M["fc1.bias"]).astype(np.uint32) << 16).view(np.float32),
        "fc2.weight": M["fc2.weight"], "fc2.bias": M["fc2.bias"]}
assert not np.array_equal(want["fc1.bias"], M["fc1.bias"])  # the conversion is not a no-op
np.savez(st16 + "/want.npz", **want)
PY
"$MIRROR_CKPT" import "$TMP/hf16" --format hf-gpt2 --out "$TMP/hf16.h5" >/dev/null || fail "F16 hf-gpt2 import"
"$MIRROR_CKPT" import "$TMP/st16" --format safetensors --out "$TMP/st16.h5" >/dev/null || fail "F16/BF16 import"
/usr/bin/python3 - "$TMP/hf16.h5" "$TMP/hf16/want.npz" "$TMP/st16.h5" "$TMP/st16/want.npz" <<'PY' || fail "16-bit values"
import sys, h5py, numpy as np
hf16, hf_want, st16, st_want = sys.argv[1:]
W = dict(np.load(hf_want))
with h5py.File(hf16, "r") as f:
    p = {k: np.asarray(f["params"][k]) for k in f["params"]}
    assert list(f.attrs["sample_shape"]) == [16]
assert np.array_equal(p["wte.weight"], W["wte.weight"]) and np.array_equal(p["h1_ln2.bias"], W["h.1.ln_2.bias"])
assert np.array_equal(p["h2_attn.qkv.weight"], W["h.2.attn.c_attn.weight"].T)
assert np.array_equal(p["h3_proj.weight"], W["h.3.mlp.c_proj.weight"].T)
W = dict(np.load(st_want))
with h5py.File(st16, "r") as f:
    for k, v in W.items():
        assert np.array_equal(np.asarray(f["params"][k]), v), k
print("ok")
PY
echo "ok: F16 and BF16 tensors import as their float32 values (hf-gpt2 without the prefix, with mask buffers and lm_head)"

# --- bad input: a clear error, a non-zero exit, nothing written -----------------------------------------------------
bad() {  # bad NAME PATTERN SETUP-PYTHON: a copy of the mlp export changed by SETUP-PYTHON, then imported
  local name="$1" pattern="$2" code="$3"
  cp -r "$TMP/st-mlp" "$TMP/bad-$name"
  /usr/bin/python3 - "$TMP/bad-$name/model.safetensors" <<PY
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
def write(h, d=None, length=None):
    t = json.dumps(h).encode() if isinstance(h, dict) else h
    open(path, "wb").write(struct.pack("<Q", len(t) if length is None else length) + t + (data if d is None else d))
$code
PY
  expect_error nonzero "$pattern" "$MIRROR_CKPT" import "$TMP/bad-$name" --format safetensors --out "$TMP/bad-$name.h5"
  [ ! -e "$TMP/bad-$name.h5" ] || fail "$name: a checkpoint was written"
  ! compgen -G "$TMP/.bad-$name.h5*" >/dev/null || fail "$name: a temporary was left"
}
bad truncated "shorter than the 8-byte header length" 'open(path, "wb").write(raw[:5])'
bad header_past_end "header length [0-9]+ reaches past the end of the file" 'write(header, length=10**6)'
bad cut_data "fc2.bias.*past the end of the data" 'write(header, data[:-4])'
bad not_json "header .* is not a JSON object" 'write(b"[1, 2" + b" " * 100)'
bad overlap "tensor 'fc1.bias' .* overlaps tensor 'fc1.weight'" \
  'header["fc1.bias"]["data_offsets"] = [x - 4 for x in header["fc1.bias"]["data_offsets"]]; write(header)'
bad out_of_range "past the end of the data" \
  'header["fc2.bias"]["data_offsets"] = [x + 4096 for x in header["fc2.bias"]["data_offsets"]]; write(header)'
bad gap "a gap of bytes" 'del header["fc1.bias"]; write(header)'
bad dtype "tensor 'fc2.bias' has dtype 'F31'" 'header["fc2.bias"]["dtype"] = "F31"; write(header)'
bad int_dtype "tensor 'fc2.bias' has dtype 'I32', which this reader does not take" \
  'header["fc2.bias"]["dtype"] = "I32"; write(header)'
bad size "fc2.weight.*span [0-9]+ bytes, but shape \[4,8\] of F32 takes 128" \
  'header["fc2.weight"]["shape"] = [4, 8]; write(header)'
bad duplicate "names tensor 'fc1.bias' more than once" \
  't = json.dumps(header); i = t.index("\"fc1.bias\""); j = t.index("}", i) + 1; write((t[:j] + ", " + t[i:j] + t[j:]).encode())'
bad missing "lacks parameter 'fc1.bias' of shape \[16\]" \
  'e = header.pop("fc1.bias"); b, f = e["data_offsets"]; sh = f - b
for v in header.values():
    if isinstance(v, dict) and "data_offsets" in v and v["data_offsets"][0] >= f: v["data_offsets"] = [x - sh for x in v["data_offsets"]]
write(header, data[:b] + data[f:])'
bad extra "holds tensor 'fc3.bias', which the model it describes does not have" \
  'header["fc3.bias"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}; write(header, data + bytes(4))'
bad shape "tensor 'fc2.weight' has shape \[1, 64\] where the model it describes has \[4, 16\]" \
  'header["fc2.weight"]["shape"] = [1, 64]; write(header)'

# Another architecture's config.json; an untied lm_head.
cp -r "$TMP/hf" "$TMP/llama"
sed -i 's/"gpt2"/"llama"/; s/GPT2LMHeadModel/LlamaForCausalLM/' "$TMP/llama/config.json"
expect_error nonzero "model_type 'llama' is not gpt2" "$MIRROR_CKPT" import "$TMP/llama" --format hf-gpt2 --out "$TMP/llama.h5"
sed -i 's/"llama"/"gpt2"/' "$TMP/llama/config.json"
expect_error nonzero "architecture \"LlamaForCausalLM\" is not GPT2LMHeadModel" \
  "$MIRROR_CKPT" import "$TMP/llama" --format hf-gpt2 --out "$TMP/llama.h5"
cp -r "$TMP/hf16" "$TMP/untied"
"$python" - "$TMP/untied/model.safetensors" <<'PY'
import sys
from safetensors.numpy import load_file, save_file
t = load_file(sys.argv[1]); t["lm_head.weight"] = t["lm_head.weight"] * 2; save_file(t, sys.argv[1])
PY
expect_error nonzero "lm_head.weight differs from transformer.wte.weight" \
  "$MIRROR_CKPT" import "$TMP/untied" --format hf-gpt2 --out "$TMP/untied.h5"
[ ! -e "$TMP/llama.h5" ] && [ ! -e "$TMP/untied.h5" ] || fail "a refused hf-gpt2 import wrote a checkpoint"

# A model that is not GPT-2-shaped is refused for hf-gpt2, naming what does not fit; nothing is left behind.
expect_error nonzero "not GPT-2-shaped.*layer 1 \('fc1'\) is linear where GPT-2 has embedding 'wte'" \
  "$MIRROR_CKPT" export "$TMP/ck-mlp" --format hf-gpt2 --out "$TMP/no-gpt"
[ ! -e "$TMP/no-gpt" ] || fail "a refused export left $TMP/no-gpt"
"$TRAINER" --print-model gpt-nano >"$TMP/relu.json" 2>/dev/null || fail "--print-model gpt-nano"
/usr/bin/python3 - "$TMP/relu.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for l in m["layers"]:
    if l["name"] == "h1_gelu": l["type"] = "relu"
json.dump(m, open(sys.argv[1], "w"))
PY
train relu "$TMP/text.h5" "$TMP/relu.json" --context 16
mkdir "$TMP/existing"
expect_error nonzero "layer 16 \('h1_gelu'\) is relu where GPT-2 has gelu 'h1_gelu'" \
  "$MIRROR_CKPT" export "$TMP/ck-relu" --format hf-gpt2 --out "$TMP/existing"
[ -z "$(ls -A "$TMP/existing")" ] || fail "a refused export wrote into an existing directory: $(ls -A "$TMP/existing")"
expect_error nonzero "--format.*hf-gpt3" "$MIRROR_CKPT" export "$TMP/ck-gpt" --format hf-gpt3 --out "$TMP/x"
expect_error nonzero "cannot open .*model.json" "$MIRROR_CKPT" import "$TMP/existing" --format safetensors --out "$TMP/x.h5"
[ ! -e "$TMP/x" ] && [ ! -e "$TMP/x.h5" ] || fail "a refused command wrote something"
echo "PASS"
