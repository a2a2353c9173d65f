#!/usr/bin/env bash
# test_import_train.sh — a training run on imported data: an .npz written by numpy (float64 samples, numpy's
# default int64 labels, three well separated clusters) is imported with class names, trained for 2 epochs on
# 2 ranks, and evaluated: mirror-eval names the classes, and the model learned them (accuracy > 0.9, which
# wrong labels or scrambled samples would not give).
# Usage: test_import_train.sh MIRROR_DATA TRAINER MIRROR_EVAL MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
mirror_data=$1 trainer=$2 mirror_eval=$3
shift 3
mpirun=("$@")
work="$(mktemp -d "${TMPDIR:-/tmp}/mirror-import-train.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(1)
centres = rng.standard_normal((3, 16)) * 3
y = rng.integers(0, 3, 3000)
np.savez_compressed("clusters.npz", x=centres[y] + rng.standard_normal((3000, 16)), y=y)
PY
"$mirror_data" import clusters.npz --test-fraction 0.2 --class-names red,green,blue --out clusters.h5
"$mirror_data" inspect clusters.h5 | grep -q "classes      3 (red, green, blue)"
"${mpirun[@]}" -np 2 "$trainer" --data clusters.h5 --model mlp:32 --epochs 2 --checkpoint-dir ckpt >train.log 2>&1 ||
  { cat train.log; exit 1; }
"$mirror_eval" --checkpoint ckpt --data clusters.h5 >eval.txt
cat eval.txt
for c in "0 .*red" "1 .*green" "2 .*blue"; do
  grep -Eq "^  class +$c\$" eval.txt || { echo "FAIL: mirror-eval does not name class '$c'"; exit 1; }
done
acc="$(sed -n 's/.*accuracy \([0-9.]*\).*/\1/p' eval.txt | head -1)"
/usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') > 0.9 else 1)" ||
  { echo "FAIL: accuracy $acc on imported clusters; expected > 0.9"; exit 1; }
echo "ok: trained on imported data (accuracy $acc), classes named"
