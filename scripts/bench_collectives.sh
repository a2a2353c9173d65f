#!/usr/bin/env bash
# bench_collectives.sh — Mirror's host collectives (mirror-bench) against the peer libraries of ../shared/peers
# (Intel MPI, oneCCL, Open MPI 5, MPICH, gloo), alternated in one run: for each repeat, every system once.
# float32 sum, out of place (gloo: in place, the only way torch.distributed offers), sizes 4 KiB..64 MiB.
# Mirror runs on ordinary buffers and on Communicator::allocate_shared buffers (mirror-bench -R 1), and with
# each --shm-copy mode when this mirror-bench has that flag. Each repeat also measures the memory bandwidth
# (mirror-bench --stream). Prints the machine (lscpu, load), then ONE table per collective: the median busbw
# (GB/s) of each system, the memory-bandwidth bound of the byte model (docs/benchmarks.md), and the medians
# of the per-repeat ratios. The table is made by scripts/bench_collectives_table.py.
# Figures, not tests: nothing here asserts a speed. Run --help for the options.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
me="bench_collectives.sh"
args_given="$*"

usage() {
  cat <<EOF
usage: scripts/$me [options]
  --np N            ranks per run (default 2); more ranks than cores adds --oversubscribe and drops binding
  --repeats R       alternated repeats; the table shows medians (default 3)
  --sizes LIST      comma-separated sizes, powers of two from 4K to 64M (default 4K,64K,1M,4M,16M,64M;
                    the peers measure only these six)
  --ops LIST        collectives: allreduce (default), broadcast, allgather, reduce_scatter, or all.
                    The peer programs do only allreduce: the others compare Mirror with the MPI column of
                    mirror-bench itself (the Open MPI that mirror-bench is built against)
  --peers LIST      peers to run (default impi,oneccl,ompi5,mpich,gloo; "none" for Mirror only)
  --timeout S       seconds one run (one launcher call) may take before it is killed (default 300)
  --out FILE        also write every measurement, median and ratio as JSON lines to FILE
  --setup           run the peers' setup.sh first when a peer is missing (PyPI downloads, minutes)
  -h, --help        this text
environment:
  BUILD_DIR          build directory holding collectives/mirror-bench (default: build, relative to the repository)
  MIRROR_PEERS_DIR   the peer sources and setup.sh (default: ../shared/peers beside the repository, or
                     beside its main checkout when this is a git worktree)
  MIRROR_PEERS_HOME  where setup.sh installed the peers (default: ~/.cache/mirror-peers)
EOF
}

die() { echo "$me: $*" >&2; exit 2; }

np=2; repeats=3; sizes="4K,64K,1M,4M,16M,64M"; ops="allreduce"; peers="impi,oneccl,ompi5,mpich,gloo"
per_run=300; out=""; setup=0
while [ $# -gt 0 ]; do
  case "$1" in
    --np|--repeats|--sizes|--ops|--peers|--timeout|--out)
      [ $# -ge 2 ] || die "$1 needs a value (see --help)" ;;&
    --np) np="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --timeout) per_run="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --setup) setup=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# ---- options, checked once ----
[[ "$np" =~ ^[0-9]+$ ]] && [ "$np" -ge 2 ] || die "--np takes an integer >= 2, got '$np'"
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || die "--repeats takes a positive integer, got '$repeats'"
[[ "$per_run" =~ ^[1-9][0-9]*$ ]] || die "--timeout takes a positive number of seconds, got '$per_run'"
[ "$ops" = all ] && ops="allreduce,broadcast,allgather,reduce_scatter"
IFS=, read -r -a op_list <<<"$ops"
for op in "${op_list[@]}"; do
  case "$op" in allreduce|broadcast|allgather|reduce_scatter) ;;
    *) die "--ops: unknown collective '$op' (allreduce, broadcast, allgather, reduce_scatter or all)" ;; esac
done
[ "$peers" = none ] && peers=""
IFS=, read -r -a peer_list <<<"$peers"
for p in "${peer_list[@]}"; do
  case "$p" in impi|oneccl|ompi5|mpich|gloo) ;;
    *) die "--peers: unknown peer '$p' (impi, oneccl, ompi5, mpich, gloo or none)" ;; esac
done
# "4K,64K" -> bytes, checked: powers of two, 4 KiB..64 MiB, ascending.
size_bytes=()
IFS=, read -r -a size_words <<<"$sizes"
for w in "${size_words[@]}"; do
  [[ "$w" =~ ^([0-9]+)([KkMm]?)(i?B)?$ ]] || die "--sizes: '$w' is not a size like 4K, 64K or 1M"
  v=${BASH_REMATCH[1]}
  case "${BASH_REMATCH[2]}" in [Kk]) v=$((v << 10)) ;; [Mm]) v=$((v << 20)) ;; esac
  [ $((v & (v - 1))) -eq 0 ] && [ "$v" -ge 4096 ] && [ "$v" -le $((64 << 20)) ] ||
    die "--sizes: '$w' must be a power of two from 4K to 64M"
  [ ${#size_bytes[@]} -eq 0 ] || [ "$v" -gt "${size_bytes[-1]}" ] || die "--sizes must ascend, got '$sizes'"
  size_bytes+=("$v")
done
[ ${#size_bytes[@]} -gt 0 ] || die "--sizes is empty"
max_bytes=${size_bytes[-1]}

# ---- what runs ----
build="${BUILD_DIR:-build}"; [[ "$build" = /* ]] || build="$root/$build"
bench="$build/collectives/mirror-bench"
[ -x "$bench" ] || die "no $bench: build it (cmake --build build --target mirror-bench), or set BUILD_DIR"
find_peers_dir() {
  if [ -n "${MIRROR_PEERS_DIR:-}" ]; then echo "$MIRROR_PEERS_DIR"; return; fi
  local main_root
  main_root="$(cd "$root" && git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/.." || main_root=""
  for d in "$root/../shared/peers" ${main_root:+"$main_root/../shared/peers"}; do
    [ -d "$d" ] && { (cd "$d" && pwd); return; }
  done
  echo "$root/../shared/peers"
}
peers_dir="$(find_peers_dir)"
P="${MIRROR_PEERS_HOME:-$HOME/.cache/mirror-peers}"
cores=$(nproc)
over=0; [ "$np" -gt "$cores" ] && over=1
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The launcher and the program of each peer (README.md of the peers); binding as the README gives it,
# none when the ranks outnumber the cores.
peer_command() {  # peer -> the command words, one per line
  local p=$1 bind_ompi=(--bind-to core) bind_hydra=(-bind-to core)
  [ "$over" -eq 1 ] && bind_ompi=(--oversubscribe --bind-to none) && bind_hydra=()
  case "$p" in
    impi) printf '%s\n' "$P/venv-impi/bin/mpiexec" -n "$np" "$P/bin/mpi_allreduce_impi" "$max_bytes" ;;
    oneccl) printf '%s\n' "$P/venv-ccl/bin/mpiexec" -n "$np" "$P/bin/ccl_allreduce" "$max_bytes" ;;
    ompi5) printf '%s\n' "$P/venv-ompi/bin/mpiexec" -n "$np" "${bind_ompi[@]}" "$P/bin/mpi_allreduce_ompi5" "$max_bytes" ;;
    mpich) printf '%s\n' "$P/venv-mpich/bin/mpiexec" -n "$np" "${bind_hydra[@]}" "$P/bin/mpi_allreduce_mpich" "$max_bytes" ;;
    gloo) printf '%s\n' mpirun -np "$np" "${bind_ompi[@]}" "$P/venv/bin/python" "$peers_dir/torch_allreduce.py" "$max_bytes" ;;
  esac
}
peer_missing() {  # peer -> prints what is missing, if anything
  local p=$1 f
  [ "$p" = gloo ] && [ ! -f "$peers_dir/torch_allreduce.py" ] && echo "$peers_dir/torch_allreduce.py"
  [ "$p" = gloo ] && ! command -v mpirun >/dev/null && echo "mpirun (Open MPI, scripts/install-deps.sh)"
  for f in $(peer_command "$p" | grep "^$P/"); do [ -x "$f" ] || echo "$f"; done
}
missing_note() { echo "missing $1; install the peers with $peers_dir/setup.sh (or pass --setup)"; }

if [ ${#peer_list[@]} -gt 0 ] && [ "$setup" -eq 1 ]; then
  need=0; for p in "${peer_list[@]}"; do [ -z "$(peer_missing "$p")" ] || need=1; done
  if [ "$need" -eq 1 ]; then
    [ -x "$peers_dir/setup.sh" ] || die "--setup: no $peers_dir/setup.sh (set MIRROR_PEERS_DIR)"
    echo "# $me: running $peers_dir/setup.sh (MIRROR_PEERS_HOME=$P)"
    MIRROR_PEERS_HOME="$P" "$peers_dir/setup.sh" ||
      echo "# $me: $peers_dir/setup.sh failed (exit $?); the peers still missing are skipped" >&2
  fi
fi

# Mirror variants: ordinary buffers, shared buffers, and the --shm-copy modes where mirror-bench has them.
help_text="$("$bench" --help 2>&1 || true)"
variants=("ordinary" "shared")
shm_copy_modes=()
if grep -q -- "--shm-copy" <<<"$help_text"; then
  copy_help="$(grep -A3 -- "--shm-copy" <<<"$help_text" | tr '\n' ' ')"
  for m in staged single auto; do grep -qw "$m" <<<"$copy_help" && shm_copy_modes+=("$m"); done
  for m in "${shm_copy_modes[@]}"; do variants+=("copy-$m"); done
fi
variant_flags() {  # variant -> mirror-bench flags, one per line
  case "$1" in
    ordinary) echo -R; echo 0 ;;
    shared) echo -R; echo 1 ;;
    copy-*) echo -R; echo 0; echo --shm-copy; echo "${1#copy-}" ;;
  esac
}
# The memory bandwidth is the machine's: measured with one rank per core at most (time-shared ranks would
# each time only their own turns and sum to more than the machine moves).
membw_np=$((np < cores ? np : cores))
mirror_launch=(mpirun -np "$np" --bind-to core)
[ "$over" -eq 1 ] && mirror_launch=(mpirun -np "$np" --oversubscribe --bind-to none)
# Sizes below 1 MiB run 200 timed calls, from 1 MiB on 20 (as the peers). mirror-bench sweeps -b..-e by a
# factor: the largest power of two that still steps onto every requested size of the group.
sweep() {  # iters size... -> "min max factor iters"
  local iters=$1; shift
  local step=0 prev="" v d a b t
  for v in "$@"; do
    if [ -n "$prev" ]; then
      d=0; while [ $((prev << d)) -lt "$v" ]; do d=$((d + 1)); done
      a=$step; b=$d; while [ "$b" -ne 0 ]; do t=$((a % b)); a=$b; b=$t; done; step=$a  # gcd of the log2 steps
    fi
    prev=$v
  done
  [ "$step" -eq 0 ] && step=1
  echo "$1 ${!#} $((1 << step)) $iters"
}
small=(); large=()
for v in "${size_bytes[@]}"; do if [ "$v" -lt $((1 << 20)) ]; then small+=("$v"); else large+=("$v"); fi; done
groups=()
[ ${#small[@]} -eq 0 ] || groups+=("$(sweep 200 "${small[@]}")")
[ ${#large[@]} -eq 0 ] || groups+=("$(sweep 20 "${large[@]}")")

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
manifest="$tmp/manifest.tsv"; : >"$manifest"
# One run: id, then the command. Bounded by --timeout; its outcome goes to the manifest, never aborts.
run_one() {
  local rep=$1 id=$2; shift 2
  local base="$tmp/r$rep.$id" rc=0 t0 t1
  t0=$(date +%s%N)
  PEER_PORT=$((29600 + RANDOM % 2000)) timeout -k 10 "$per_run" "$@" </dev/null >"$base.out" 2>"$base.err" || rc=$?
  t1=$(date +%s%N)
  local status=ok
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && status=timeout
  [ "$rc" -ne 0 ] && [ "$status" = ok ] && status=failed
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$id" "$status" "$rc" "$(((t1 - t0) / 1000000))" "$base" >>"$manifest"
  [ "$status" = ok ] || echo "# $me: repeat $rep: $id $status (exit $rc): $(grep -v '^\s*$' "$base.err" | tail -1 | cut -c1-200)" >&2
}

# ---- the machine ----
# shellcheck source=machine.sh
source "$(dirname "${BASH_SOURCE[0]}")/machine.sh"
lscpu_field() { lscpu | sed -n "s/^$1:[[:space:]]*//p" | head -1; }
cpu_model="$(lscpu_field 'Model name')"
machine="cpu: $cpu_model; $(lscpu_field 'CPU(s)') CPUs ($(lscpu_field 'Core(s) per socket') cores/socket, \
$(lscpu_field 'Thread(s) per core') threads/core, $(lscpu_field 'Socket(s)') socket(s)); caches: $(cpu_caches); \
$(free -g | awk '/^Mem:/ {print $2 " GiB memory"}')"
load_start="$(uptime)"
echo "# $me: $np ranks, float32 sum, out of place, sizes $sizes, $repeats repeats, ops ${op_list[*]}, $(date -u '+%F %T UTC')"
echo "# $machine"
echo "# load at start: $load_start"
source_of_build() {  # the checkout that $build was configured from, and its commit
  local src
  src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  [ -n "$src" ] || { echo "source unknown"; return; }
  if git -C "$src" rev-parse --short HEAD >/dev/null 2>&1; then
    echo "source $src at $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- . 2>/dev/null || echo ', uncommitted changes')"
  else
    echo "source $src, not a git checkout"
  fi
}
echo "# mirror-bench: $bench ($(source_of_build)); MPI launcher $(mpirun --version 2>/dev/null | head -1)"
echo "# Mirror variants: ${variants[*]}$([ ${#shm_copy_modes[@]} -eq 0 ] && echo " (this mirror-bench has no --shm-copy)")"
echo "# peers: $P (sources $peers_dir)"

runnable_peers=()
for p in "${peer_list[@]}"; do
  miss="$(peer_missing "$p" | head -1)"
  if [ -n "$miss" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' 0 "peer.$p" missing 0 0 "$(missing_note "$miss")" >>"$manifest"
    echo "# $me: skipping $p: $(missing_note "$miss")" >&2
  else
    runnable_peers+=("$p")
  fi
done

# ---- the alternated runs ----
for rep in $(seq 1 "$repeats"); do
  echo "# repeat $rep/$repeats: $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  run_one "$rep" membw mpirun -np "$membw_np" --bind-to core "$bench" allreduce -b 4K -e 4K -n 1 -w 0 -c 0 --stream 64M
  for op in "${op_list[@]}"; do
    for v in "${variants[@]}"; do
      mapfile -t vflags < <(variant_flags "$v")
      for g in "${groups[@]}"; do
        read -r gmin gmax gfac giters <<<"$g"
        id="mirror.$op.$v.$gmin-$gmax"
        run_one "$rep" "$id" "${mirror_launch[@]}" "$bench" "$op" -b "$gmin" -e "$gmax" -f "$gfac" \
          -n "$giters" -w 5 -c 1 --stream 0 "${vflags[@]}" --json "$tmp/r$rep.$id.json"
      done
    done
    if [ "$op" = allreduce ]; then
      for p in "${runnable_peers[@]}"; do
        mapfile -t cmd < <(peer_command "$p")
        run_one "$rep" "peer.$p" "${cmd[@]}"
      done
    fi
  done
done
load_end="$(uptime)"
echo "# load at end: $load_end"

/usr/bin/python3 "$root/scripts/bench_collectives_table.py" --manifest "$manifest" --np "$np" \
  --sizes "$(IFS=,; echo "${size_bytes[*]}")" --ops "$(IFS=,; echo "${op_list[*]}")" \
  --variants "$(IFS=,; echo "${variants[*]}")" --peers "$(IFS=,; echo "${peer_list[*]}")" \
  --membw-ranks "$membw_np" --peers-home "$P" --l3 "$(lscpu -B 2>/dev/null | sed -n 's/^L3 cache:[[:space:]]*\([0-9]*\).*/\1/p' | head -1)" \
  --machine "$machine" --load-start "$load_start" --load-end "$load_end" \
  --command "scripts/$me $args_given" ${out:+--out "$out"}
