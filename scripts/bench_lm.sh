#!/usr/bin/env bash
# bench_lm.sh — language-model training throughput: Mirror's trainer against the PyTorch DDP peer
# (../shared/peers/torch_gpt.py: the same GPT-2-shaped model, byte tokens of the same text, one thread per rank),
# alternated in one run and repeated. Prints each run as a JSON line, then a table of median tokens/s per model, np
# and system with the ratio Mirror/peer, Mirror's scaling np1 -> np2 beside its ceiling (two independent 1-rank runs
# at once), and Mirror's share of the single-core float32 peak (mirror-gemm-bench's best sgemm GFLOP/s in the same
# run): (6 x parameters + 6 x layers x context x channels) FLOP per token x tokens/s per rank over that peak (the
# second term is causal attention's two products, forward and backward). Both leave the first 20 steps out of
# tokens/s (Mirror: its tokens_per_s; the peer: --skip 20). --precision fp32,bf16 measures both precisions
# (Mirror's --precision bf16 against the peer's --bf16, torch.autocast), alternated, with each one's bf16/fp32 ratio;
# bf16's share is of the best bfloat16 figure of the same mirror-gemm-bench run (its "bf16 mm" column).
#   scripts/bench_lm.sh [--models gpt-nano:12,gpt-mini:8] [--np 1,2] [--steps 60] [--repeats 3] [--no-peer]
#                       [--precision fp32[,bf16]]
# The text is Shakespeare's plays (scripts/fetch-shakespeare.sh). Peers: ../shared/peers (setup.sh installs them
# under MIRROR_PEERS_HOME, default ~/.cache/mirror-peers). Needs a build (BUILD_DIR, default build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
models="gpt-nano:12,gpt-mini:8"; nps="1 2"; steps=60; repeats=3; peer=1; precisions="fp32"
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --np) nps="${2//,/ }"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --no-peer) peer=0; shift ;;
    --precision) precisions="${2//,/ }"; shift 2 ;;
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
"$gemm" --threads 1 --rounds 3 >"$work/gemm.txt"
peak="$(awk '/^product/ {for (i = 1; i <= NF; ++i) if ($i == "sgemm") col = i + 1}  # data rows: "fwd  784->512 B64" is three fields
  !/^#/ && !/^product/ && col && $col ~ /^[0-9.]+$/ && $col + 0 > m {m = $col + 0} END {print m}' "$work/gemm.txt")"
# The bf16 matmul is the last column ("-" where oneDNN has no bfloat16 products).
peak_bf16="$(awk '!/^#/ && !/^product/ && $NF ~ /^[0-9.]+$/ && $NF + 0 > m {m = $NF + 0} END {print m + 0}' "$work/gemm.txt")"
echo "single-core sgemm peak (best mirror-gemm-bench figure): $peak GFLOP/s; bf16 matmul peak: $peak_bf16 GFLOP/s"

mirror_run() {  # model batch np precision [dir] [binding] -> tokens/s
  local dir="${5:-$work/mirror}" bind="${6:-core}"
  mkdir -p "$dir"
  rm -f "$dir/m.jsonl"
  mpirun -np "$3" --bind-to "$bind" "$trainer" --data "$work/text.h5" --model "$1" --batch-size "$2" \
    --train-steps "$steps" --optimizer adamw --lr 1e-3 --beta2 0.99 --weight-decay 0.1 --warmup-steps 10 \
    --decay cosine --min-lr 1e-4 --grad-clip 1 --eval-every 0 --progress off --precision "$4" --metrics "$dir/m.jsonl" \
    >"$dir/m.log" 2>&1 || { cat "$dir/m.log" >&2; exit 1; }
  /usr/bin/python3 -c "import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['tokens_per_s'])" \
    "$dir/m.jsonl"
}
peer_run() {  # model batch np precision -> tokens/s
  local preset="${1#gpt-}" bf16=""
  [ "$4" = bf16 ] && bf16=--bf16
  PEER_PORT=$((29500 + RANDOM % 400)) mpirun -np "$3" --bind-to core "$P/venv/bin/python" "$peer_py" --text "$work/text.txt" \
    --preset "$preset" --batch "$2" --steps "$steps" --skip 20 --eval-batches 1 --threads 1 $bf16 2>"$work/p.err" \
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
record() {  # repeat model batch np system precision tokens/s
  echo "{\"repeat\": $1, \"model\": \"$2\", \"batch\": $3, \"np\": $4, \"system\": \"$5\", \"precision\": \"$6\", \"tokens_per_s\": $7}" \
    | tee -a "$results"
}
first_precision="${precisions%% *}"
for r in $(seq 1 "$repeats"); do
  for spec in ${models//,/ }; do
    model="${spec%%:*}"; batch="${spec##*:}"
    for n in $nps; do
      for prec in $precisions; do
        record "$r" "$model" "$batch" "$n" mirror "$prec" "$(mirror_run "$model" "$batch" "$n" "$prec")"
        [ "$peer" = 1 ] && record "$r" "$model" "$batch" "$n" torch "$prec" "$(peer_run "$model" "$batch" "$n" "$prec")"
      done
    done
    if [[ " $nps " == *" 2 "* ]]; then  # the ceiling of np 2: two independent 1-rank runs at once
      a="$work/c1"; b="$work/c2"
      (mirror_run "$model" "$batch" 1 "$first_precision" "$work/ceiling1" none >"$a") &
      (mirror_run "$model" "$batch" 1 "$first_precision" "$work/ceiling2" none >"$b") &
      wait
      record "$r" "$model" "$batch" 2 ceiling "$first_precision" \
        "$(/usr/bin/python3 -c "print(float(open('$a').read()) + float(open('$b').read()))")"
    fi
  done
done

echo
for spec in ${models//,/ }; do
  model="${spec%%:*}"
  read -r params layers context channels <<<"$(params_of "$model")"
  /usr/bin/python3 - "$results" "$model" "$params" "$layers" "$context" "$channels" "$peak" "$peak_bf16" <<'PY'
import json, statistics, sys
path, model, params, layers, context, channels, peak, peak_bf16 = sys.argv[1:]
params, layers, context, channels = int(params), int(layers), int(context), int(channels)
peaks = {"fp32": float(peak), "bf16": float(peak_bf16)}
rows = [json.loads(l) for l in open(path) if json.loads(l)["model"] == model]
def median(system, n, prec):
    v = [r["tokens_per_s"] for r in rows if r["system"] == system and r["np"] == n and r["precision"] == prec]
    return statistics.median(v) if v else None
nan = float("nan")
flop_per_token = 6 * params + 6 * layers * context * channels
print(f"{model} ({params} parameters, {flop_per_token / 1e6:.1f} MFLOP per token)")
print(f"  {'np':>3} {'precision':>9} {'mirror tok/s':>13} {'torch tok/s':>12} {'mirror/torch':>13} {'share of peak':>14}")
precs = [p for p in ("fp32", "bf16") if any(r["precision"] == p for r in rows)]
for n in sorted({r['np'] for r in rows if r["system"] != "ceiling"}):
    for p in precs:
        m, t = median("mirror", n, p), median("torch", n, p)
        share = m / n * flop_per_token / (peaks[p] * 1e9) if m and peaks[p] else None
        print(f"  {n:>3} {p:>9} {m:>13.0f} {t if t else nan:>12.0f} {m / t if t else nan:>13.2f} "
              f"{share if share else nan:>13.0%}")
    if len(precs) == 2:
        ratio = lambda s: (median(s, n, "bf16") or nan) / (median(s, n, "fp32") or nan)
        print(f"  {n:>3} bf16/fp32: mirror {ratio('mirror'):.2f}x, torch {ratio('torch'):.2f}x")
for p in precs:
    c, m1, m2 = median("ceiling", 2, p), median("mirror", 1, p), median("mirror", 2, p)
    if c and m1 and m2:
        print(f"  {p} scaling np1 -> np2: {m2 / m1:.2f}x; ceiling (two 1-rank runs at once) {c / m1:.2f}x")
PY
done
