#!/usr/bin/env bash
# python-env.sh — the project's Python virtual environment for tests that read Mirror's output with the
# tools users open it in (PyPI `tensorboard`: its EventAccumulator; `safetensors`: its numpy API). Made with
# Debian's /usr/bin/python3 (python3-venv), installed once, reused after; concurrent callers wait on a lock.
# Usage: scripts/python-env.sh        prints the environment's python on stdout
#   MIRROR_PYENV (default $HOME/.cache/mirror-pyenv) is where it lives.
# Exit codes: 0 ready; 77 the package index cannot be reached (tests skip on it); 1 anything else.
set -euo pipefail
env_dir="${MIRROR_PYENV:-$HOME/.cache/mirror-pyenv}"
packages=(tensorboard safetensors)
python="$env_dir/bin/python"

ready() {
  [ -x "$python" ] && "$python" -c "import tensorboard.backend.event_processing.event_accumulator, safetensors.numpy" 2>/dev/null
}

mkdir -p "$(dirname "$env_dir")"
exec 9>"$env_dir.lock"
flock 9
if ! ready; then
  if [ ! -x "$python" ]; then
    /usr/bin/python3 -m venv "$env_dir" >&2 || { echo "python-env: cannot make a venv with /usr/bin/python3 (is python3-venv installed? scripts/install-deps.sh installs it)" >&2; exit 1; }
  fi
  echo "python-env: installing ${packages[*]} into $env_dir" >&2
  if ! "$python" -m pip install -q --disable-pip-version-check "${packages[@]}" >&2; then
    # Tell "no network" (skip) from a real failure: can pip reach its index at all?
    if ! "$python" -m pip index versions --disable-pip-version-check "${packages[0]}" >/dev/null 2>&1; then
      echo "python-env: the package index cannot be reached; cannot install ${packages[*]}" >&2
      exit 77
    fi
    echo "python-env: pip install ${packages[*]} failed" >&2
    exit 1
  fi
  ready || { echo "python-env: ${packages[*]} installed but tensorboard's EventAccumulator or safetensors.numpy does not import" >&2; exit 1; }
fi
echo "$python"
