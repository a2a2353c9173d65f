#!/usr/bin/env bash
# launcher_cases.sh — end-to-end cases of mirrorrun that need a scratch folder or a signal, run by CTest:
#   launcher_cases.sh MIRRORRUN RANK_PROBE restart   a job that fails once ends 0 after exactly one restart,
#                                                    without Open MPI's exit banner (mpirun --quiet)
#   launcher_cases.sh MIRRORRUN RANK_PROBE sigterm   SIGTERM reaches every rank, which gets time to "checkpoint";
#                                                    mirrorrun ends with 143 (128 + SIGTERM)
#   launcher_cases.sh MIRRORRUN RANK_PROBE grace     ranks ignore SIGTERM: after --grace-period the job is
#                                                    killed; 143, within seconds, no rank left running
#   launcher_cases.sh MIRRORRUN RANK_PROBE second-signal   a second SIGTERM (later than 1 s) kills at once
#   launcher_cases.sh MIRRORRUN RANK_PROBE failure-grace   a rank prints "[rank 1] error: ..." and the job goes
#                                                    on: --failure-grace 1 s later mirrorrun kills mpirun and
#                                                    the ranks; exit 1, nothing left running
#   launcher_cases.sh MIRRORRUN RANK_PROBE heavy-output    2 ranks print 100000 short lines each: with
#                                                    --no-tag-output every byte arrives
#   launcher_cases.sh MIRRORRUN RANK_PROBE progress-tty    the real trainer (TRAINER, MIRROR_DATA from the
#                                                    environment) under mirrorrun on a terminal (`script` gives
#                                                    it a pseudo-terminal): short [rR] tags, and each epoch's
#                                                    progress bar is one line redrawn with '\r', tag kept
# Every wait is bounded; the scratch folder is removed on exit.
set -euo pipefail
mirrorrun=$1 probe=$2 case=$3
dir=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $case in
  restart)
    set +e
    out=$(timeout 60 "$mirrorrun" -np 2 --max-restarts 2 --restart-delay 0 "$probe" fail-once "$dir" 2>&1)
    rc=$?
    set -e
    echo "$out"
    [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
    grep -q "job failed (exit code 4); restart 1 of 2" <<<"$out" || fail "no restart line with the cause"
    if grep -q "Primary job" <<<"$out"; then fail "Open MPI's exit banner follows the failure"; fi
    grep -q "mirrorrun: 1 restart(s); job exit code 0" <<<"$out" || fail "no final restart count"
    grep -q "rank 0 attempt later (MIRROR_RESTART_COUNT=1)" <<<"$out" || fail "second attempt not seen"
    ;;
  sigterm)
    timeout 60 "$mirrorrun" -np 2 --grace-period 20 "$probe" wait-signal "$dir" &
    pid=$!
    for _ in $(seq 200); do  # up to 20 s for both ranks to start
      [ -e "$dir/ready.0" ] && [ -e "$dir/ready.1" ] && break
      sleep 0.1
    done
    [ -e "$dir/ready.0" ] && [ -e "$dir/ready.1" ] || fail "ranks did not start"
    kill -TERM "$pid"
    set +e
    wait "$pid"
    rc=$?
    set -e
    pid=""
    [ "$rc" -eq 143 ] || fail "exit code $rc, expected 143"
    for r in 0 1; do
      [ -e "$dir/stopped.$r" ] || fail "rank $r was not given time to stop (no stopped.$r)"
      [ "$(cat "$dir/stopped.$r")" = 15 ] || fail "rank $r got signal $(cat "$dir/stopped.$r"), expected 15"
    done
    ;;
  grace|second-signal)
    grace=2
    [ "$case" = second-signal ] && grace=60
    start=$(date +%s)
    timeout --foreground 60 "$mirrorrun" -np 2 --grace-period $grace "$probe" ignore-signal "$dir" &
    pid=$!
    for _ in $(seq 200); do
      [ -e "$dir/ready.0" ] && [ -e "$dir/ready.1" ] && break
      sleep 0.1
    done
    [ -e "$dir/ready.0" ] && [ -e "$dir/ready.1" ] || fail "ranks did not start"
    kill -TERM "$pid"
    if [ "$case" = second-signal ]; then sleep 1.5; kill -TERM "$pid"; fi
    set +e
    wait "$pid"
    rc=$?
    set -e
    pid=""
    elapsed=$(( $(date +%s) - start ))
    [ "$rc" -eq 143 ] || fail "exit code $rc, expected 143"
    [ "$elapsed" -lt 30 ] || fail "took ${elapsed} s to stop"   # a bound against hangs, not a timing test
    for r in 0 1; do
      rank_pid=$(cat "$dir/ready.$r")
      state=$(awk '{print $3}' "/proc/$rank_pid/stat" 2>/dev/null || true)
      [ -z "$state" ] || fail "rank $r (pid $rank_pid) still there, state $state"
    done
    ;;
  failure-grace)
    start=$(date +%s%3N)
    set +e
    out=$(timeout 60 "$mirrorrun" -np 2 --failure-grace 1 "$probe" report-error "$dir" 2>&1)
    rc=$?
    set -e
    took=$(( $(date +%s%3N) - start ))
    echo "$out"
    [ "$rc" -eq 1 ] || fail "exit code $rc, expected 1"
    grep -q "\[r1\] \[rank 1\] error: simulated fatal error" <<<"$out" || fail "the rank's error line is missing"
    grep -q "mirrorrun: a rank reported a fatal error 1 s ago and mpirun has not ended the job" <<<"$out" \
      || fail "mirrorrun did not say why it killed mpirun"
    [ "$took" -lt 20000 ] || fail "took ${took} ms (the ranks run 30 s: mirrorrun did not end the job)"
    for r in 0 1; do
      rank_pid=$(cat "$dir/ready.$r")
      state=$(awk '{print $3}' "/proc/$rank_pid/stat" 2>/dev/null || true)
      [ -z "$state" ] || fail "rank $r (pid $rank_pid) still there, state $state"
    done
    echo "job ended ${took} ms after start (--failure-grace 1)"
    ;;
  heavy-output)
    set +e
    timeout 60 "$mirrorrun" -np 2 --no-tag-output -- /bin/sh -c 'seq 1 100000' >"$dir/out" 2>&1
    rc=$?
    set -e
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    # Untagged, the two ranks' chunks may interleave mid-line, but no byte may be lost.
    bytes=$(wc -c <"$dir/out")
    want=$(( 2 * $(seq 1 100000 | wc -c) ))
    [ "$bytes" -eq "$want" ] || fail "$bytes bytes arrived, expected $want"
    [ "$(tr -cd '0-9' <"$dir/out" | wc -c)" -eq $(( 2 * $(seq 1 100000 | tr -cd '0-9' | wc -c) )) ] \
      || fail "digits lost"
    echo "all $want bytes arrived"
    ;;
  progress-tty)
    "$MIRROR_DATA" synth --out "$dir/d.h5" --train 2000 --test 100 --features 16 --classes 4 --seed 5 >/dev/null
    command -v script >/dev/null || fail "script (util-linux/bsdutils) not found"
    set +e
    timeout 60 script -qfec "$(printf '%q ' "$mirrorrun" -np 2 -- "$TRAINER" --data "$dir/d.h5" --model mlp:32 \
      --epochs 2 --batch-size 4 --device cpu --eval-every 1 --progress auto)" /dev/null >"$dir/tty.out" 2>&1
    rc=$?
    set -e
    cat -A "$dir/tty.out" | cut -c1-240
    [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
    ! grep -q "<stdout>\|<stderr>" "$dir/tty.out" || fail "Open MPI's long tags reached the terminal"
    grep -q "^\[r0\] mirror trainer: 2 ranks" "$dir/tty.out" || fail "rank 0's banner is not tagged [r0]"
    for e in 1 2; do
      # All redraws of epoch e's bar on one line (the pty ends lines with \r\n), each redraw tagged.
      lines=$(grep -c "epoch $e/2 \[" "$dir/tty.out" || true)
      [ "$lines" -eq 1 ] || fail "epoch $e's bar spans $lines lines, expected 1"
      redraws=$(grep "epoch $e/2 \[" "$dir/tty.out" | tr '\r' '\n' | grep -c "^\[r0\] epoch $e/2 \[" || true)
      [ "$redraws" -ge 2 ] || fail "epoch $e's bar was drawn $redraws time(s) with the [r0] tag, expected >= 2"
      echo "epoch $e: one line, $redraws redraws"
    done
    ;;
  *) fail "unknown case $case" ;;
esac
echo "PASS: $case"
