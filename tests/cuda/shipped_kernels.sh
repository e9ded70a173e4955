#!/bin/bash
# cuda.shipped_kernels: the kernels shipped with the CUDA module
# (src/backend/cuda/kernels.manifest, built by scripts/kernels.py as the
# bundle's lib/lector-kernels) cover what reading the test images compiles:
# with them and an empty kernel cache, NVRTC compiles nothing, in fp32 and
# --fp16, and every line reads as the CPU reads it (test_cuda_engine same:
# the CPU's text is the oracle). Fails when the manifest is out of date with
# the kernel generator (cuda_nvrtc.c): record it again with
# `bench/gpu/device.sh kernels` (its $out/kernels.manifest).
# Usage: shipped_kernels.sh SRC TEST_CUDA_ENGINE --models DIR IMAGE...
set -u
src=$1 engine=$2
shift 2
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
if [ -z "$arch" ]; then
    echo "skipped: no GPU (nvidia-smi gives no GPU)"
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
    echo "FAIL $1"
    shift
    for f in "$@"; do grep -v "^lector: debug" "$f" | tail -20; done
    exit 1
}
python3 "$src/scripts/kernels.py" build "$src/src/backend/cuda/kernels.manifest" --arch "$arch" -o "$dir/shipped" \
    >"$dir/build.log" 2>&1 || fail "scripts/kernels.py build for sm_$arch" "$dir/build.log"
export LECTOR_CUDA_KERNELS_SHIPPED=$dir/shipped LECTOR_LOG=debug
for f in "" --fp16; do
    rm -rf "$dir/cache"
    XDG_CACHE_HOME=$dir/cache "$engine" same $f "$@" >"$dir/out" 2>"$dir/err"
    r=$?
    [ $r = 77 ] && { echo "skipped: no GPU"; exit 77; }
    [ $r = 0 ] || fail "${f:-fp32}: test_cuda_engine same (exit $r): its text against the CPU's" "$dir/out" "$dir/err"
    counts=$(sed -n 's/.*(\([0-9]*\) from the kernel cache, \([0-9]*\) shipped, \([0-9]*\) compiled by NVRTC).*/\1 \2 \3/p' \
        "$dir/err" | awk '{c += $1; s += $2; n += $3} END {print c + 0, s + 0, n + 0}')
    read -r cached shipped compiled <<<"$counts"
    [ "$shipped" -gt 0 ] || fail "${f:-fp32}: no kernel came from the shipped ones ($counts)" "$dir/err"
    [ "$compiled" = 0 ] ||
        fail "${f:-fp32}: NVRTC compiled $compiled kernels the manifest lacks: record it with bench/gpu/device.sh kernels" \
            "$dir/err"
    echo "${f:-fp32}: $shipped kernels shipped, $cached from the cache, none compiled; lines as the CPU's"
done
echo "shipped_kernels: passed"
