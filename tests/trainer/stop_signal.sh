#!/usr/bin/env bash
# stop_signal.sh — SIGTERM/SIGINT never run their handler on a thread that computes. oneDNN 2.x's JIT sgemm
# moves rsp onto its heap workspace for a large K (uxlfoundation/oneDNN#4845; cnn-bn's fc1 has K = 3136), so a
# handler run there writes its signal frame into the heap and malloc aborts a moment later ("smallbin double
# linked list corrupted" in the step's backward). Checks: every rank's main thread (forward/backward run there)
# blocks both signals (SigBlk in /proc), some other thread still takes them (the trainer's stop thread), and
# SIGTERM to mpirun still stops the job after its step with the stop line.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
# shellcheck disable=SC2086
"$MPIEXEC" -np 2 $MPIEXEC_FLAGS "$TRAINER" --data "$TMP/d.h5" --model mlp:256,256 --epochs 3000 --batch-size 16 --eval-every 0 \
  --progress off >"$TMP/out" 2>&1 &
job=$!
trap 'kill -TERM "$job" 2>/dev/null || true; wait "$job" 2>/dev/null || true; rm -rf "$TMP"' EXIT  # no job outlives a failure
for _ in $(seq 1 400); do grep -q "steps per epoch" "$TMP/out" 2>/dev/null && break; sleep 0.05; done
grep -q "steps per epoch" "$TMP/out" || fail "the trainer did not start: $(tail -5 "$TMP/out")"
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
kill -TERM "$job"
wait "$job" || true
grep -q "stopped by signal at step" "$TMP/out" || fail "SIGTERM did not stop the job after a step: $(tail -5 "$TMP/out")"
echo "ok: SIGTERM to mpirun stops after the step"
