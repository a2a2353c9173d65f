#!/usr/bin/env bash
# bench_train.sh — end-to-end training throughput on Fashion-MNIST: Mirror's trainer against PyTorch 2.x DDP (gloo)
# and TensorFlow 2.x MirroredStrategy (logical CPU devices) on the same model, batch per rank, data and rank counts,
# one thread per rank, alternated in one run and repeated. Prints each run as a JSON line, then one table of median
# samples/s per system and np with the ratios Mirror/peer, and Mirror's scaling np1 -> np2 beside its ceiling (two
# independent 1-rank runs started together, one per core). All three leave the first 20 steps of the epoch out of
# samples/s (Mirror: its steady_samples_per_s metric; the peers: their --skip 20).
#   scripts/bench_train.sh --model mlp:512,256|keras-cnn|cnn-bn|resnet20 [--np 1,2] [--epochs 1] [--repeats 3]
#                          [--samples N] [--batch 64] [--no-peers torch,tf] [--trainer-args "ARGS"] [--baseline DIR]
#                          [--precision fp32|bf16]
# --samples N: train on the first N training samples (a subset file data/fmnist-N.h5; the peers run as many steps
# with --max-steps), for short runs. --trainer-args: more options for Mirror's trainer only (e.g. "--conv-algorithm
# direct"), split at spaces. --baseline DIR: also Mirror's trainer from another build directory (an earlier
# commit's, built with scripts/test.sh or cmake), as system "base", alternated with this build's in every repeat;
# the table gives mirror/base. cnn-bn runs with synchronised BatchNorm in all three (Mirror's default, the
# torch peer's --sync-bn, Keras' synchronized=True). --precision bf16: Mirror's --precision bf16 against the torch
# peer's --bf16 (torch.autocast); TensorFlow's peer has no bfloat16 mode and is left out. Peers: ../shared/peers (README.md there), installed under
# MIRROR_PEERS_HOME (default ~/.cache/mirror-peers) by its setup.sh. Needs a build (BUILD_DIR, default build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
model="mlp:512,256"; batch=64; epochs=1; repeats=3; nps="1 2"; samples=60000; skip_peers=""; trainer_args=""
base_build=""; precision=fp32
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --np) nps="${2//,/ }"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --no-peers) skip_peers="${2//,/ }"; shift 2 ;;
    --trainer-args) trainer_args="$2"; shift 2 ;;
    --baseline) base_build="$2"; shift 2 ;;
    --precision) precision="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_train.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$model" in
  mlp:*|keras-cnn|cnn-bn|resnet20) ;;
  *) echo "bench_train.sh: --model must be mlp:H1,H2,..., keras-cnn, cnn-bn or resnet20, got '$model'" >&2; exit 2 ;;
esac
case "$precision" in
  fp32) ;;
  bf16) trainer_args="--precision bf16 $trainer_args"; skip_peers+=" tf" ;;
  *) echo "bench_train.sh: --precision must be fp32 or bf16, got '$precision'" >&2; exit 2 ;;
esac
[[ "$samples" =~ ^[0-9]+$ ]] && [ "$samples" -ge 1 ] && [ "$samples" -le 60000 ] ||
  { echo "bench_train.sh: --samples must be 1..60000, got '$samples'" >&2; exit 2; }
build="${BUILD_DIR:-build}"
trainer="$root/$build/trainer/tools/trainer"
[ -x "$trainer" ] || { echo "bench_train.sh: no $trainer; build first (scripts/test.sh)" >&2; exit 2; }
base_trainer=""
if [ -n "$base_build" ]; then
  base_trainer="$(cd "$base_build" 2>/dev/null && pwd)/trainer/tools/trainer"
  [ -x "$base_trainer" ] || { echo "bench_train.sh: --baseline $base_build has no trainer/tools/trainer" >&2; exit 2; }
fi
peers_src="$root/../shared/peers"
[ -f "$peers_src/torch_ddp_fmnist.py" ] || peers_src="/work/shared/peers"
P="${MIRROR_PEERS_HOME:-$HOME/.cache/mirror-peers}"
py="$P/venv/bin/python"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PEER_PORT="${PEER_PORT:-$((29600 + $$ % 300))}"  # the torch peer's rendezvous; apart from other runs

[ -f data/fmnist.h5 ] || "$root/$build/data/mirror-data" fashion-mnist --out data/fmnist.h5 >/dev/null
data=data/fmnist.h5
if [ "$samples" -lt 60000 ]; then  # the first N training samples (and the test set), written once, atomically
  data="data/fmnist-$samples.h5"
  [ -f "$data" ] || /usr/bin/python3 - "$samples" "$data" <<'EOF'
import os, sys, h5py
n, out = int(sys.argv[1]), sys.argv[2]
with h5py.File("data/fmnist.h5", "r") as f, h5py.File(out + ".tmp", "w") as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    for split, m in (("train", n), ("test", None)):
        for d in ("x", "y"):
            g.create_dataset(f"{split}/{d}", data=f[split][d][:m], chunks=True)
os.replace(out + ".tmp", out)
EOF
fi

peer_model="$model"; hidden=""; sync_bn=()
case "$model" in
  mlp:*) peer_model=mlp; hidden="${model#mlp:}" ;;
  cnn-bn) sync_bn=(--sync-bn) ;;
esac
systems="mirror"
[ -z "$base_trainer" ] || systems+=" base"
[[ " $skip_peers " == *" torch "* ]] || systems+=" torch"
# TensorFlow's peer has the 512,256 MLP only.
[[ " $skip_peers " == *" tf "* ]] || { [ "$peer_model" = mlp ] && [ "$hidden" != "512,256" ]; } || systems+=" tf"
[ "$systems" = mirror ] || [ "$systems" = "mirror base" ] || [ -x "$py" ] ||
  { echo "bench_train.sh: no peers under $P; run $peers_src/setup.sh (or --no-peers torch,tf)" >&2; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

steps_for() { echo $((samples / (batch * $1))); }  # optimizer steps per epoch at np ranks (last partial dropped)
last_json() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
mirror_one() {  # np, metrics file, mpirun options...
  local np="$1" metrics="$2"; shift 2
  mpirun "$@" -np "$np" "$trainer" --data "$data" --model "$model" --batch-size "$batch" --epochs "$epochs" \
    --blas-threads 1 --eval-every 0 --progress off --metrics "$metrics" $trainer_args >"$metrics.out" 2>&1 ||
    { cat "$metrics.out" >&2; return 1; }
}
steady_mean() { python3 -c "import json; r=[json.loads(l)['steady_samples_per_s'] for l in open('$1')]; print(sum(r)/len(r))"; }
run_mirror() { mirror_one "$1" "$tmp/m.jsonl" --bind-to core && steady_mean "$tmp/m.jsonl"; }
run_base() { local trainer="$base_trainer"; mirror_one "$1" "$tmp/b.jsonl" --bind-to core && steady_mean "$tmp/b.jsonl"; }
run_torch() {
  mpirun --bind-to core -np "$1" "$py" "$peers_src/torch_ddp_fmnist.py" --model "$peer_model" ${hidden:+--hidden "$hidden"} \
    "${sync_bn[@]}" $([ "$precision" = bf16 ] && echo --bf16) --epochs "$epochs" --batch "$batch" --threads 1 \
    --max-steps "$(steps_for "$1")" 2>"$tmp/t.err" |
    last_json samples_per_s || { cat "$tmp/t.err" >&2; return 1; }
}
run_tf() {
  "$py" "$peers_src/tf_fmnist.py" --mode mirrored --replicas "$1" --model "$peer_model" "${sync_bn[@]}" \
    --epochs "$epochs" --batch "$batch" --threads 1 --inter "$1" --max-steps "$(steps_for "$1")" 2>"$tmp/f.err" |
    last_json samples_per_s || { cat "$tmp/f.err" >&2; return 1; }
}
run_ceiling() {  # two independent 1-rank Mirror runs started together, one per core: the sum of their samples/s
  taskset -c 0 bash -c "$(declare -f mirror_one); trainer='$trainer' data='$data' model='$model' batch=$batch \
    epochs=$epochs trainer_args='$trainer_args'; mirror_one 1 '$tmp/c0.jsonl' --bind-to none" &
  local first=$!
  taskset -c 1 bash -c "$(declare -f mirror_one); trainer='$trainer' data='$data' model='$model' batch=$batch \
    epochs=$epochs trainer_args='$trainer_args'; mirror_one 1 '$tmp/c1.jsonl' --bind-to none"
  wait "$first"
  python3 -c "print($(steady_mean "$tmp/c0.jsonl") + $(steady_mean "$tmp/c1.jsonl"))"
}
# Medians and ratios of what ran: a system with no successful run has nan.
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(statistics.median(v) if v else float('nan'))" "$@"; }
ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(a / b)" "$1" "$2"; }

cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
cores="$(getconf _NPROCESSORS_ONLN)"  # (nproc would honour OMP_NUM_THREADS=1)
# shellcheck source=machine.sh
source "$root/scripts/machine.sh"
caches="caches $(cpu_caches)"
echo "# bench_train: model $model ($precision), batch $batch per rank, $epochs epoch(s) of $samples samples per run, $repeats repeats, alternated"
echo "# CPU: $cpu, $cores logical CPUs ($(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core); $caches"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); samples/s leave out each epoch's first 20 steps"
declare -A R
set -- $nps
ceiling=0; [ "$#" -ge 2 ] && [ "$1" = 1 ] && [ "$cores" -ge 2 ] && ceiling=1
for rep in $(seq 1 "$repeats"); do
  for np in $nps; do
    for s in $systems; do
      # A failed run (a peer's mpirun job aborting at exit, say) is reported and left out; the others go on.
      if ! v="$(run_"$s" "$np")"; then
        echo "# repeat $rep: $s at np $np failed (its output above); left out of the medians"
        failed="${failed:-}${failed:+, }$s at np $np (repeat $rep)"
        continue
      fi
      R[$s,$np]="${R[$s,$np]:-} $v"
      printf '{"repeat": %d, "system": "%s", "np": %d, "samples_per_s": %.1f}\n' "$rep" "$s" "$np" "$v"
    done
  done
  if [ "$ceiling" = 1 ]; then
    if v="$(run_ceiling)"; then
      R[ceiling]="${R[ceiling]:-} $v"
      printf '{"repeat": %d, "system": "mirror 2 x np1 together", "samples_per_s": %.1f}\n' "$rep" "$v"
    else
      echo "# repeat $rep: the ceiling runs failed (their output above); left out"
      failed="${failed:-}${failed:+, }ceiling (repeat $rep)"
    fi
  fi
done

printf '\n%4s' np; for s in $systems; do printf ' %12s' "$s"; done
for s in $systems; do [ "$s" = mirror ] || printf ' %14s' "mirror/$s"; done; echo
for np in $nps; do
  printf '%4d' "$np"
  for s in $systems; do printf ' %12.0f' "$(median ${R[$s,$np]:-})"; done
  for s in $systems; do
    [ "$s" = mirror ] || printf ' %14.2f' "$(ratio "$(median ${R[mirror,$np]:-})" "$(median ${R[$s,$np]:-})")"
  done
  echo
done
if [ "$#" -ge 2 ]; then
  first="$1"; last="${!#}"
  printf '\nscaling np %s -> %s:' "$first" "$last"
  for s in $systems; do
    printf ' %s %.2fx' "$s" "$(ratio "$(median ${R[$s,$last]:-})" "$(median ${R[$s,$first]:-})")"
  done
  [ "$ceiling" = 1 ] &&
    printf '; ceiling for mirror (2 independent np1 runs together / np1): %.2fx' \
      "$(ratio "$(median ${R[ceiling]:-})" "$(median ${R[mirror,1]:-})")"
  echo
fi
if [ -n "${failed:-}" ]; then
  echo "# failed runs, left out of the medians: $failed"
  # Mirror's own failures fail the script; a peer's only show here.
  case ", $failed" in *", mirror "*|*", base "*|*", ceiling "*) exit 1 ;; esac
fi
