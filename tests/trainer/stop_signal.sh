#!/usr/bin/env bash
# stop_signal.sh — SIGTERM/SIGINT never run their handler on a thread that computes. oneDNN 2.x's JIT sgemm
# moves rsp onto its heap workspace for a large K (uxlfoundation/oneDNN#4845; cnn-bn's fc1 has K = 3136), so a
# handler run there writes its signal frame into the heap and malloc aborts a moment later ("smallbin double
# linked list corrupted" in the step's backward). Checks: every rank's main thread (forward/backward run there)
# blocks both signals (SigBlk in /proc), some other thread still takes them (the trainer's stop thread), and
# SIGTERM to the ranks still stops the job after its step with the stop line. Then: a SIGTERM during a long
# evaluation leaves it (the epoch's line has no test figures), still writes the epoch's checkpoint and stops,
# instead of finishing an evaluation that would outlast mirrorrun's grace period.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
# shellcheck disable=SC2086
"$MPIEXEC" -np 2 $MPIEXEC_FLAGS "$TRAINER" --data "$TMP/d.h5" --model mlp:256,256 --epochs 3000 --batch-size 16 --eval-every 0 \
  --progress off >"$TMP/out" 2>&1 &
job=$!
trap 'kill -TERM "$job" 2>/dev/null || true; wait "$job" 2>/dev/null || true; rm -rf "$TMP"' EXIT  # no job outlives a failure
wait_started "$TMP/out"
sleep 0.5  # past the first steps: the loader and the collectives' threads exist
pids=()
for pid in $(pgrep -x trainer); do
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$TMP/d.h5" && pids+=("$pid")
done
[ "${#pids[@]}" -eq 2 ] || fail "expected 2 trainer processes, found ${#pids[@]}"
# blocks TASK — whether the thread blocks SIGTERM (15) and SIGINT (2); a thread that already exited counts as blocking.
blocks() {
  local m
  m=$(awk '/^SigBlk/ {print $2}' "$1/status" 2>/dev/null) || return 0
  [ -n "$m" ] || return 0
  (( (0x$m >> 14 & 1) && (0x$m >> 1 & 1) ))
}
for pid in "${pids[@]}"; do
  blocks "/proc/$pid/task/$pid" || fail "pid $pid: the main thread (which computes) does not block SIGTERM/SIGINT"
  open=0
  for t in /proc/"$pid"/task/*; do blocks "$t" || open=$((open + 1)); done
  [ "$open" -ge 1 ] || fail "pid $pid: every thread blocks SIGTERM/SIGINT: nothing would take them"
done
echo "ok: both ranks' main threads block SIGTERM/SIGINT; other threads take them"
# To the ranks themselves, as mirrorrun and batch schedulers (Slurm) deliver it: mpirun given SIGTERM kills its
# ranks one second later (odls_base_sigkill_timeout), which a loaded machine can spend before they have agreed to
# stop and printed it.
kill -TERM "${pids[@]}"
wait "$job" || true
grep -q "stopped by signal at step" "$TMP/out" || fail "SIGTERM did not stop the job after a step: $(tail -5 "$TMP/out")"
echo "ok: SIGTERM to the ranks stops them after the step"

# One training step, then an evaluation of 200,000 samples through mlp:2048,2048 (tens of seconds per rank).
"$MIRROR_DATA" synth --out "$TMP/e.h5" --train 64 --test 200000 --features 20 --classes 4 --seed 11 >/dev/null
"$MIRRORRUN" -np 2 -- "$TRAINER" --data "$TMP/e.h5" --model mlp:2048,2048 --epochs 2 --batch-size 32 \
  --checkpoint-dir "$TMP/ck" --progress off >"$TMP/eval-out" 2>&1 &
job=$!
wait_started "$TMP/eval-out"
sleep 1  # the one step takes milliseconds: the ranks are inside the evaluation now
start=$(date +%s.%N)
kill -TERM "$job"
rc=0
wait "$job" || rc=$?
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
[ "$rc" -eq 143 ] || fail "expected exit 143 (stopped) after SIGTERM during the evaluation, got $rc: $(tail -5 "$TMP/eval-out")"
grep -q "stop requested during the evaluation of epoch 1: evaluation abandoned" "$TMP/eval-out" ||
  fail "the evaluation was not abandoned: $(tail -5 "$TMP/eval-out")"
grep -Eq "epoch 1/2 .*test_loss -  test_acc -" "$TMP/eval-out" ||
  fail "the abandoned epoch's line should have no test figures: $(grep epoch "$TMP/eval-out")"
! grep -q "epoch 2/2" "$TMP/eval-out" || fail "the job went on to epoch 2 after the stop request"
grep -q "stopped by signal at step 1" "$TMP/eval-out" || fail "no stop line: $(tail -5 "$TMP/eval-out")"
ls "$TMP"/ck/*.h5 >/dev/null 2>&1 || fail "no checkpoint of the epoch was written: $(ls "$TMP/ck" 2>&1)"
echo "ok: SIGTERM during the evaluation abandons it, keeps the epoch's checkpoint and stops (exit 143 in ${took}s)"
