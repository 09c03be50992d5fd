#!/usr/bin/env bash
# kfuse's own host time a run, without a GPU: run() and the Python call
# path against a stand-in libcuda.so.1 whose every call returns at once
# (fake_libcuda.c), so that what remains is kfuse's code, not the driver's.
# The driver's launch costs come on top (kfuse-bench costs measures them on
# the GPU machine). Needs build/ (cmake --build build) and a C compiler.
#
#   bash bench/host/measure.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -I/usr/local/cuda/include "$root/bench/host/fake_libcuda.c" \
  -o "$work/libcuda.so.1"
c++ -O2 -std=c++17 -I"$root/include" "$root/bench/host/host_run.cpp" \
  -L"$root/build/compiler" -lkfuse -Wl,-rpath,"$root/build/compiler" \
  -o "$work/host_run"
for launch in kernels graph; do
  for kernels in 1 20; do
    LD_LIBRARY_PATH="$work" "$work/host_run" "$kernels" "$launch" 100000
  done
done
if python3 -c "import torch, numpy" 2>/dev/null; then
  LD_LIBRARY_PATH="$work" KFUSE_LIBRARY="$root/build/compiler/libkfuse.so" \
    python3 "$root/bench/host/python_call.py"
fi
