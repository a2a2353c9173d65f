#!/usr/bin/env bash
# cluster_faults.sh CASE — network and host faults on a test cluster of 2 hosts x 2 ranks (scripts/cluster.sh),
# the trainer under mirrorrun; run by CTest (label `cluster`). Each case asserts exit codes, messages and time
# bounds, that no process is left on any host, and prints the measured times as "FIGURE" lines
# (docs/reliability.md). Programs from the environment: MIRRORRUN, TRAINER, MIRROR_DATA, MIRROR_CKPT.
#   link-down   host 1's link goes down mid-training (--timeout 5): ranks 0 and 1 fail naming ranks 2 and 3
#               and their host (and their own);
#               the ranks on host 1 end themselves (both within timeout + 10 s; the times: docs/reliability.md);
#               mirrorrun exits non-zero within timeout + 15 s
#   host-kill   every process of host 1 is killed: the job ends within seconds, naming host 1
#   link-flap   host 1's link down for 1 s, then up (--timeout 10): the job finishes with exit 0 and the same
#               parameters, bit for bit, as a run without the flap
#   restart     host 1's processes killed mid-training under --max-restarts 1 --resume auto: one restart on
#               the same hosts, and the final parameters equal an uninterrupted run's bit for bit
source "$(dirname "$0")/cluster_lib.sh"
case_name="$1"

T=5            # the collectives' --timeout in the failure cases
JOB_LIMIT=120  # every job runs under `timeout` this long at most

data() { "$MIRROR_DATA" synth --out "$TMP/d.h5" --train 40000 --test 200 --features 32 --classes 4 --seed 3 >/dev/null; }
trainer_args() {  # CKPT_DIR EPOCHS TIMEOUT [more]
  local dir="$1" epochs="$2" timeout="$3"; shift 3
  echo --data "$TMP/d.h5" --model mlp:64 --epochs "$epochs" --batch-size 16 --device cpu --progress off \
    --eval-every 0 --seed 9 --timeout "$timeout" --checkpoint-dir "$dir" "$@"
}

# start_job NAME ARGS... — mirrorrun on 2 hosts x 2 in the background (output TMP/NAME.out, pid in JOB);
# returns once training runs (the first epoch line, or, with --wait-steps, the banner).
start_job() {
  local name="$1"; shift
  timeout "$JOB_LIMIT" "$MIRRORRUN" --hostfile "$HOSTS2" "$@" >"$TMP/$name.out" 2>&1 &
  JOB=$!
  for _ in $(seq 1 300); do grep -q "epoch 1/" "$TMP/$name.out" 2>/dev/null && return 0; kill -0 "$JOB" 2>/dev/null || break; sleep 0.1; done
  fail "$name: training did not start: $(cat "$TMP/$name.out")"
}
# wait_job NAME LIMIT_S — waits (bounded) for JOB; sets RC and T_END (ms); fails when it outlives LIMIT_S.
wait_job() {
  local name="$1" limit="$2"
  for _ in $(seq 1 $((limit * 10))); do kill -0 "$JOB" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$JOB" 2>/dev/null; then
    kill -TERM "$JOB" 2>/dev/null || true
    fail "$name: mirrorrun still running ${limit} s after the fault: $(tail -20 "$TMP/$name.out")"
  fi
  RC=0; wait "$JOB" || RC=$?
  T_END=$(now_ms)
}
rank_pids_on() {  # HOST — trainer processes on HOST
  local p
  for p in $("$CLUSTER_SH" pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = trainer ] && echo "$p"; done
  return 0
}
final_ckpt() { ls "$1"/ckpt-*.h5 | sort | tail -1; }
same_params() {  # A B — bit for bit
  local out rc=0
  out="$("$MIRROR_CKPT" diff "$1" "$2" --tol 0 2>&1)" || rc=$?
  [ "$rc" -eq 0 ] || fail "parameters differ: $out"
  echo "final parameters equal bit for bit: $(basename "$1") = $(basename "$2")"
}

link_down_case() {
  data
  start_job down -- "$TRAINER" $(trainer_args "$TMP/ck" 100000 $T)
  local t0 t_err=0 t_gone=0
  t0=$(now_ms)
  "$CLUSTER_SH" link "${HOSTS[1]}" down
  # Watch: rank 0's error line, and the ranks of host 1 ending by themselves (they cannot hear mpirun).
  for _ in $(seq 1 $(((T + 20) * 10))); do
    [ "$t_err" -ne 0 ] || ! grep -q "\[rank 0\] error" "$TMP/down.out" || t_err=$(now_ms)
    [ "$t_gone" -ne 0 ] || [ -n "$(rank_pids_on "${HOSTS[1]}")" ] || t_gone=$(now_ms)
    kill -0 "$JOB" 2>/dev/null || break
    sleep 0.1
  done
  wait_job down $((T + 20))
  local out; out="$(cat "$TMP/down.out")"
  grep -v "epoch " <<<"$out" | cut -c1-400
  [ "$RC" -ne 0 ] || fail "link-down: exit 0"
  [ "$RC" -ne 124 ] || fail "link-down: mirrorrun hung (killed by timeout $JOB_LIMIT)"
  local r line
  for r in 0 1; do
    line="$(grep "\[rank $r\] error" <<<"$out" | head -1)"
    [ -n "$line" ] || fail "link-down: surviving rank $r printed no error"
    grep -q "did not arrive: ranks 2, 3 (host ${HOSTS[1]};" <<<"$line" \
      || fail "link-down: rank $r does not name ranks 2 and 3 and their host ${HOSTS[1]}: $line"
    grep -q "rank $r (host ${HOSTS[0]})" <<<"$line" || fail "link-down: rank $r does not name its own host ${HOSTS[0]}: $line"
  done
  grep -q "mirrorrun: a rank reported a fatal error" <<<"$out" || fail "link-down: mirrorrun did not end the hung mpirun"
  [ "$t_err" -ne 0 ] && [ $((t_err - t0)) -le $(( (T + 10) * 1000 )) ] \
    || fail "link-down: rank 0 reported $((t_err - t0)) ms after the cut (timeout ${T} s + 10 s allowed: a loaded 2-core CI machine)"
  [ "$t_gone" -ne 0 ] && [ $((t_gone - t0)) -le $(( (T + 10) * 1000 )) ] \
    || fail "link-down: the ranks of ${HOSTS[1]} did not end themselves within ${T} s + 10 s (t=$((t_gone - t0)) ms)"
  [ $((T_END - t0)) -le $(( (T + 15) * 1000 )) ] \
    || fail "link-down: mirrorrun exited $((T_END - t0)) ms after the cut (timeout ${T} s + 15 s allowed)"
  no_process_on_hosts
  echo "FIGURE link-down: timeout ${T} s; rank 0 reported $((t_err - t0)) ms after the cut; the ranks of the cut-off host ended themselves at $((t_gone - t0)) ms; mirrorrun exited $((T_END - t0)) ms after the cut with $RC"
}

host_kill_case() {
  data
  start_job kill -- "$TRAINER" $(trainer_args "$TMP/ck" 100000 $T)
  local t0; t0=$(now_ms)
  "$CLUSTER_SH" kill "${HOSTS[1]}" KILL
  wait_job kill 20
  local out; out="$(cat "$TMP/kill.out")"
  grep -v "epoch " <<<"$out" | grep -v "^\*\|^  [a-z]\|^$" | cut -c1-300 | head -30
  [ "$RC" -ne 0 ] || fail "host-kill: exit 0"
  [ $((T_END - t0)) -le 10000 ] || fail "host-kill: the job ended $((T_END - t0)) ms after the kill (10 s allowed)"
  # Open MPI names the lost host by name ("Remote daemon ... on node H", "Peer host: H") or, when a rank's
  # connection fails first, by its address ("connect() to 10.213.K.11:PORT failed").
  local addr
  addr="$("$CLUSTER_SH" exec "${HOSTS[1]}" -- ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)"
  grep -qE "${HOSTS[1]}|${addr//./\\.}[^0-9]" <<<"$out" || fail "host-kill: the lost host ${HOSTS[1]} ($addr) is not named"
  no_process_on_hosts
  echo "FIGURE host-kill: every process of ${HOSTS[1]} killed; mirrorrun exited $((T_END - t0)) ms later with $RC; named: $(grep -m1 -E "${HOSTS[1]}|$addr" <<<"$out" | sed 's/^ *//')"
}

link_flap_case() {
  data
  local epochs=12
  timeout "$JOB_LIMIT" "$MIRRORRUN" --hostfile "$HOSTS2" -- "$TRAINER" $(trainer_args "$TMP/ref" $epochs 10) >"$TMP/ref.out" 2>&1 \
    || fail "link-flap: the run without a flap failed: $(cat "$TMP/ref.out")"
  start_job flap -- "$TRAINER" $(trainer_args "$TMP/ck" $epochs 10)
  local t0; t0=$(now_ms)
  "$CLUSTER_SH" link "${HOSTS[1]}" down
  sleep 1
  "$CLUSTER_SH" link "${HOSTS[1]}" up
  local t_up; t_up=$(now_ms)
  kill -0 "$JOB" 2>/dev/null || fail "link-flap: the job ended before the link came back: too short to test ($(tail -3 "$TMP/flap.out"))"
  wait_job flap 60
  grep -v "epoch " "$TMP/flap.out" | head -10
  [ "$RC" -eq 0 ] || fail "link-flap: exit $RC: $(tail -20 "$TMP/flap.out")"
  grep -q "epoch $epochs/$epochs" "$TMP/flap.out" || fail "link-flap: the last epoch did not finish"
  same_params "$(final_ckpt "$TMP/ref")" "$(final_ckpt "$TMP/ck")"
  no_process_on_hosts
  echo "FIGURE link-flap: link of ${HOSTS[1]} down $((t_up - t0)) ms mid-training (--timeout 10); the job finished $((T_END - t_up)) ms after it came back, exit 0, parameters bit-identical to the run without the flap"
}

restart_case() {
  data
  local epochs=12 every=2000
  timeout "$JOB_LIMIT" "$MIRRORRUN" --hostfile "$HOSTS2" -- "$TRAINER" \
    $(trainer_args "$TMP/ref" $epochs $T --checkpoint-every $every) >"$TMP/ref.out" 2>&1 \
    || fail "restart: the uninterrupted run failed: $(cat "$TMP/ref.out")"
  start_job restart --max-restarts 1 --restart-delay 0 -- "$TRAINER" \
    $(trainer_args "$TMP/ck" $epochs $T --checkpoint-every $every --resume auto)
  for _ in $(seq 1 300); do ls "$TMP/ck"/ckpt-*.h5 >/dev/null 2>&1 && break; sleep 0.1; done
  ls "$TMP/ck"/ckpt-*.h5 >/dev/null 2>&1 || fail "restart: no checkpoint written: $(cat "$TMP/restart.out")"
  local t0; t0=$(now_ms)
  "$CLUSTER_SH" kill "${HOSTS[1]}" KILL
  wait_job restart 90
  local out; out="$(cat "$TMP/restart.out")"
  grep -E "mirrorrun:|resum|ranks on" <<<"$out" | cut -c1-300
  [ "$RC" -eq 0 ] || fail "restart: exit $RC: $(tail -20 <<<"$out")"
  grep -q "restart 1 of 1" <<<"$out" || fail "restart: no restart"
  grep -q "mirrorrun: 1 restart(s); job exit code 0" <<<"$out" || fail "restart: no final restart count"
  grep -qi "resum" <<<"$out" || fail "restart: the second attempt did not resume from a checkpoint"
  same_params "$(final_ckpt "$TMP/ref")" "$(final_ckpt "$TMP/ck")"
  no_process_on_hosts
  echo "FIGURE restart: processes of ${HOSTS[1]} killed mid-training; mirrorrun restarted the job on the same hosts, it resumed and finished $((T_END - t0)) ms after the kill, exit 0, parameters bit-identical to the uninterrupted run"
}

cluster_up "f${case_name:0:1}${case_name: -1}" 2
HOSTS2="$(hostfile 2)"
case "$case_name" in
  link-down) link_down_case ;;
  host-kill) host_kill_case ;;
  link-flap) link_flap_case ;;
  restart) restart_case ;;
  *) fail "unknown case $case_name" ;;
esac
cluster_down_and_check
echo "ok: $case_name"
