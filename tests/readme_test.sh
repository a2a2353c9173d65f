#!/usr/bin/env bash
# readme_test.sh — runs every command of README.md's tested block (between the readme-test markers) as
# written, in a scratch directory, with the build's programs on PATH. A command is expected to exit 0 unless
# its comment says "exit N". Usage: readme_test.sh README.md BUILD_DIR
set -euo pipefail
readme="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
build="$(cd "$2" && pwd)"
export PATH="$build/data:$build/trainer/tools:$build/launcher:$build/collectives:$PATH"
# As root, Open MPI needs these (the README says so); oversubscription lets -np 2 run on a 1-core machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work="$(mktemp -d "${TMPDIR:-/tmp}/mirror-readme.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

commands="$(sed -n '/<!-- readme-test:begin -->/,/<!-- readme-test:end -->/p' "$readme" | sed '1,2d;$d' | sed '$d')"
[ -n "$commands" ] || { echo "FAIL: no tested command block in $readme"; exit 1; }
count=0
while IFS= read -r line; do
  cmd="${line%%#*}"
  cmd="$(echo "$cmd" | sed 's/[[:space:]]*$//')"
  [ -n "$cmd" ] || continue
  want=0
  if [[ "$line" == *"#"* ]] && [[ "${line#*#}" =~ exit\ ([0-9]+) ]]; then want="${BASH_REMATCH[1]}"; fi
  echo "\$ $cmd"
  rc=0
  timeout 300 bash -c "$cmd" </dev/null >"$work/out.txt" 2>&1 || rc=$?
  tail -n 4 "$work/out.txt"
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: '$cmd' exited $rc, README expects $want. Output:"
    cat "$work/out.txt"
    exit 1
  fi
  count=$((count + 1))
done <<<"$commands"
echo "ok: all $count README commands ran as documented"
