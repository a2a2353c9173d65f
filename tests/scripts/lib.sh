# lib.sh — helpers for Mirror's script tests (sourced). CTest passes the programs' paths in the environment:
# TRAINER, MIRROR_DATA, MIRROR_EVAL, MIRROR_CKPT, MPIEXEC, MPIEXEC_FLAGS.
set -euo pipefail

TMP="$(mktemp -d "${TMPDIR:-/tmp}/mirror-test.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# mpi N PROGRAM ARGS... — runs PROGRAM under mpirun with N ranks.
mpi() {
  local n="$1"; shift
  # shellcheck disable=SC2086
  "$MPIEXEC" -np "$n" $MPIEXEC_FLAGS "$@"
}

# expect_error CODE PATTERN CMD... — CMD must exit with CODE (or any non-zero for CODE "nonzero") and print
# something matching PATTERN (grep -E) on stdout or stderr, within 120 s.
expect_error() {
  local code="$1" pattern="$2"; shift 2
  local out rc=0
  if [ "$1" = mpi ]; then  # timeout cannot run a shell function: spell the mpirun command out
    local n="$2"; shift 2
    # shellcheck disable=SC2086
    set -- "$MPIEXEC" -np "$n" $MPIEXEC_FLAGS "$@"
  fi
  out="$(timeout 120 "$@" 2>&1)" || rc=$?
  if [ "$code" = "nonzero" ]; then
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit from: $*; got 0. Output: $out"
  else
    [ "$rc" -eq "$code" ] || fail "expected exit $code from: $*; got $rc. Output: $out"
  fi
  [ "$rc" -ne 124 ] || fail "timed out: $*"
  grep -Eq -- "$pattern" <<<"$out" || fail "output of '$*' lacks /$pattern/: $out"
  echo "ok: exit $rc with /$pattern/ from: ${*:1:6}"
}

# synth_data FILE [extra mirror-data synth args] — a small learnable dataset.
synth_data() {
  local file="$1"; shift
  "$MIRROR_DATA" synth --out "$file" --train 960 --test 200 --features 20 --classes 4 --seed 11 "$@" >/dev/null
}

# word_text_data FILE.h5 SEED — a byte-token dataset (mirror-data text) of 700 lines of common English words
# drawn with SEED: a small text for the language-model tests.
word_text_data() {
  /usr/bin/python3 - "$TMP/words-$2.txt" "$2" <<'PY'
import sys, random
rng = random.Random(int(sys.argv[2]))
words = "the of and to in a is that for it as was with be by on not he this are or his from at which but".split()
lines = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "." for _ in range(700)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
  "$MIRROR_DATA" text --out "$1" "$TMP/words-$2.txt" >/dev/null
}

# tiny_gpt FILE CHANNELS HEADS CONTEXT BLOCKS — a GPT-2-shaped model file: embeddings, BLOCKS pre-LayerNorm blocks
# (attention, then an MLP of 4 x CHANNELS; residual projections initialised at 0.01), ln_f and a head tied to wte.
tiny_gpt() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, c, heads, context, blocks = sys.argv[1], *map(int, sys.argv[2:])
layers = [{"type": "embedding", "name": "wte", "vocab": "classes", "channels": c},
          {"type": "position_embedding", "name": "wpe", "context": context}]
previous = "wpe"
for b in range(blocks):
    h = f"h{b}_"
    layers += [{"type": "layernorm", "name": h + "ln1"},
               {"type": "causal_self_attention", "name": h + "attn", "heads": heads, "proj_init_std": 0.01},
               {"type": "add", "name": h + "add1", "inputs": [previous, h + "attn"]},
               {"type": "layernorm", "name": h + "ln2"},
               {"type": "linear", "name": h + "fc", "out_features": 4 * c, "init_std": 0.02},
               {"type": "gelu", "name": h + "gelu"},
               {"type": "linear", "name": h + "proj", "out_features": c, "init_std": 0.01},
               {"type": "add", "name": h + "add2", "inputs": [h + "add1", h + "proj"]}]
    previous = h + "add2"
layers += [{"type": "layernorm", "name": "ln_f"},
           {"type": "linear", "name": "head", "out_features": "classes", "bias": False, "tied_to": "wte"}]
json.dump({"layers": layers}, open(path, "w"), indent=1)
PY
}

# image_data FILE — a small learnable set of 1 x 8 x 8 uint8 images (4 classes: a bright quadrant each, with
# noise), imported from numpy by mirror-data, for the augmentation cases.
image_data() {
  local file="$1"
  /usr/bin/python3 - "$TMP/images.npz" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
y = rng.integers(0, 4, 1000)
x = rng.integers(0, 60, (1000, 8, 8))
for i, c in enumerate(y):
    r, q = divmod(int(c), 2)
    x[i, 4 * r:4 * r + 4, 4 * q:4 * q + 4] += 150
np.savez(sys.argv[1], x=x.astype(np.uint8), y=y)
PY
  "$MIRROR_DATA" import "$TMP/images.npz" --test-fraction 0.2 --seed 1 --out "$file" >/dev/null
}

# kill_rank_and_restart CKDIR OUT TRAINER-ARGS... — runs the trainer at 2 ranks under mirrorrun --max-restarts 2
# with --checkpoint-dir CKDIR --resume auto (output to OUT), kills one of its ranks with SIGKILL once the first
# checkpoint is there, and fails unless the job restarted, resumed and then finished with exit 0.
kill_rank_and_restart() {
  local ck="$1" out="$2"; shift 2
  timeout 300 "$MIRRORRUN" -np 2 --max-restarts 2 --restart-delay 0.2 -- \
    "$TRAINER" "$@" --checkpoint-dir "$ck" --resume auto >"$out" 2>&1 &
  local job=$! victim="" pid rc=0
  for _ in $(seq 1 1200); do
    compgen -G "$ck/ckpt-*.h5" >/dev/null && break
    sleep 0.05
  done
  compgen -G "$ck/ckpt-*.h5" >/dev/null || { kill "$job"; fail "no first checkpoint: $(cat "$out")"; }
  for pid in $(pgrep -x trainer); do  # a real trainer process of this job, not mpirun
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$ck"; then victim=$pid; break; fi
  done
  [ -n "$victim" ] || { kill "$job"; fail "no trainer rank found to kill"; }
  kill -9 "$victim"
  echo "killed rank pid $victim"
  wait "$job" || rc=$?
  [ "$rc" -eq 0 ] || fail "mirrorrun exited $rc: $(cat "$out")"
  grep -q "restart 1 of 2" "$out" || fail "no restart reported: $(cat "$out")"
  grep -q "resumed from" "$out" || fail "the restarted job did not resume: $(cat "$out")"
}

# wait_started FILE — waits (bounded, 20 s) until the trainer's banner is in FILE; fails when it never comes.
wait_started() {
  for _ in $(seq 1 400); do grep -q "steps per epoch" "$1" 2>/dev/null && break; sleep 0.05; done
  grep -q "steps per epoch" "$1" || fail "the trainer did not start: $(tail -5 "$1")"
}
