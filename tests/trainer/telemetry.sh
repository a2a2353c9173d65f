#!/usr/bin/env bash
# telemetry.sh — the trainer's --tensorboard and --timeline, read with TensorBoard's own EventAccumulator
# (the project's Python environment, scripts/python-env.sh) and a JSON parser, checked against the
# --metrics JSONL of the same run: per-epoch scalars equal the metrics (as float32), per-step scalars every
# K steps, a resumed run's second event file repeats no step, and the timeline has a track per rank with
# the step's spans inside the window, their sums bracketing the metrics' per-step times.
# A language model's evaluation lines (perplexity, bits per byte, tokens/s, gradient norm) equal the metrics too.
# Exit 77 (skipped) only when the package index cannot be reached to install tensorboard.
source "$(dirname "$0")/../scripts/lib.sh"
src="$(cd "$(dirname "$0")/../.." && pwd)"
rc=0
python="$(bash "$src/scripts/python-env.sh")" || rc=$?
if [ "$rc" -eq 77 ]; then echo "SKIPPED: tensorboard cannot be installed (no package index)"; exit 77; fi
[ "$rc" -eq 0 ] || fail "scripts/python-env.sh failed ($rc)"

synth_data "$TMP/d.h5"
# Bad values are refused by the flag parser, saying what is expected.
expect_error 2 "timeline-steps.*A:B.*got '7:3'" mpi 1 "$TRAINER" --data "$TMP/d.h5" --timeline-steps 7:3
expect_error 2 "tensorboard-every.*positive integer, got 0" mpi 1 "$TRAINER" --data "$TMP/d.h5" --tensorboard-every 0
# 960 samples / (2 x 16) = 30 steps per epoch. 1 KB buckets: mlp:64,32 has two (the last two layers, the first).
common=(--data "$TMP/d.h5" --model mlp:64,32 --epochs 3 --batch-size 16 --eval-every 1 --progress off
        --bucket-mb 0.001 --seed 5 --tensorboard-every 4)
mpi 2 "$TRAINER" "${common[@]}" --metrics "$TMP/m.jsonl" --tensorboard "$TMP/tb" --checkpoint-dir "$TMP/ck" \
  --checkpoint-every 25 --timeline "$TMP/trace.json" --timeline-steps 1:30 >/dev/null

# Interrupted: a run to step 44 checkpointing every 20 whose last checkpoint is lost, resumed from step 40
# with the event file already holding steps 41..44.
mpi 2 "$TRAINER" "${common[@]}" --tensorboard "$TMP/tb2" --checkpoint-dir "$TMP/ck2" --checkpoint-every 20 \
  --max-steps 44 >/dev/null
rm -f "$TMP/ck2/ckpt-00000044.h5"   # as if killed after step 44 before its checkpoint
mpi 2 "$TRAINER" "${common[@]}" --tensorboard "$TMP/tb2" --checkpoint-dir "$TMP/ck2" --checkpoint-every 20 \
  --resume auto --metrics "$TMP/m2.jsonl" >"$TMP/resume.out"
grep -q "resumed from .*ckpt-00000040.h5" "$TMP/resume.out" || fail "no resume from step 40: $(cat "$TMP/resume.out")"

# A language model: its evaluation lines' scalars (perplexity, bits per byte, tokens/s, the gradient norm).
word_text_data "$TMP/text.h5" 3
tiny_gpt "$TMP/tiny.json" 12 3 9 2
mpi 2 "$TRAINER" --data "$TMP/text.h5" --model "$TMP/tiny.json" --train-steps 10 --eval-every-steps 4 --batch-size 4 \
  --optimizer adamw --lr 0.01 --grad-clip 1.0 --seed 5 --progress off --metrics "$TMP/lm.jsonl" \
  --tensorboard "$TMP/tb-lm" >/dev/null || fail "the language model's run failed"

"$python" - "$TMP" <<'PY'
import json, os, struct, sys
from tensorboard.backend.event_processing import event_accumulator
tmp = sys.argv[1]

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

def scalars(d):
    acc = event_accumulator.EventAccumulator(d, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}

def check_against_metrics(tb, metrics, what):
    lines = [json.loads(l) for l in open(metrics)]
    keys = ["train_loss", "train_acc", "test_loss", "test_acc", "samples_per_s", "step_s", "data_wait_s",
            "compute_s", "comm_wait_s", "optimizer_s", "gather_s"]
    for k in keys:
        got = tb.get("epoch/" + k)
        want = [(m["step"], f32(m[k])) for m in lines]
        assert got == want, f"{what}: epoch/{k} {got} != metrics {want}"
    steps = [s for s, _ in tb["train/loss"]]
    assert steps == list(range(4, lines[-1]["step"] + 1, 4)), f"{what}: train/loss steps {steps}"
    for m in lines:  # train/lr at an epoch's last step equals the metrics' lr there, when K divides it
        if m["step"] % 4 == 0:
            assert (m["step"], f32(m["lr"])) in tb["train/lr"], (what, m["step"], m["lr"])
    for tag, events in tb.items():
        s = [e[0] for e in events]
        assert len(s) == len(set(s)), f"{what}: {tag} has a step twice: {s}"
    print(f"ok: {what}: {len(lines)} epochs x {len(keys)} epoch scalars equal the metrics; "
          f"train/loss at {len(steps)} steps")

check_against_metrics(scalars(os.path.join(tmp, "tb")), os.path.join(tmp, "m.jsonl"), "one run")

lm = scalars(os.path.join(tmp, "tb-lm"))
lm_lines = [json.loads(l) for l in open(os.path.join(tmp, "lm.jsonl"))]
assert [m["step"] for m in lm_lines] == [4, 8, 10], [m["step"] for m in lm_lines]
for k in ["train_loss", "test_loss", "test_perplexity", "test_bits_per_byte", "tokens_per_s", "grad_norm"]:
    want = [(m["step"], f32(m[k])) for m in lm_lines if k in m]
    assert want and lm.get("epoch/" + k) == want, f"language model: epoch/{k} {lm.get('epoch/' + k)} != metrics {want}"
print(f"ok: a language model's {len(lm_lines)} evaluation lines, perplexity, bits per byte, tokens/s and gradient "
      "norm included, equal the metrics in TensorBoard")
files = sorted(f for f in os.listdir(os.path.join(tmp, "tb2")) if "tfevents" in f)
assert len(files) == 2, files
check_against_metrics(scalars(os.path.join(tmp, "tb2")), os.path.join(tmp, "m2.jsonl"), "interrupted and resumed")

# The timeline: steps 1..30 = epoch 1, both ranks.
trace = json.load(open(os.path.join(tmp, "trace.json")))
events = trace["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(names) == [0, 1] and names[0].startswith("rank 0 ("), names
epoch1 = json.loads(open(os.path.join(tmp, "m.jsonl")).readline())
for pid in (0, 1):
    spans = [e for e in events if e["ph"] == "X" and e["pid"] == pid]
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] >= 0 and 1 <= e["args"]["step"] <= 30, e
    by = {}
    for e in spans:
        by.setdefault(e["name"].split(" bucket ")[0], []).append(e)
    for name in ("data wait", "forward", "backward", "gradient wait", "optimizer"):
        assert len(by.get(name, [])) == 30, (pid, name, len(by.get(name, [])))
    comm = by.get("allreduce", []) + by.get("reduce-scatter", [])
    assert len(comm) == 2 * 30 and all(e["tid"] == 2 for e in comm), (pid, len(comm))
    comm.sort(key=lambda e: e["ts"])  # one communicator runs them in order: no two overlap on its track
    for a, b in zip(comm, comm[1:]):
        assert b["ts"] >= a["ts"] + a["dur"] - 1e-3, (a, b)
    assert all(e["tid"] == 0 for n in ("forward", "backward", "optimizer") for e in by[n])
    # Every rank takes part in the checkpoint at step 25 (the reductions before rank 0 writes).
    assert [e["args"]["step"] for e in by.get("checkpoint", [])] == [25], (pid, by.get("checkpoint"))
    assert len(by.get("evaluation", [])) == 1, (pid, by.get("evaluation"))
    if pid == 0:  # rank 0's metrics: the spans enclose (or, the optimizer, lie inside) what they measure
        us = lambda n: sum(e["dur"] for e in by[n]) / 1e6
        assert us("gradient wait") >= 30 * epoch1["comm_wait_s"] * (1 - 1e-9), (us("gradient wait"), epoch1)
        assert us("data wait") >= 30 * epoch1["data_wait_s"] * (1 - 1e-9), (us("data wait"), epoch1)
        assert us("optimizer") <= 30 * epoch1["optimizer_s"] * (1 + 1e-9), (us("optimizer"), epoch1)
    print(f"ok: timeline rank {pid}: {len(spans)} spans, {len(comm)} bucket reductions, steps 1..30")
PY
