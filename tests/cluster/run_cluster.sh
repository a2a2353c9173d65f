#!/usr/bin/env bash
# run_cluster.sh CASE — jobs across the hosts of a test cluster (scripts/cluster.sh), run by CTest (label
# `cluster`). Programs come from the environment: MPIEXEC, MPIEXEC_FLAGS, HOST_PROBE, MIRRORRUN, TRAINER,
# MIRROR_DATA, MIRROR_CKPT, MIRROR_EVAL, COLL_TESTS (':'-separated MPI gtest binaries).
#   hosts        2 hosts x 2 ranks, host_probe under mpirun --hostfile and under mirrorrun --hostfile: 2
#                distinct host names, local ranks 0,1 on each (MPI and the environment agree), a /dev/shm of
#                each host's own, a cross-host allreduce exact; no process left on a host; `down` leaves
#                nothing behind.
#   train        trainer (mlp:64, 1 epoch of synthetic data) on 2 hosts x 1 and 2 hosts x 2 ranks, under
#                mirrorrun and under plain mpirun: the final parameters agree within 1e-5 with the same world
#                size on one host, and bit for bit between the two launchers; mirror-eval across the hosts gives
#                the one-host accuracy; the banner names the hosts and the ranks per host.
#   collectives  the collectives' MPI test suites (COLL_TESTS) on 2 hosts x 2 ranks.
#   cleanup      cluster.sh refuses bad input with a clear message; a test that fails, and one killed by
#                SIGTERM, while a job runs on its hosts leave nothing behind (namespaces, links, holders,
#                ranks, daemons).
source "$(dirname "$0")/cluster_lib.sh"
case_name="$1"

# check_layout OUTPUT HOSTS... — host_probe's table for ranks placed by slot (ranks 2h, 2h+1 on host h).
check_layout() {
  local out="$1"; shift
  local hosts=("$@") r h
  grep -q "^allreduce ok" <<<"$out" || fail "no 'allreduce ok': $out"
  for ((r = 0; r < 2 * ${#hosts[@]}; r++)); do
    h="${hosts[$((r / 2))]}"
    grep -qx "rank $r host $h local $((r % 2))/2 env-local $((r % 2)) shm-peers 2" <<<"$out" \
      || fail "rank $r: expected 'host $h local $((r % 2))/2 env-local $((r % 2)) shm-peers 2' in: $out"
  done
  local distinct
  distinct="$(grep -o ' host [^ ]*' <<<"$out" | sort -u | wc -l)"
  [ "$distinct" -eq "${#hosts[@]}" ] || fail "expected ${#hosts[@]} distinct host names, got $distinct: $out"
}

hosts_case() {
  cluster_up hs 2
  local hosts2 out rc=0
  hosts2="$(hostfile 2)"
  # shellcheck disable=SC2086
  out="$(timeout 60 "$MPIEXEC" -np 4 --hostfile "$hosts2" $MPIEXEC_FLAGS "$HOST_PROBE" "probe-$PREFIX" 2>&1)" || rc=$?
  echo "$out"
  [ "$rc" -eq 0 ] || fail "mpirun --hostfile: exit $rc"
  check_layout "$out" "${HOSTS[@]}"
  no_process_on_hosts
  rc=0
  out="$(timeout 60 "$MIRRORRUN" --hostfile "$hosts2" -- "$HOST_PROBE" "probe-$PREFIX" 2>&1)" || rc=$?
  echo "$out"
  [ "$rc" -eq 0 ] || fail "mirrorrun --hostfile: exit $rc"
  grep -q "^\[r0\] rank 3 host ${HOSTS[1]} " <<<"$out" || fail "mirrorrun: rank 0's lines do not start with [r0]"
  check_layout "$(sed 's/^\[r0\] //' <<<"$out")" "${HOSTS[@]}"
  no_process_on_hosts
  cluster_down_and_check
}

# --- train ---
train_args() {  # CKPT_DIR
  echo --data "$TMP/d.h5" --model mlp:64 --epochs 1 --batch-size 8 --device cpu --progress off --seed 7 \
    --timeout 30 --checkpoint-dir "$1"
}
# train_run NAME LAUNCHER HOSTFILE NP HOSTS_LINE — one training job; its banner must have the line HOSTS_LINE
# (hosts and ranks per host); its final checkpoint is TMP/NAME/final.
train_run() {
  local name="$1" launcher="$2" hosts="$3" np="$4" hosts_line="$5" rc=0 out
  if [ "$launcher" = mirrorrun ]; then
    # shellcheck disable=SC2046
    out="$(timeout 90 "$MIRRORRUN" --hostfile "$hosts" -- "$TRAINER" $(train_args "$TMP/$name") 2>&1)" || rc=$?
  else
    # shellcheck disable=SC2046,SC2086
    out="$(timeout 90 "$MPIEXEC" -np "$np" --hostfile "$hosts" $MPIEXEC_FLAGS "$TRAINER" $(train_args "$TMP/$name") 2>&1)" || rc=$?
  fi
  echo "--- $name ($launcher, $(tr '\n' ' ' <"$hosts")):"
  grep -E "ranks on|checkpoint:" <<<"$out" || true
  [ "$rc" -eq 0 ] || fail "$name: exit $rc: $out"
  grep -q "mirror trainer: $np ranks" <<<"$out" || fail "$name: the banner does not say $np ranks: $out"
  grep -Eq "^(\[r0\] )?  $hosts_line\$" <<<"$out" || fail "$name: the banner does not say '$hosts_line': $out"
  grep -q "checkpoint: $TMP/$name/" <<<"$out" || fail "$name: rank 0 wrote no checkpoint: $out"
  no_process_on_hosts
  local last
  last="$(ls "$TMP/$name"/ckpt-*.h5 | sort | tail -1)"
  ln -s "$last" "$TMP/$name/final"
}
# same_params A B TOL — mirror-ckpt diff of two runs' final checkpoints.
same_params() {
  local out rc=0
  out="$("$MIRROR_CKPT" diff "$TMP/$1/final" "$TMP/$2/final" --tol "$3" 2>&1)" || rc=$?
  [ "$rc" -eq 0 ] || fail "$1 vs $2: parameters differ by more than $3: $out"
  echo "$1 vs $2 (tol $3): $(grep -o 'max |a-b| [^ ]*' <<<"$out" | sort -k3 -g | tail -1)"
}
eval_accuracy() {  # LAUNCHER HOSTFILE NP — mirror-eval of the 2x2 run's checkpoint; prints "loss L accuracy A"
  local out
  if [ "$1" = mirrorrun ]; then
    out="$(timeout 60 "$MIRRORRUN" --hostfile "$2" -- "$MIRROR_EVAL" --checkpoint "$TMP/m22" --data "$TMP/d.h5" 2>&1)"
  else
    # shellcheck disable=SC2086
    out="$(timeout 60 "$MPIEXEC" -np "$3" --hostfile "$2" $MPIEXEC_FLAGS "$MIRROR_EVAL" --checkpoint "$TMP/m22" --data "$TMP/d.h5" 2>&1)"
  fi
  grep -o "loss [0-9.]*  accuracy [0-9.]*" <<<"$out" | head -1
}

train_case() {
  cluster_up tr 2
  "$MIRROR_DATA" synth --out "$TMP/d.h5" --train 4000 --test 400 --features 32 --classes 4 --seed 3 >/dev/null
  local one1="$TMP/one.2" one2="$TMP/one.4"
  echo "${HOSTS[0]} slots=2" >"$one1"
  echo "${HOSTS[0]} slots=4" >"$one2"
  local h0="${HOSTS[0]}" h1="${HOSTS[1]}"
  train_run ref2 mpirun "$one1" 2 "2 ranks on 1 host \($h0\)"
  train_run m21 mirrorrun "$(hostfile 1)" 2 "2 ranks on 2 hosts \(1 per host: $h0, $h1\)"
  train_run p21 mpirun "$(hostfile 1)" 2 "2 ranks on 2 hosts \(1 per host: $h0, $h1\)"
  same_params ref2 m21 1e-5
  same_params m21 p21 0
  train_run ref4 mpirun "$one2" 4 "4 ranks on 1 host \($h0\)"
  train_run m22 mirrorrun "$(hostfile 2)" 4 "4 ranks on 2 hosts \(2 per host: $h0, $h1\)"
  train_run p22 mpirun "$(hostfile 2)" 4 "4 ranks on 2 hosts \(2 per host: $h0, $h1\)"
  same_params ref4 m22 1e-5
  same_params m22 p22 0
  local across one
  across="$(eval_accuracy mirrorrun "$(hostfile 2)" 4)"
  one="$(eval_accuracy mpirun "$one2" 4)"
  echo "mirror-eval across hosts: $across; on one host: $one"
  [ -n "$across" ] || fail "mirror-eval across the hosts printed no accuracy"
  [ "${across##* }" = "${one##* }" ] || fail "mirror-eval accuracy across hosts ($across) differs from one host ($one)"
  no_process_on_hosts
  cluster_down_and_check
}

collectives_case() {
  cluster_up co 2
  local hosts t out rc name
  hosts="$(hostfile 2)"
  IFS=: read -r -a tests <<<"$COLL_TESTS"
  for t in "${tests[@]}"; do
    name="$(basename "$t")"
    rc=0
    local t0; t0=$(now_ms)
    # shellcheck disable=SC2086
    out="$(GTEST_COLOR=no timeout 120 "$MPIEXEC" -np 4 --hostfile "$hosts" $MPIEXEC_FLAGS -x MIRROR_TEST_REAL_HOSTS=1 \
      "$t" 2>&1)" || rc=$?
    if [ "$rc" -ne 0 ]; then
      grep -E -A6 'Failure|FAILED|error' <<<"$out" | head -80
      fail "$name on 2 hosts x 2 ranks: exit $rc after $(( $(now_ms) - t0 )) ms (its failures above)"
    fi
    grep -q "^\[  PASSED  \]" <<<"$out" || fail "$name: no PASSED line: $out"
    echo "$name: $(grep "^\[  PASSED  \]" <<<"$out" | head -1) ($(( $(now_ms) - t0 )) ms, 2 hosts x 2 ranks)"
    no_process_on_hosts
  done
  cluster_down_and_check
}

# expect_refusal PATTERN CMD... — CMD exits non-zero and says PATTERN.
expect_refusal() {
  local pattern="$1" out rc=0; shift
  out="$(timeout 30 "$@" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "'$*' exited $rc, expected a refusal: $out"
  grep -qF -- "$pattern" <<<"$out" || fail "'$*' does not say '$pattern': $out"
  echo "refused: $* -> $(head -1 <<<"$out")"
}
# nothing_left PREFIX TAG — no namespace, link, state or process of that cluster, no process naming TAG.
nothing_left() {
  local left=""
  for _ in $(seq 1 30); do
    left="$(ip netns list | grep -E "^$1-" || true)$(ip -o link show | grep -E ": $1-" || true)"
    [ ! -e "/run/mirror-cluster/$1" ] || left+=" state folder"
    left+="$(pgrep -af -- "$2" | grep -v pgrep || true)"
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  fail "left behind by the cluster $1: $left"
}
# child_test ID TAG MODE — a test script that makes a cluster, starts a long job on its hosts (sleep, tagged),
# then fails (MODE fail) or waits to be killed (MODE wait). Runs in the background; pid in CHILD.
child_test() {
  local lib; lib="$(dirname "$0")/cluster_lib.sh"
  bash -c "source '$lib'
    cluster_up '$1' 2
    # shellcheck disable=SC2086
    timeout 60 '$MPIEXEC' -np 4 --hostfile \"\$(hostfile 2)\" $MPIEXEC_FLAGS sleep 45.$2 >/dev/null 2>&1 &
    for _ in \$(seq 1 100); do [ -n \"\$('$CLUSTER_SH' pids \$PREFIX-h1)\" ] && break; sleep 0.1; done
    echo running >'$TMP/$1.running'
    [ '$3' = fail ] && fail 'a deliberate failure'
    for _ in \$(seq 1 600); do sleep 0.1; done" >"$TMP/$1.out" 2>&1 &
  CHILD=$!
  for _ in $(seq 1 300); do [ -e "$TMP/$1.running" ] && return 0; kill -0 "$CHILD" 2>/dev/null || break; sleep 0.1; done
  fail "the child test $1 did not start its job: $(cat "$TMP/$1.out")"
}

cleanup_case() {
  local why; why="$("$CLUSTER_SH" check 2>&1)" || { echo "SKIP: $why"; exit 77; }
  expect_refusal "N must be 1..64 hosts" "$CLUSTER_SH" up 0 --prefix "$(test_prefix cz)"
  expect_refusal "expected 1-8 lower-case letters" "$CLUSTER_SH" up 2 --prefix Bad_Name
  expect_refusal "expected 10.213.K" "$CLUSTER_SH" up 1 --prefix "$(test_prefix cz)" --subnet 192.168.1
  expect_refusal "no test host 'nosuchc-h0'" "$CLUSTER_SH" link nosuchc-h0 down
  expect_refusal "is not a test host name" "$CLUSTER_SH" exec localhost -- true
  cluster_up cz 1
  expect_refusal "exists already" "$CLUSTER_SH" up 1 --prefix "$PREFIX"
  expect_refusal "expected up or down" "$CLUSTER_SH" link "$PREFIX-h0" sideways
  "$CLUSTER_SH" rate "$PREFIX-h0" 1gbit
  tc qdisc show dev "$PREFIX-v0" | grep -q "tbf.*rate 1Gbit" || fail "rate: no 1 Gbit/s token bucket on $PREFIX-v0"
  "$CLUSTER_SH" exec "$PREFIX-h0" -- tc qdisc show dev eth0 | grep -q "tbf.*rate 1Gbit" \
    || fail "rate: no 1 Gbit/s token bucket on $PREFIX-h0's eth0"
  expect_refusal "expected off or a rate like 1gbit" "$CLUSTER_SH" rate "$PREFIX-h0" fast
  tc qdisc show dev "$PREFIX-v0" | grep -q "tbf" || fail "rate: a refused value removed the limit"
  "$CLUSTER_SH" rate "$PREFIX-h0" off
  ! tc qdisc show dev "$PREFIX-v0" | grep -q "tbf" || fail "rate off: the token bucket is still there"
  cluster_down_and_check
  "$CLUSTER_SH" down --prefix "$(test_prefix cz)" >/dev/null 2>&1 || fail "a second down is not a no-op"

  local tag rc
  tag="$RANDOM$RANDOM"
  child_test cf "$tag" fail
  rc=0; wait "$CHILD" || rc=$?
  [ "$rc" -eq 1 ] || fail "the failing child test exited $rc: $(cat "$TMP/cf.out")"
  nothing_left "$(test_prefix cf)" "sleep 45.$tag"
  echo "a failed test left nothing behind"
  tag="$RANDOM$RANDOM"
  child_test ck "$tag" wait
  kill -TERM "$CHILD"
  rc=0; wait "$CHILD" || rc=$?
  [ "$rc" -eq 143 ] || fail "the child test killed by SIGTERM exited $rc: $(cat "$TMP/ck.out")"
  nothing_left "$(test_prefix ck)" "sleep 45.$tag"
  echo "a test killed by SIGTERM left nothing behind"
}

case "$case_name" in
  hosts) hosts_case ;;
  cleanup) cleanup_case ;;
  train) train_case ;;
  collectives) collectives_case ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
