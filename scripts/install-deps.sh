#!/usr/bin/env bash
# install-deps.sh — installs Mirror's build and test dependencies from Debian's packages.
# Idempotent and quiet when everything is already there. Extra package names may be given as
# arguments (e.g. dataset-fashion-mnist, python3-torch). CUDA is never installed here: it is optional.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  openmpi-bin libopenmpi-dev
  libhdf5-dev hdf5-tools
  libopenblas-dev libdnnl-dev
  libgtest-dev
  libcli11-dev nlohmann-json3-dev
  zlib1g-dev
  libzip-dev libstb-dev
  libsentencepiece-dev libpcre2-dev   # mirror-data text's tokenizers: SentencePiece BPE, GPT-2's pattern
  libprotobuf-dev protobuf-compiler libboost-dev   # TensorBoard event files (protobuf, Boost.CRC)
  python3-venv                                     # scripts/python-env.sh (tensorboard for the reader test)
  python3-matplotlib
  python3-numpy python3-h5py python3-pil
  iproute2                 # ip: the namespaced test hosts of scripts/cluster.sh (tests labelled cluster)
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
