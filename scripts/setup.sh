#!/usr/bin/env bash
# Installs every Debian package kfuse's build and tests need. Idempotent:
# when all is there it only checks (a fraction of a second).
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libzstd-dev zlib1g-dev libncurses-dev
  libgtest-dev
  python3-numpy python3-pytest python3-torch
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" > /dev/null
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/cuda.h" ]; then
  echo "setup: note: no CUDA toolkit at $cuda_home (cuda.h, ptxas);" \
       "set CUDA_HOME. PTX checks that need ptxas will be skipped." >&2
fi
