#!/usr/bin/env bash
# check_hf_transformers.sh — Mirror's hf-gpt2 interchange against Hugging Face `transformers` itself (PyTorch's
# GPT2LMHeadModel), both ways, on a text's test windows (consecutive windows of context + 1 tokens at stride
# context, mirror-eval's):
#  1. Mirror -> Hugging Face: a gpt-nano trained here (context 32), `mirror-ckpt export --format hf-gpt2`, loaded
#     with GPT2LMHeadModel.from_pretrained: its loss against mirror-eval's.
#  2. Hugging Face -> Mirror: a GPT2LMHeadModel made and saved by `transformers` (save_pretrained, random weights,
#     n_positions 64), `mirror-ckpt import --format hf-gpt2`: mirror-eval's loss (windows of the imported model's
#     context, 64) against transformers' on the same windows.
# A check, not a test: `transformers` needs PyTorch, which the test environment does not carry. It uses the peers'
# virtual environment (../shared/peers/setup.sh, MIRROR_PEERS_HOME, default ~/.cache/mirror-peers), installing
# `transformers` there when it is missing. Needs a build (BUILD_DIR, default build) and Debian's python3-h5py.
#   scripts/check_hf_transformers.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="$root/${BUILD_DIR:-build}"
trainer="$build/trainer/tools/trainer"; ckpt="$build/trainer/tools/mirror-ckpt"
evaluate="$build/trainer/tools/mirror-eval"; mirror_data="$build/data/mirror-data"
py="${MIRROR_PEERS_HOME:-$HOME/.cache/mirror-peers}/venv/bin/python"
[ -x "$py" ] || { echo "check_hf_transformers.sh: no peers venv at $py (run ../shared/peers/setup.sh)" >&2; exit 2; }
"$py" -c "import transformers, torch" 2>/dev/null || "$py" -m pip install -q --disable-pip-version-check transformers
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error HF_HUB_OFFLINE=1
echo "transformers $("$py" -c 'import transformers, torch; print(transformers.__version__, "with torch", torch.__version__)')"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
context=32

find /usr/share/common-licenses -maxdepth 1 -type f | sort | xargs "$mirror_data" text --out "$tmp/text.h5" >/dev/null
/usr/bin/python3 -c "
import h5py, numpy as np, sys
np.save(sys.argv[2], np.asarray(h5py.File(sys.argv[1], 'r')['test/tokens'], np.int64))" "$tmp/text.h5" "$tmp/test.npy"
eval_loss() { "$evaluate" --checkpoint "$1" --data "$2" 2>/dev/null | sed -n 's/^loss \([0-9.]*\).*/\1/p'; }
# hf_loss load DIR T | hf_loss make DIR T: transformers' mean loss over the test windows of T tokens, of the model
# in DIR (from_pretrained) or of one it makes there (random weights, save_pretrained).
cat >"$tmp/hf_loss.py" <<'PY'
import os, sys
import numpy as np, torch
from transformers import GPT2Config, GPT2LMHeadModel
mode, directory, tokens_file, T = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if mode == "load":
    model = GPT2LMHeadModel.from_pretrained(directory).eval()
else:
    torch.manual_seed(3)
    config = GPT2Config(vocab_size=256, n_positions=64, n_embd=96, n_layer=3, n_head=4,
                        activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # larger than GPT-2's initial weights, so that the logits are far from uniform
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(directory)
tokens = np.load(tokens_file)
n = (len(tokens) - 1) // T
x = torch.tensor(np.stack([tokens[i * T:i * T + T] for i in range(n)]))
y = torch.tensor(np.stack([tokens[i * T + 1:i * T + T + 1] for i in range(n)]))
with torch.no_grad():
    logits = model(x).logits
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="mean")
print(f"transformers loss: {loss.item():.4f}  ({n} windows of {T}; {mode}: activation "
      f"{model.config.activation_function}, n_positions {model.config.n_positions}; files: "
      f"{', '.join(sorted(os.listdir(directory)))})")
PY
hf_loss() { "$py" "$tmp/hf_loss.py" "$1" "$2" "$tmp/test.npy" "$3"; }

echo "== Mirror -> transformers: gpt-nano (context $context) exported as hf-gpt2 =="
mpirun -np 1 "$trainer" --data "$tmp/text.h5" --model gpt-nano --context "$context" --batch-size 8 --train-steps 200 \
  --optimizer adamw --lr 1e-3 --eval-every 0 --progress off --checkpoint-dir "$tmp/ck" >"$tmp/train.log" 2>&1 \
  || { cat "$tmp/train.log" >&2; exit 1; }
"$ckpt" export "$tmp/ck" --format hf-gpt2 --out "$tmp/hf" >/dev/null
echo "mirror-eval loss: $(eval_loss "$tmp/ck" "$tmp/text.h5")"
hf_loss load "$tmp/hf" "$context"

echo "== transformers -> Mirror: a GPT2LMHeadModel saved by transformers, imported as hf-gpt2 =="
hf_loss make "$tmp/hf-made" 64
"$ckpt" import "$tmp/hf-made" --format hf-gpt2 --out "$tmp/made.h5" >/dev/null
echo "mirror-eval loss:  $(eval_loss "$tmp/made.h5" "$tmp/text.h5")"
