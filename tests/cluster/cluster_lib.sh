# cluster_lib.sh — helpers for the test-cluster tests (sourced by run_cluster.sh): make a cluster of
# namespaced hosts with scripts/cluster.sh, remove it on every exit (trap), and check that nothing is left.
# Every command that could hang runs under `timeout`. Exit code 77 (CTest SKIP_RETURN_CODE) when hosts
# cannot be made on this machine.
set -euo pipefail

CLUSTER_SH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/cluster.sh"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/mirror-cluster-test.XXXXXX")"
PREFIX=""

fail() { echo "FAIL: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# descendants PID — every process below PID (children first found, then theirs), by parent pid.
descendants() {
  local child
  for child in $(pgrep -P "$1" || true); do
    echo "$child"
    descendants "$child"
  done
}

# The jobs this test started (mpirun, mirrorrun and what they run on the launch node) are killed before the
# cluster goes: an mpirun whose daemons vanish with their namespace could otherwise wait on a dead connection.
cluster_cleanup() {
  local rc=$?
  local pids
  pids="$(descendants $$)"
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  if [ -n "$PREFIX" ]; then "$CLUSTER_SH" down --prefix "$PREFIX" >/dev/null 2>&1 || echo "warning: cluster.sh down --prefix $PREFIX failed" >&2; fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cluster_cleanup EXIT
trap 'exit 143' TERM INT

# test_prefix ID — a cluster name unique to this test (ID) and this build folder (PWD hash), so that two builds
# or two tests never share namespaces; a leftover of an earlier, killed run of the same test is removed first.
test_prefix() {
  local hash
  hash=$(( $(printf '%s' "$PWD" | cksum | cut -d' ' -f1) % 1000 ))
  printf 'm%03d%s' "$hash" "$1"
}

# cluster_up ID N — skips (77) when namespaces cannot be made; otherwise N hosts, env exported.
cluster_up() {
  local why
  why="$("$CLUSTER_SH" check 2>&1)" || { echo "SKIP: $why"; exit 77; }
  PREFIX="$(test_prefix "$1")"
  "$CLUSTER_SH" down --prefix "$PREFIX" >/dev/null 2>&1 || true
  timeout 40 "$CLUSTER_SH" up "$2" --prefix "$PREFIX" || fail "scripts/cluster.sh up $2 --prefix $PREFIX failed (exit $?)"
  eval "$("$CLUSTER_SH" env --prefix "$PREFIX")"
  HOSTS=()
  local i
  for ((i = 0; i < $2; i++)); do HOSTS+=("$PREFIX-h$i"); done
}

# hostfile SLOTS — writes TMP/hosts with SLOTS ranks per host; prints its path.
hostfile() {
  "$CLUSTER_SH" hostfile --prefix "$PREFIX" --slots "$1" >"$TMP/hosts.$1"
  echo "$TMP/hosts.$1"
}

# no_process_on_hosts [WAIT_S] — fails when a process (other than the holder) is still on a host after WAIT_S s.
no_process_on_hosts() {
  local wait_s="${1:-3}" host left=""
  for _ in $(seq 1 $((wait_s * 10))); do
    left=""
    for host in "${HOSTS[@]}"; do
      local pids; pids="$("$CLUSTER_SH" pids "$host")"
      [ -z "$pids" ] || left+=" $host:[$(echo "$pids" | xargs -r ps -o pid=,comm= -p | tr '\n' ' ')]"
    done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  fail "processes left on the hosts:$left"
}

# cluster_down_and_check — down, then nothing of the cluster may remain (namespaces, links, holders, state).
cluster_down_and_check() {
  local holders=() f
  for f in "${MIRROR_CLUSTER_STATE:-/run/mirror-cluster}/$PREFIX"/*.pid; do [ -e "$f" ] && holders+=("$(cat "$f")"); done
  timeout 30 "$CLUSTER_SH" down --prefix "$PREFIX"
  local left=""
  left+="$(ip netns list | grep -E "^$PREFIX-" || true)"
  left+="$(ip -o link show | grep -E ": $PREFIX-" || true)"
  for pid in "${holders[@]}"; do
    local state; state="$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)" || true
    [ -z "$state" ] || [ "$state" = Z ] || left+=" holder pid $pid (state $state)"
  done
  [ ! -e "${MIRROR_CLUSTER_STATE:-/run/mirror-cluster}/$PREFIX" ] || left+=" state folder"
  [ -z "$left" ] || fail "cluster.sh down left: $left"
  echo "down: no namespace, link, holder or state of '$PREFIX' left"
  PREFIX=""
}
