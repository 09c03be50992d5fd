#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs a project
# that finds it with find_package(kfuse), and imports the installed Python
# package (which must find the installed libkfuse.so by itself).
set -euo pipefail
build=$1
source=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$source" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/consumer" > /dev/null
"$work/consumer/consumer"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
if "$python" -c "import numpy" 2> /dev/null; then
  (cd "$work" && env -u KFUSE_LIBRARY PYTHONPATH="$work/prefix/lib/python" \
    PYTHONDONTWRITEBYTECODE=1 "$python" -c "
import kfuse
g = kfuse.Graph('installed')
g.output('y', g.input('x', kfuse.float32, (4,)).exp())
assert '.entry' in kfuse.compile(g, disk_cache=False).dump('ptx')
print('installed Python package: kfuse', kfuse.__version__)
")
fi
