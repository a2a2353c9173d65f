#!/usr/bin/env bash
# bench_shm_staging.sh — the shared-memory allreduce with each way of writing the staging buffers
# (--shm-staging auto, cached, streaming) and on shared buffers (mode "shared": mirror-bench -R 1, the
# direct path without staging) against MPI_Allreduce in the same mirror-bench run, 2 ranks, float32, out
# of place, alternated and repeated (the placement of this VM's virtual CPUs changes from minute to
# minute, and with it which stores are faster: docs/collectives-shm.md). Prints every run and the
# medians per mode and size: Mirror µs, MPI µs, Mirror/MPI busbw.
#   scripts/bench_shm_staging.sh [--repeats 5] [--min 16M] [--max 64M] [--np 2]
#                                [--modes "auto cached streaming shared"]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
repeats=5; min=16M; max=64M; np=2; modes="auto cached streaming shared"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    *) echo "bench_shm_staging.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for v in "$repeats" "$np"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench_shm_staging.sh: --repeats and --np take a positive integer, got '$v'" >&2; exit 2; }
done
for m in $modes; do
  case "$m" in auto|cached|streaming|shared) ;; *) echo "bench_shm_staging.sh: unknown mode '$m' (auto, cached, streaming, shared)" >&2; exit 2 ;; esac
done
build="${BUILD_DIR:-build}"
bench="$root/$build/collectives/mirror-bench"
[ -x "$bench" ] || { echo "bench_shm_staging.sh: build first (scripts/test.sh), or set BUILD_DIR" >&2; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mpi=(mpirun -np "$np"); [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
echo "# bench_shm_staging: $np ranks, float32 sum, out of place, $min..$max, $repeats repeats, modes: $modes; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$repeats"); do
  for mode in $modes; do
    if [ "$mode" = shared ]; then args=(--shm-staging auto -R 1); else args=(--shm-staging "$mode" -R 0); fi
    "${mpi[@]}" "$bench" allreduce -b "$min" -e "$max" -f 4 -c 1 -w 5 --stream 0 --transport shm \
      "${args[@]}" --json "$tmp/$mode.$rep.json" </dev/null >"$tmp/$mode.$rep.txt"
    grep -q "Out of bounds values : 0 OK" "$tmp/$mode.$rep.txt" || { cat "$tmp/$mode.$rep.txt"; exit 1; }
    grep "shm staging stores\|shm direct" "$tmp/$mode.$rep.txt" | sed "s/^/# run $rep $mode: /" || true
  done
done
python3 - "$tmp" "$repeats" $modes <<'PY'
import json, statistics as st, sys
tmp, repeats, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
print(f"{'run':>4} {'mode':>10} {'bytes':>10} {'mirror_us':>10} {'mpi_us':>10} {'ratio':>6}")
for rep in range(1, repeats + 1):
    for mode in modes:
        for r in json.load(open(f"{tmp}/{mode}.{rep}.json"))["rows"]:
            m, p = r["out_of_place"]["time_us"], r["mpi"]["time_us"]
            rows.setdefault((mode, r["bytes"]), []).append((m, p, p / m))
            print(f"{rep:>4} {mode:>10} {r['bytes']:>10} {m:>10.1f} {p:>10.1f} {p / m:>6.2f}")
print("\nmedians (ratio = Mirror busbw / MPI busbw, per run, then the median)")
print(f"{'mode':>10} {'bytes':>10} {'mirror_us':>10} {'mpi_us':>10} {'ratio':>6}  per-run ratios")
for (mode, b), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{mode:>10} {b:>10} {st.median(x[0] for x in v):>10.1f} {st.median(x[1] for x in v):>10.1f} "
          f"{st.median(x[2] for x in v):>6.2f}  " + " ".join(f"{x[2]:.2f}" for x in v))
PY
