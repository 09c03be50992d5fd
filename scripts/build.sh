#!/usr/bin/env bash
# Configures and builds kfuse in build/ (or $KFUSE_BUILD_DIR), Release, with
# ccache. Used by the README's commands; safe to run again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
fi
cmake --build "$build"
