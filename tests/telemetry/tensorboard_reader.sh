#!/usr/bin/env bash
# tensorboard_reader.sh — runs tensorboard_read.py with the project's Python environment (made by
# scripts/python-env.sh on first use). Exit 77 (CTest: skipped) only when the package index is unreachable.
# Usage: tensorboard_reader.sh TB_WRITE_SCALARS SOURCE_DIR WORK_DIR
set -euo pipefail
writer="$1" src="$2" work="$3"
rc=0
python="$(bash "$src/scripts/python-env.sh")" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIPPED: tensorboard is not installed and pip cannot reach the package index to install it"
  exit 77
fi
[ "$rc" -eq 0 ] || { echo "tensorboard_reader: scripts/python-env.sh failed ($rc)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
exec "$python" "$src/tests/telemetry/tensorboard_read.py" "$writer" \
  "$src/trainer/telemetry/proto/tensorboard_event.proto" "$work"
