#!/usr/bin/env bash
# bench_lm.sh — language-model training throughput: Mirror's trainer against the PyTorch DDP peer
# (../shared/peers/torch_gpt.py: the same GPT-2-shaped model, byte tokens of the same text, one thread per rank),
# alternated in one run and repeated. Prints each run as a JSON line, then a table of median tokens/s per model, np
# and system with the ratio Mirror/peer, Mirror's scaling np1 -> np2 beside its ceiling (two independent 1-rank runs
# at once), and Mirror's share of the single-core float32 peak (mirror-gemm-bench's best sgemm GFLOP/s in the same
# run): (6 x parameters + 6 x layers x context x channels) FLOP per token x tokens/s per rank over that peak (the
# second term is causal attention's two products, forward and backward). Both leave the first 20 steps out of
# tokens/s (Mirror: its tokens_per_s; the peer: --skip 20).
#   scripts/bench_lm.sh [--models gpt-nano:12,gpt-mini:8] [--np 1,2] [--steps 60] [--repeats 3] [--no-peer]
# The text is Shakespeare's plays (scripts/fetch-shakespeare.sh). Peers: ../shared/peers (setup.sh installs them
# under MIRROR_PEERS_HOME, default ~/.cache/mirror-peers). Needs a build (BUILD_DIR, default build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
models="gpt-nano:12,gpt-mini:8"; nps="1 2"; steps=60; repeats=3; peer=1
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --np) nps="${2//,/ }"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_lm.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$steps" =~ ^[0-9]+$ ]] && [ "$steps" -gt 25 ] || { echo "bench_lm.sh: --steps must be > 25 (20 are left out)" >&2; exit 2; }
build="${BUILD_DIR:-build}"
trainer="$root/$build/trainer/tools/trainer"
gemm="$root/$build/trainer/tools/mirror-gemm-bench"
mirror_data="$root/$build/data/mirror-data"
for p in "$trainer" "$gemm" "$mirror_data"; do [ -x "$p" ] || { echo "bench_lm.sh: no $p; build first" >&2; exit 2; }; done
P="${MIRROR_PEERS_HOME:-$HOME/.cache/mirror-peers}"
peer_py="$root/../shared/peers/torch_gpt.py"
if [ "$peer" = 1 ] && { [ ! -x "$P/venv/bin/python" ] || [ ! -f "$peer_py" ]; }; then
  echo "bench_lm.sh: the PyTorch peer is not installed ($P/venv; run ../shared/peers/setup.sh) or --no-peer" >&2; exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

work="$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-lm.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mapfile -t plays < <(scripts/fetch-shakespeare.sh data/shakespeare)
cat "${plays[@]}" >"$work/text.txt"
"$mirror_data" text --out "$work/text.h5" "${plays[@]}" >/dev/null

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(getconf _NPROCESSORS_ONLN) cores, L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')"
# The sgemm column (oneDNN's dnnl_sgemm, what ops::gemm calls): its best figure over the Linear shapes.
peak="$("$gemm" --threads 1 --rounds 3 | awk '/^product/ {for (i = 1; i <= NF; ++i) if ($i == "sgemm") col = i + 1}  # data rows: "fwd  784->512 B64" is three fields
  !/^#/ && !/^product/ && col && $col ~ /^[0-9.]+$/ && $col + 0 > m {m = $col + 0} END {print m}')"
echo "single-core sgemm peak (best mirror-gemm-bench figure): $peak GFLOP/s"

mirror_run() {  # model batch np [dir] [binding] -> tokens/s
  local dir="${4:-$work/mirror}" bind="${5:-core}"
  mkdir -p "$dir"
  rm -f "$dir/m.jsonl"
  mpirun -np "$3" --bind-to "$bind" "$trainer" --data "$work/text.h5" --model "$1" --batch-size "$2" \
    --train-steps "$steps" --optimizer adamw --lr 1e-3 --beta2 0.99 --weight-decay 0.1 --warmup-steps 10 \
    --decay cosine --min-lr 1e-4 --grad-clip 1 --eval-every 0 --progress off --metrics "$dir/m.jsonl" \
    >"$dir/m.log" 2>&1 || { cat "$dir/m.log" >&2; exit 1; }
  /usr/bin/python3 -c "import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['tokens_per_s'])" \
    "$dir/m.jsonl"
}
peer_run() {  # model batch np -> tokens/s
  local preset="${1#gpt-}"
  PEER_PORT=$((29500 + RANDOM % 400)) mpirun -np "$3" --bind-to core "$P/venv/bin/python" "$peer_py" --text "$work/text.txt" \
    --preset "$preset" --batch "$2" --steps "$steps" --skip 20 --eval-batches 1 --threads 1 2>"$work/p.err" \
    | tail -1 | /usr/bin/python3 -c "import json, sys; print(json.loads(sys.stdin.read())['tokens_per_s'])" \
    || { cat "$work/p.err" >&2; exit 1; }
}
params_of() {  # model -> "parameters layers context channels"
  "$trainer" --print-model "$1" | /usr/bin/python3 -c "
import json, sys
m = json.load(sys.stdin)['layers']
C = m[0]['channels']; T = m[1]['context']; L = sum(1 for l in m if l['type'] == 'causal_self_attention')
V = 256 if m[0]['vocab'] == 'classes' else m[0]['vocab']
print(V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C, L, T, C)"
}

results="$work/results.jsonl"
for r in $(seq 1 "$repeats"); do
  for spec in ${models//,/ }; do
    model="${spec%%:*}"; batch="${spec##*:}"
    for n in $nps; do
      m="$(mirror_run "$model" "$batch" "$n")"
      echo "{\"repeat\": $r, \"model\": \"$model\", \"batch\": $batch, \"np\": $n, \"system\": \"mirror\", \"tokens_per_s\": $m}" | tee -a "$results"
      if [ "$peer" = 1 ]; then
        t="$(peer_run "$model" "$batch" "$n")"
        echo "{\"repeat\": $r, \"model\": \"$model\", \"batch\": $batch, \"np\": $n, \"system\": \"torch\", \"tokens_per_s\": $t}" | tee -a "$results"
      fi
    done
    if [[ " $nps " == *" 2 "* ]]; then  # the ceiling of np 2: two independent 1-rank runs at once
      a="$work/c1"; b="$work/c2"
      (mirror_run "$model" "$batch" 1 "$work/ceiling1" none >"$a") &
      (mirror_run "$model" "$batch" 1 "$work/ceiling2" none >"$b") &
      wait
      c="$(/usr/bin/python3 -c "print(float(open('$a').read()) + float(open('$b').read()))")"
      echo "{\"repeat\": $r, \"model\": \"$model\", \"batch\": $batch, \"np\": 2, \"system\": \"ceiling\", \"tokens_per_s\": $c}" | tee -a "$results"
    fi
  done
done

echo
for spec in ${models//,/ }; do
  model="${spec%%:*}"
  read -r params layers context channels <<<"$(params_of "$model")"
  /usr/bin/python3 - "$results" "$model" "$params" "$layers" "$context" "$channels" "$peak" <<'PY'
import json, statistics, sys
path, model, params, layers, context, channels, peak = sys.argv[1:]
params, layers, context, channels, peak = int(params), int(layers), int(context), int(channels), float(peak)
rows = [json.loads(l) for l in open(path) if json.loads(l)["model"] == model]
def median(system, n):
    v = [r["tokens_per_s"] for r in rows if r["system"] == system and r["np"] == n]
    return statistics.median(v) if v else None
flop_per_token = 6 * params + 6 * layers * context * channels
print(f"{model} ({params} parameters, {flop_per_token / 1e6:.1f} MFLOP per token)")
print(f"  {'np':>3} {'mirror tok/s':>13} {'torch tok/s':>12} {'mirror/torch':>13} {'share of peak':>14}")
for n in sorted({r['np'] for r in rows}):
    m, t = median("mirror", n), median("torch", n)
    share = m / n * flop_per_token / (peak * 1e9) if m and peak else None
    print(f"  {n:>3} {m:>13.0f} {t if t else float('nan'):>12.0f} {m / t if t else float('nan'):>13.2f} "
          f"{share if share else float('nan'):>13.0%}")
c, m1, m2 = median("ceiling", 2), median("mirror", 1), median("mirror", 2)
if c and m1 and m2:
    print(f"  scaling np1 -> np2: {m2 / m1:.2f}x; ceiling (two 1-rank runs at once) {c / m1:.2f}x")
PY
done
