#!/usr/bin/env bash
# lm_tokenizers.sh — language models on SentencePiece and GPT-2 BPE token datasets, end to end: gpt-nano trained
# for 2 steps on 2 ranks; the checkpoint (format version 5) carries the dataset's tokenizer files byte for byte;
# mirror-generate, with the dataset gone, prints exactly the prompt for --max-new-tokens 0 and a continuation for
# a non-zero count; bits per byte in the metrics line and in mirror-eval's line equal loss * tokens / bytes / ln 2
# from the h5 attributes (test_bytes and the test split's token count); a token dataset that does not know its
# bytes (no test_bytes, a tokenizer other than bytes) gets no bits per byte at all.
source "$(dirname "$0")/../scripts/lib.sh"
GENERATE="$(dirname "$MIRROR_EVAL")/mirror-generate"

/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(11)
words = "the king's men don't say what they've seen; we'll go. naïve café 日本語 ROMEO: JULIET: 42 and 1999".split(" ")
lines = [" ".join(words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(4, 12)))) for _ in range(900)]
open(f"{d}/text.txt", "w", encoding="utf-8").write("\n".join(lines) + "\n")
# A GPT-2 vocabulary of the 256 byte characters and two merges (bytes_to_unicode as in GPT-2's encoder.py).
bs = list(range(33, 127)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
chars = dict(zip(bs, map(chr, cs)))
vocab = {chars[b]: b for b in range(256)}
vocab.update({"Ġt": 256, "Ġth": 257})
json.dump(vocab, open(f"{d}/vocab.json", "w"))
open(f"{d}/merges.txt", "w", encoding="utf-8").write("#version: 0.2\nĠ t\nĠt h\n")
PY
"$MIRROR_DATA" text --out "$TMP/sp.h5" --tokenizer sentencepiece --vocab-size 320 "$TMP/text.txt" >/dev/null
"$MIRROR_DATA" text --out "$TMP/g2.h5" --tokenizer gpt2 --vocab "$TMP/vocab.json" --merges "$TMP/merges.txt" \
  "$TMP/text.txt" >/dev/null

for ds in sp g2; do
  mpi 2 "$TRAINER" --data "$TMP/$ds.h5" --model gpt-nano --batch-size 4 --train-steps 2 --optimizer adamw --lr 1e-3 \
    --checkpoint-dir "$TMP/$ds-ck" --metrics "$TMP/$ds.jsonl" --progress off >"$TMP/$ds.log" \
    || fail "training on $ds.h5: $(cat "$TMP/$ds.log")"
  "$MIRROR_EVAL" --checkpoint "$TMP/$ds-ck" --data "$TMP/$ds.h5" >"$TMP/$ds.eval" 2>/dev/null \
    || fail "mirror-eval on $ds.h5"
done

# --- bits per byte from the byte counts; the tokenizer's files in the checkpoint ----------------------------
/usr/bin/python3 - "$TMP" <<'PY' || fail "bits per byte or the checkpoint's tokenizer files"
import json, math, sys
import h5py, numpy as np
d = sys.argv[1]
for ds, files in (("sp", ["model"]), ("g2", ["merges.txt", "vocab.json"])):
    with h5py.File(f"{d}/{ds}.h5", "r") as f:
        tokens, nbytes = len(f["test/tokens"]), int(np.ravel(f.attrs["test_bytes"])[0])
        blobs = {k: f["tokenizer"][k][...].tobytes() for k in f["tokenizer"]}
    assert sorted(blobs) == files, (ds, sorted(blobs))
    assert nbytes > tokens, (ds, nbytes, tokens)  # BPE: several bytes a token
    m = [json.loads(l) for l in open(f"{d}/{ds}.jsonl")][-1]
    want = m["test_loss"] * tokens / nbytes / math.log(2)
    assert abs(m["test_bits_per_byte"] - want) <= 1e-12 * want, (ds, m["test_bits_per_byte"], want)
    line = open(f"{d}/{ds}.eval").read().split()
    loss, bpb = float(line[1]), float(line[5])
    assert line[4] == "bits_per_byte" and abs(bpb - loss * tokens / nbytes / math.log(2)) < 2e-4, (ds, line)
    with h5py.File(f"{d}/{ds}-ck/ckpt-00000002.h5", "r") as f:
        assert int(f.attrs["format_version"]) == 5
        stored = {k: f["tokenizer"][k][...].tobytes() for k in f["tokenizer"]}
    assert stored == blobs, (ds, sorted(stored))
    print(f"ok: {ds}: bits/byte {m['test_bits_per_byte']:.4f} = loss {m['test_loss']:.4f} x {tokens} tokens / {nbytes} "
          f"bytes / ln 2; the checkpoint holds the tokenizer's {files}")
PY

# --- mirror-generate from the checkpoint alone ----------------------------------------------------------------
mv "$TMP/sp.h5" "$TMP/sp-moved.h5"
mv "$TMP/g2.h5" "$TMP/g2-moved.h5"
prompt="ROMEO: the naïve king's 日本語 "
for ds in sp g2; do
  "$GENERATE" --checkpoint "$TMP/$ds-ck" --prompt "$prompt" --max-new-tokens 0 >"$TMP/$ds.gen0" 2>"$TMP/$ds.err" \
    || fail "mirror-generate ($ds, 0 tokens): $(cat "$TMP/$ds.err")"
  printf '%s\n' "$prompt" | cmp -s - "$TMP/$ds.gen0" || fail "$ds: --max-new-tokens 0 printed: $(od -c "$TMP/$ds.gen0")"
  "$GENERATE" --checkpoint "$TMP/$ds-ck" --prompt "$prompt" --max-new-tokens 24 --seed 1 >"$TMP/$ds.gen" \
    2>"$TMP/$ds.err" || fail "mirror-generate ($ds, 24 tokens): $(cat "$TMP/$ds.err")"
  grep -q "tokenizer $( [ $ds = sp ] && echo sentencepiece || echo gpt2 )" "$TMP/$ds.err" || fail "$(cat "$TMP/$ds.err")"
  /usr/bin/python3 - "$TMP/$ds.gen" "$prompt" <<'PY' || fail "$ds: the continuation"
import sys
out, prompt = open(sys.argv[1], "rb").read(), sys.argv[2].encode()
assert out.startswith(prompt) and out.endswith(b"\n") and len(out) > len(prompt) + 1, out
PY
  echo "ok: $ds: the prompt round-trips through mirror-generate from the checkpoint alone; 24 tokens continue it"
done

# --- a token dataset that does not know its bytes: no bits per byte ---------------------------------------------
/usr/bin/python3 - "$TMP/nobytes.h5" "$TMP/g2-moved.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[2], "r") as src, h5py.File(sys.argv[1], "w") as f:
    for k in ("format_version", "kind", "vocab_size", "tokenizer"):
        f.attrs[k] = src.attrs[k]
    for s in ("train", "test"):
        f.create_dataset(f"{s}/tokens", data=src[f"{s}/tokens"][...])
PY
mpi 2 "$TRAINER" --data "$TMP/nobytes.h5" --model gpt-nano --batch-size 4 --train-steps 2 --optimizer adamw \
  --checkpoint-dir "$TMP/nb-ck" --metrics "$TMP/nb.jsonl" --progress off >"$TMP/nb.log" || fail "$(cat "$TMP/nb.log")"
grep -q test_loss "$TMP/nb.jsonl" || fail "no test loss: $(cat "$TMP/nb.jsonl")"
! grep -q bits_per_byte "$TMP/nb.jsonl" || fail "bits per byte without byte counts: $(cat "$TMP/nb.jsonl")"
"$MIRROR_EVAL" --checkpoint "$TMP/nb-ck" --data "$TMP/nobytes.h5" 2>/dev/null >"$TMP/nb.eval"
grep -Eq "^loss [0-9.]+  perplexity [0-9.]+$" "$TMP/nb.eval" || fail "mirror-eval without byte counts: $(cat "$TMP/nb.eval")"
echo "ok: a dataset without byte counts gets loss and perplexity, no bits per byte"

# --- a GPT-2 exported to Hugging Face's layout with its vocab.json and merges.txt, imported back: the checkpoint
# carries the gpt2 tokenizer again (the same files), so mirror-generate prompts it in its own tokens; without the
# two files the import has no tokenizer and mirror-generate says so; one of the two alone is refused.
"$MIRROR_CKPT" export "$TMP/g2-ck" --format hf-gpt2 --out "$TMP/g2-hf" >/dev/null || fail "hf-gpt2 export of the gpt2 model"
[ -f "$TMP/g2-hf/vocab.json" ] && [ -f "$TMP/g2-hf/merges.txt" ] || fail "the export lacks vocab.json/merges.txt: $(ls "$TMP/g2-hf")"
"$MIRROR_CKPT" import "$TMP/g2-hf" --format hf-gpt2 --out "$TMP/g2-imported.h5" >/dev/null || fail "hf-gpt2 import"
/usr/bin/python3 - "$TMP/g2-ck/ckpt-00000002.h5" "$TMP/g2-imported.h5" <<'PY' || fail "the imported tokenizer"
import sys, h5py, numpy as np
files = []
for path in sys.argv[1:]:
    with h5py.File(path, "r") as f:
        files.append({k: f["tokenizer"][k][...].tobytes() for k in f["tokenizer"]})
        assert np.ravel(f.attrs["tokenizer"])[0] in (b"gpt2", "gpt2"), f.attrs["tokenizer"]
assert files[0] == files[1], (sorted(files[0]), sorted(files[1]))
print("ok: hf-gpt2 export and import carry the gpt2 tokenizer's vocab.json and merges.txt byte for byte")
PY
"$GENERATE" --checkpoint "$TMP/g2-imported.h5" --prompt "$prompt" --max-new-tokens 0 >"$TMP/imp.gen0" 2>"$TMP/imp.err" \
  || fail "mirror-generate on the imported GPT-2: $(cat "$TMP/imp.err")"
printf '%s\n' "$prompt" | cmp -s - "$TMP/imp.gen0" || fail "imported: --max-new-tokens 0 printed: $(od -c "$TMP/imp.gen0")"
echo "ok: the imported GPT-2 is prompted in its own tokens"
mkdir -p "$TMP/g2-bare"
cp "$TMP/g2-hf/model.safetensors" "$TMP/g2-hf/config.json" "$TMP/g2-bare/"
"$MIRROR_CKPT" import "$TMP/g2-bare" --format hf-gpt2 --out "$TMP/g2-bare.h5" >/dev/null || fail "import without tokenizer files"
expect_error nonzero "holds a language model but has no tokenizer" \
  "$GENERATE" --checkpoint "$TMP/g2-bare.h5" --prompt "hello" --max-new-tokens 4
cp "$TMP/g2-hf/vocab.json" "$TMP/g2-bare/"
expect_error nonzero "has vocab.json but no merges.txt" \
  "$MIRROR_CKPT" import "$TMP/g2-bare" --format hf-gpt2 --out "$TMP/g2-half.h5"
[ ! -e "$TMP/g2-half.h5" ] || fail "a refused import left $TMP/g2-half.h5"
