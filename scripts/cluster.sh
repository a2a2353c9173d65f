#!/usr/bin/env bash
# cluster.sh — a test cluster of N hosts on this one machine, for multi-host Mirror jobs and their tests.
#
#   scripts/cluster.sh up N [--prefix P] [--subnet 10.213.K]   make hosts P-h0 .. P-h(N-1)
#   scripts/cluster.sh down [--prefix P]                       remove them and everything running on them
#   scripts/cluster.sh status [--prefix P]                     hosts, addresses, links, processes
#   scripts/cluster.sh env [--prefix P]                        `export` lines for mpirun and mirrorrun
#   scripts/cluster.sh hostfile [--prefix P] [--slots K]       an Open MPI hostfile ("P-h0 slots=K" lines)
#   scripts/cluster.sh exec HOST [--] CMD...                   run CMD on HOST (its namespaces)
#   scripts/cluster.sh pids HOST                               processes on HOST (the holder excluded)
#   scripts/cluster.sh kill HOST [SIGNAL]                      signal every process on HOST (default KILL)
#   scripts/cluster.sh link HOST up|down                       plug / unplug HOST's cable (its bridge port)
#   scripts/cluster.sh rate HOST RATE|off                      limit HOST's cable to RATE (tc tbf, e.g. 1gbit),
#                                                              both directions; off removes the limit
#   scripts/cluster.sh check                                   exit 0 when hosts can be made here, else 77
#
# What a host is: a network namespace (`ip netns`, named P-hI, with one interface eth0 at 10.213.K.(10+I)),
# plus a UTS namespace (hostname P-hI) and a mount namespace with a fresh tmpfs on /dev/shm. The UTS and
# mount namespaces are kept alive by a holder process per host (`unshare --uts --mount --propagation private`
# running `sleep infinity`, its pid in the state folder); everything enters a host with
# `nsenter -t HOLDER -n -u -m`. The launch node is the root namespace: a bridge P-br with 10.213.K.1/24, to
# which each host's veth pair (root side P-vI) is plugged. The addresses exist only on that bridge and inside
# these namespaces; the root namespace does not route them anywhere (no forwarding, no default route inside).
# The hosts share the file system (build folder, data, checkpoints), as a cluster's shared file system would.
#
# Open MPI starts ranks there through its own rsh launch path: the hostfile names the hosts, and
# OMPI_MCA_plm_rsh_agent is a generated script (STATE/cluster-rsh) that runs the remote command inside the
# host's namespaces with a clean environment (as ssh would: only what mpirun sends with -x reaches a rank).
# OMPI_MCA_btl_tcp_if_include / oob_tcp_if_include pin Open MPI's TCP traffic to the bridge's subnet.
#
# State: ${MIRROR_CLUSTER_STATE:-/run/mirror-cluster}/P/ (hostfile, env, cluster-rsh, HOST.pid, subnet).
# `down` finds everything by name (P-h*, P-v*, P-br, holders from the state folder and `ip netns pids`), so it
# also cleans up after a half-finished `up`. Every wait is a bounded loop. Needs root, iproute2, util-linux.
set -euo pipefail

STATE_ROOT="${MIRROR_CLUSTER_STATE:-/run/mirror-cluster}"
SKIP=77   # CTest SKIP_RETURN_CODE: hosts cannot be made on this machine

die() { echo "cluster.sh: error: $*" >&2; exit 1; }
say() { echo "cluster.sh: $*" >&2; }

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

# why_not — prints why namespaces cannot be made here, or nothing when they can.
why_not() {
  [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces, veths and bridges need root)"; return; }
  local tool
  for tool in ip unshare nsenter; do
    command -v "$tool" >/dev/null || { echo "'$tool' not found (Debian: iproute2, util-linux)"; return; }
  done
  unshare --net --uts --mount true 2>/dev/null || { echo "unshare --net --uts --mount is refused here"; return; }
  local probe="mcchk$$"
  probe="${probe:0:15}"
  if ! ip link add "$probe" type bridge 2>/dev/null; then echo "cannot create a bridge (ip link add type bridge)"; return; fi
  ip link del "$probe" 2>/dev/null || true
}

check_prefix() {
  [[ "$PREFIX" =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "--prefix '$PREFIX': expected 1-8 lower-case letters/digits starting with a letter (names like $PREFIX-v12 must fit in 15 characters)"
}

state_dir() { echo "$STATE_ROOT/$PREFIX"; }
host_name() { echo "$PREFIX-h$1"; }
bridge_name() { echo "$PREFIX-br"; }
veth_name() { echo "$PREFIX-v$1"; }

# select_host HOST — sets PREFIX and HOST_INDEX from a host name P-hI; an error when that host is not up.
select_host() {
  local host="$1"
  [[ "$host" =~ ^([a-z][a-z0-9]{0,7})-h([0-9]+)$ ]] || die "'$host' is not a test host name (expected PREFIX-hI, e.g. mc-h0)"
  PREFIX="${BASH_REMATCH[1]}"
  HOST_INDEX="${BASH_REMATCH[2]}"
  [ -r "$(state_dir)/$host.pid" ] || die "no test host '$host' (see scripts/cluster.sh status --prefix $PREFIX)"
}

holder_pid() {  # HOST — the holder's pid, checked to be alive and in the host's network namespace
  local pid
  pid="$(cat "$STATE_ROOT/${1%-h*}/$1.pid" 2>/dev/null)" || die "no holder recorded for $1"
  [ -e "/proc/$pid/ns/net" ] || die "the holder of $1 (pid $pid) is gone: run scripts/cluster.sh down, then up"
  echo "$pid"
}

# pick_subnet — the first 10.213.K (K = 1..254, starting at a value derived from the prefix) that no route of
# this machine uses, so several clusters (other prefixes) can exist side by side.
pick_subnet() {
  local start k i
  start=$(( $(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1) % 254 + 1 ))
  for ((i = 0; i < 254; i++)); do
    k=$(( (start + i - 1) % 254 + 1 ))
    if [ -z "$(ip -4 route show to match "10.213.$k.1" | grep -v '^default' || true)" ]; then echo "10.213.$k"; return; fi
  done
  die "no free 10.213.K.0/24 subnet on this machine"
}

write_rsh_agent() {  # the plm_rsh_agent Open MPI runs as "cluster-rsh [opts] HOST COMMAND..."
  local dir="$1" path="$1/cluster-rsh"
  cat >"$path.tmp" <<EOF
#!/bin/sh
# cluster-rsh — Open MPI's plm_rsh_agent for the test cluster '$PREFIX' (made by scripts/cluster.sh): runs the
# remote command inside the host's namespaces (network, hostname, mount) with a clean environment, as ssh does.
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host="\$1"; shift
pidfile="$dir/\$host.pid"
[ -r "\$pidfile" ] || { echo "cluster-rsh: '\$host' is not a host of the test cluster '$PREFIX' (hosts: \$(cd "$dir" && ls *.pid 2>/dev/null | sed 's/\\.pid\$//' | tr '\\n' ' '))" >&2; exit 255; }
exec nsenter -t "\$(cat "\$pidfile")" -n -u -m -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
  HOME="\${HOME:-/root}" USER="\${USER:-root}" LANG=C.UTF-8 /bin/sh -c "\$*"
EOF
  chmod +x "$path.tmp"
  mv "$path.tmp" "$path"
}

write_env() {  # the variables mpirun and mirrorrun need, as sourceable export lines
  local dir="$1" subnet="$2"
  cat >"$dir/env.tmp" <<EOF
export OMPI_MCA_plm_rsh_agent=$dir/cluster-rsh
export OMPI_MCA_btl_tcp_if_include=$subnet.0/24
export OMPI_MCA_oob_tcp_if_include=$subnet.0/24
export MIRROR_CLUSTER_HOSTFILE=$dir/hostfile
EOF
  mv "$dir/env.tmp" "$dir/env"
}

# make_host I SUBNET — namespace, veth, address, holder.
make_host() {
  local i="$1" subnet="$2" host veth dir pid
  host="$(host_name "$i")"; veth="$(veth_name "$i")"; dir="$(state_dir)"
  ip netns add "$host"
  ip link add "$veth" type veth peer name "$PREFIX-p$i"
  ip link set "$PREFIX-p$i" netns "$host"
  ip link set "$veth" master "$(bridge_name)" up
  ip -n "$host" link set "$PREFIX-p$i" name eth0
  ip -n "$host" addr add "$subnet.$((10 + i))/24" dev eth0
  ip -n "$host" link set eth0 up
  ip -n "$host" link set lo up
  # The holder: new UTS and mount namespaces inside the network namespace; hostname and /dev/shm set there.
  setsid ip netns exec "$host" unshare --uts --mount --propagation private -- /bin/sh -c \
    "hostname '$host' && mount -t tmpfs -o mode=1777,size=4g tmpfs /dev/shm && touch '$dir/$host.ready' && exec sleep infinity" \
    </dev/null >/dev/null 2>&1 9>&- &   # (fd 9 holds cmd_up's lock: the holder must not keep it)
  pid=$!
  for _ in $(seq 1 100); do [ -e "$dir/$host.ready" ] && break; sleep 0.05; done
  [ -e "$dir/$host.ready" ] || die "the holder of $host did not start"
  echo "$pid" >"$dir/$host.pid"
  rm -f "$dir/$host.ready"
  [ "$(nsenter -t "$pid" -u hostname)" = "$host" ] || die "$host: hostname not set in its UTS namespace"
}

cmd_up() {
  local n="$1" subnet="$2" dir i
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "up N: N must be 1..64 hosts, got '$n'"
  local why; why="$(why_not)"
  [ -z "$why" ] || { say "cannot make test hosts here: $why"; exit $SKIP; }
  dir="$(state_dir)"
  mkdir -p "$STATE_ROOT"
  exec 9>"$STATE_ROOT/.lock"
  flock -w 30 9 || die "another cluster.sh up has held $STATE_ROOT/.lock for 30 s"
  [ ! -e "$dir" ] && ! ip link show "$(bridge_name)" >/dev/null 2>&1 \
    || die "cluster '$PREFIX' exists already (scripts/cluster.sh down --prefix $PREFIX first)"
  if [ -z "$subnet" ]; then subnet="$(pick_subnet)"; fi
  [[ "$subnet" =~ ^10\.213\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le 254 ] \
    || die "--subnet '$subnet': expected 10.213.K with K in 1..254 (the test range)"
  mkdir -p "$dir"
  UP_DONE=0
  trap '[ "$UP_DONE" = 1 ] || { say "up failed; cleaning up"; cmd_down >/dev/null 2>&1 || true; }' EXIT
  echo "$subnet" >"$dir/subnet"
  ip link add "$(bridge_name)" type bridge
  ip addr add "$subnet.1/24" dev "$(bridge_name)"
  ip link set "$(bridge_name)" up
  for ((i = 0; i < n; i++)); do make_host "$i" "$subnet"; done
  write_rsh_agent "$dir"
  write_env "$dir" "$subnet"
  for ((i = 0; i < n; i++)); do echo "$(host_name "$i") slots=1"; done >"$dir/hostfile"
  UP_DONE=1
  say "up: $n host(s) $(host_name 0)..$(host_name $((n - 1))) on $subnet.0/24 (launch node $subnet.1, bridge $(bridge_name))"
  say "use: eval \"\$(scripts/cluster.sh env --prefix $PREFIX)\"; mpirun --hostfile $dir/hostfile ..."
}

# kill_netns_processes HOST — SIGKILL everything in HOST's network namespace (holder included), waits ≤ 5 s.
kill_netns_processes() {
  local host="$1" pids
  for _ in $(seq 1 50); do
    pids="$(ip netns pids "$host" 2>/dev/null || true)"
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  say "warning: processes still in $host after 5 s: $pids"
}

# wait_gone PID — waits up to 5 s until PID has exited (gone, or a zombie waiting for its parent).
wait_gone() {
  local state
  for _ in $(seq 1 50); do
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || true
    [ -n "$state" ] && [ "$state" != Z ] || return 0
    sleep 0.1
  done
  say "warning: process $1 still alive after SIGKILL"
}

cmd_down() {
  local dir host pid link holders=()
  dir="$(state_dir)"
  # Holders first (they are in the netns too, but a holder whose netns is already gone is found only here).
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"; host="$(basename "$f" .pid)"
    [ -e "/run/netns/$host" ] && kill_netns_processes "$host"
    kill -KILL "$pid" 2>/dev/null || true
    holders+=("$pid")
  done
  for pid in "${holders[@]}"; do wait_gone "$pid"; done
  for host in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX-h[0-9]+$" || true); do
    kill_netns_processes "$host"
    ip netns del "$host" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^$PREFIX-(v[0-9]+|br)$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  rm -rf "$dir"
  local left
  left="$(ip netns list 2>/dev/null | grep -E "^$PREFIX-h[0-9]+( |$)" || true)$(ip -o link show 2>/dev/null | grep -E ": $PREFIX-(v[0-9]+|br)[@:]" || true)"
  [ -z "$left" ] || die "down: still there: $left"
  say "down: cluster '$PREFIX' removed"
}

cmd_status() {
  local dir f host pid
  dir="$(state_dir)"
  [ -d "$dir" ] || { echo "cluster '$PREFIX': not up"; return 1; }
  echo "cluster '$PREFIX': subnet $(cat "$dir/subnet").0/24, bridge $(bridge_name), hostfile $dir/hostfile"
  for f in "$dir"/*.pid; do
    host="$(basename "$f" .pid)"; pid="$(cat "$f")"
    local i="${host##*-h}" state="holder pid $pid"
    [ -e "/proc/$pid" ] || state="holder pid $pid GONE"
    echo "  $host  $(ip -n "$host" -4 -br addr show dev eth0 2>/dev/null | awk '{print $3}')  link $(cat "/sys/class/net/$(veth_name "$i")/operstate" 2>/dev/null || echo missing)  $state  processes: $(host_pids "$host" | wc -w)"
  done
}

host_pids() {  # HOST — pids in the host's network namespace except its holder
  local holder
  holder="$(cat "$STATE_ROOT/${1%-h*}/$1.pid" 2>/dev/null || true)"
  ip netns pids "$1" 2>/dev/null | grep -vx "${holder:-none}" || true
}

# set_rate HOST VETH RATE|off — a token bucket (tc tbf; netem is not needed) on both ends of the host's cable:
# the bridge port's egress limits traffic to the host, the host's eth0 egress traffic from it.
set_rate() {
  local host="$1" veth="$2" rate="$3" pid
  [ "$rate" = off ] || [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit)$ ]] \
    || die "rate $host: expected off or a rate like 1gbit, 500mbit, got '$rate'"
  pid="$(holder_pid "$host")"
  tc qdisc del dev "$veth" root 2>/dev/null || true
  nsenter -t "$pid" -n tc qdisc del dev eth0 root 2>/dev/null || true
  [ "$rate" = off ] && { say "rate: $host unlimited"; return; }
  # burst: at least rate x 1 ms (tbf needs burst >= rate / HZ), 1 MiB floor; 100 ms of queue.
  tc qdisc add dev "$veth" root tbf rate "$rate" burst 1mb latency 100ms
  nsenter -t "$pid" -n tc qdisc add dev eth0 root tbf rate "$rate" burst 1mb latency 100ms
  say "rate: $host limited to $rate each way"
}

cmd_hostfile() {
  local slots="$1" dir
  dir="$(state_dir)"
  [ -d "$dir" ] || die "cluster '$PREFIX' is not up"
  [[ "$slots" =~ ^[1-9][0-9]*$ ]] || die "--slots must be a positive integer, got '$slots'"
  for f in "$dir"/*.pid; do echo "$(basename "$f" .pid) slots=$slots"; done | sort -V
}

main() {
  [ $# -ge 1 ] || usage
  local cmd="$1"; shift
  PREFIX="${MIRROR_CLUSTER_PREFIX:-mc}"
  local subnet="" slots=1 args=()
  case "$cmd" in
    exec|pids|kill|link|rate) ;;  # HOST first; the prefix comes from the host's name
    *)
      while [ $# -gt 0 ]; do
        case "$1" in
          --prefix) PREFIX="${2:?--prefix needs a value}"; shift 2 ;;
          --subnet) subnet="${2:?--subnet needs a value}"; shift 2 ;;
          --slots) slots="${2:?--slots needs a value}"; shift 2 ;;
          -h|--help) usage 0 ;;
          *) args+=("$1"); shift ;;
        esac
      done
      check_prefix ;;
  esac
  case "$cmd" in
    check) local why; why="$(why_not)"; [ -z "$why" ] || { echo "cannot make test hosts here: $why"; exit $SKIP; }; echo "ok" ;;
    up) [ ${#args[@]} -eq 1 ] || die "usage: cluster.sh up N [--prefix P] [--subnet 10.213.K]"; cmd_up "${args[0]}" "$subnet" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) [ -r "$(state_dir)/env" ] || die "cluster '$PREFIX' is not up"; cat "$(state_dir)/env" ;;
    hostfile) cmd_hostfile "$slots" ;;
    exec)
      local host="${1:?exec HOST CMD...}"; shift; [ "${1:-}" = "--" ] && shift
      [ $# -ge 1 ] || die "exec $host: no command"
      select_host "$host"
      exec nsenter -t "$(holder_pid "$host")" -n -u -m -- "$@" ;;
    pids) select_host "${1:?pids HOST}"; host_pids "$1" ;;
    kill)
      local host="${1:?kill HOST [SIGNAL]}" sig="${2:-KILL}" pids
      select_host "$host"
      pids="$(host_pids "$host")"
      # shellcheck disable=SC2086
      [ -z "$pids" ] || kill -s "$sig" $pids 2>/dev/null || true ;;
    link)
      local host="${1:?link HOST up|down}" state="${2:-}"
      [[ "$state" =~ ^(up|down)$ ]] || die "link $host: expected up or down, got '$state'"
      select_host "$host"
      ip link set "$(veth_name "$HOST_INDEX")" "$state" ;;
    rate)
      local host="${1:?rate HOST RATE|off}" rate="${2:-}"
      select_host "$host"
      set_rate "$host" "$(veth_name "$HOST_INDEX")" "$rate" ;;
    -h|--help|help) usage 0 ;;
    *) die "unknown command '$cmd' (up, down, status, env, hostfile, exec, pids, kill, link, rate, check)" ;;
  esac
}

main "$@"
