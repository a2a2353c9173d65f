#!/usr/bin/env bash
# run_cluster.sh CASE — jobs across the hosts of a test cluster (scripts/cluster.sh), run by CTest (label
# `cluster`). Programs come from the environment: MPIEXEC, MPIEXEC_FLAGS, HOST_PROBE, MIRRORRUN.
#   hosts   2 hosts x 2 ranks, host_probe under mpirun --hostfile and under mirrorrun --hostfile: 2 distinct
#           host names, local ranks 0,1 on each (MPI and the environment agree), a /dev/shm of each host's
#           own, a cross-host allreduce exact; no process left on a host; `down` leaves nothing behind.
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

case "$case_name" in
  hosts) hosts_case ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
