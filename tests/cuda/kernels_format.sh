#!/bin/sh
# cuda.kernels_format: scripts/kernels.py builds the shipped kernels from the
# manifest (two architectures) and every file it writes is one the CUDA
# module's reader takes (kcache_files), keyed by the NVRTC its file NVRTC
# names. Skipped (77) without NVRTC.
# Usage: kernels_format.sh SRC KCACHE_FILES WORK_DIR
src=$1 check=$2 work=$3
rm -rf "$work"
python3 "$src/scripts/kernels.py" build "$src/src/backend/cuda/kernels.manifest" --arch 75,90 -o "$work" --jobs 2
r=$?
[ $r = 3 ] && { echo "skipped: no NVRTC"; exit 77; }
[ $r = 0 ] || { echo "FAIL scripts/kernels.py build (exit $r)"; exit 1; }
n=$(grep -c '^@@ kernel ' "$src/src/backend/cuda/kernels.manifest")
[ "$(ls "$work" | wc -l)" = $((2 * n + 1)) ] || { echo "FAIL $(ls "$work" | wc -l) files, not 2 x $n and NVRTC"; exit 1; }
"$check" --shipped "$work"
