# Sourced by the scripts that run on the GPU machine (gpu-run.sh,
# gpu-sanitize.sh), from the repository root with .bundle/ carried: unpacks
# the bundle to a temporary directory and sets `root`, `out` ($OUT, or
# ./gpu-logs), `dest` (the unpacked bundle), `bin`, the library path and a
# fresh kernel cache.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/gpu-logs}
mkdir -p "$out"
dest=$(mktemp -d)
tar -C "$dest" -xJf "$root/.bundle/kfuse.tar.xz"
export LD_LIBRARY_PATH="$dest/kfuse/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KFUSE_CACHE_DIR="$dest/cache"
bin=$dest/kfuse/bin
