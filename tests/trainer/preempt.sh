#!/usr/bin/env bash
# preempt.sh — no lost work: (1) SIGTERM to mirrorrun mid-run: the ranks finish their step, rank 0 writes a
# checkpoint of that step, the job exits 143, and --resume auto continues to the same end as an uninterrupted
# run; (2) kill -9 of the rank that writes checkpoints, at several moments while it writes one every step:
# every ckpt-*.h5 left behind verifies, and --resume auto continues from the newest.
source "$(dirname "$0")/../scripts/lib.sh"
synth_data "$TMP/d.h5"
args=(--data "$TMP/d.h5" --model mlp:256,256 --epochs 3000 --batch-size 16 --eval-every 0 --progress off --seed 4)
# 30 steps per epoch, 90000 in all: far longer than the test lets it run.

# (1) SIGTERM.
"$MIRRORRUN" -np 2 -- "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/pre" --checkpoint-every 1000000 \
  >"$TMP/pre.out" 2>&1 &
job=$!
wait_started "$TMP/pre.out"
sleep 0.5
start=$(date +%s.%N)
kill -TERM "$job"
rc=0; wait "$job" || rc=$?
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, expected 143: $(tail -5 "$TMP/pre.out")"
grep -q "stopped by signal at step" "$TMP/pre.out" || fail "no stop line: $(tail -5 "$TMP/pre.out")"
step=$(ls "$TMP/pre" | sed -n 's/ckpt-0*\([0-9]*\)\.h5/\1/p' | tail -1)
[ -n "$step" ] || fail "no checkpoint written on SIGTERM: $(tail -5 "$TMP/pre.out")"
echo "ok: SIGTERM -> checkpoint at step $step, exit 143 in ${took}s"
# Resume for 300 more steps; an uninterrupted run of the same length must end identical.
end=$((step + 300))
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/pre" --checkpoint-every 1000000 --resume auto --max-steps "$end" >/dev/null
mpi 2 "$TRAINER" "${args[@]}" --checkpoint-dir "$TMP/ref" --checkpoint-every 1000000 --max-steps "$end" >/dev/null
f=$(printf 'ckpt-%08d.h5' "$end")
"$MIRROR_CKPT" diff "$TMP/ref/$f" "$TMP/pre/$f" --tol 0 >/dev/null \
  || fail "preempted and resumed run differs from the uninterrupted one"
echo "ok: resumed after SIGTERM == uninterrupted (step $end)"

# (2) kill -9 while checkpoints are being written (one per step, so most moments fall inside a write).
# Each job is bounded (1000 steps past the checkpoint it resumes from, seconds) so that a kill that found no
# rank to hit cannot run for minutes.
newest_step() { find "$TMP/k9" -name 'ckpt-*.h5' 2>/dev/null | sed -n 's/.*ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1 | grep . || echo 0; }
landed=0
for delay in 0.05 0.15 0.25 0.35 0.45; do
  "$MIRRORRUN" -np 2 -- "$TRAINER" "${args[@]}" --model mlp:1024,1024 --checkpoint-dir "$TMP/k9" \
    --checkpoint-every 1 --keep 3 --resume auto --max-steps $(($(newest_step) + 1000)) >"$TMP/k9.out" 2>&1 &
  job=$!
  # The first checkpoint is written (so a kill can fall inside a later write), then a little more.
  for _ in $(seq 1 1200); do compgen -G "$TMP/k9/ckpt-*.h5" >/dev/null && break; sleep 0.05; done
  sleep "$delay"
  victim=""
  for pid in $(pgrep -x trainer); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$TMP/k9"; then
      # rank 0 is the writer: its environment says OMPI_COMM_WORLD_RANK=0
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0"; then victim=$pid; fi
    fi
  done
  [ -n "$victim" ] && kill -9 "$victim"
  wait "$job" || true
  grep -q "exited on signal 9" "$TMP/k9.out" && landed=$((landed + 1))
  for f in "$TMP"/k9/ckpt-*.h5; do
    [ -e "$f" ] || continue
    "$MIRROR_CKPT" verify "$f" >/dev/null || fail "after kill -9 at ${delay}s: $f does not verify"
  done
done
n=$(find "$TMP/k9" -name 'ckpt-*.h5' | wc -l)
[ "$n" -ge 1 ] || fail "no checkpoint survived: $(cat "$TMP/k9.out")"
[ "$landed" -ge 1 ] || fail "none of the 5 kill -9 hit a running writer: $(tail -3 "$TMP/k9.out")"
echo "ok: $landed of 5 kill -9 hit the writing rank; all $n checkpoints left verify ($(find "$TMP/k9" -name '*.tmp.*' | wc -l) partial temporaries beside them)"
timeout 120 "$MIRRORRUN" -np 2 -- "$TRAINER" "${args[@]}" --model mlp:1024,1024 --checkpoint-dir "$TMP/k9" \
  --checkpoint-every 100000 --resume auto --max-steps 1 >"$TMP/k9r.out" 2>&1 || true
grep -q "resumed from" "$TMP/k9r.out" || fail "could not resume after the kills: $(cat "$TMP/k9r.out")"
[ "$(find "$TMP/k9" -name '*.tmp.*' | wc -l)" -eq 0 ] || fail "partial temporaries were not cleaned up on restart"
echo "ok: resumed from the newest checkpoint after the kills"
