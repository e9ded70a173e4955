#!/bin/bash
# cuda.shipped_kernels: the kernels shipped with the CUDA module
# (src/backend/cuda/kernels.manifest, built by scripts/kernels.py as the
# bundle's lib/lector-kernels) cover what reading the test images compiles:
# with them and an empty kernel cache, NVRTC compiles nothing and is not
# even loaded, in fp32 and --fp16, and every line reads as the CPU reads it
# (test_cuda_engine same: the CPU's text is the oracle). Without NVRTC
# (LECTOR_CUDA_NVRTC_LIB naming no file) the shipped kernels run all the
# same, and with none shipped the chains run in the interpreter. Fails when
# the manifest is out of date with the kernel generator (cuda_nvrtc.c):
# record it again with `bench/gpu/device.sh kernels` (its
# $out/kernels.manifest).
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
# run NAME [ENV=VALUE...] [-- FLAGS]: test_cuda_engine same with an empty kernel
# cache; sets cached shipped compiled interp (the debug log's counts, summed)
run() {
    name=$1
    shift
    local envs=() flags=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift && flags=("$@")
    rm -rf "$dir/cache"
    env XDG_CACHE_HOME="$dir/cache" "${envs[@]}" "$engine" same "${flags[@]}" "${imgs[@]}" >"$dir/out" 2>"$dir/err"
    r=$?
    [ $r = 77 ] && { echo "skipped: no GPU"; exit 77; }
    [ $r = 0 ] || fail "$name: test_cuda_engine same (exit $r): its text against the CPU's" "$dir/out" "$dir/err"
    read -r cached shipped compiled interp <<<"$(sed -n 's/.*(\([0-9]*\) from the kernel cache, \([0-9]*\) shipped, \([0-9]*\) compiled by NVRTC, \([0-9]*\) in the interpreter).*/\1 \2 \3 \4/p' \
        "$dir/err" | awk '{c += $1; s += $2; n += $3; i += $4} END {print c + 0, s + 0, n + 0, i + 0}')"
}
nvrtc_loaded() { grep -q "cuda: NVRTC [0-9.]* loaded from" "$dir/err"; }
imgs=("$@")
for f in "" --fp16; do
    run "${f:-fp32}" -- $f
    [ "$shipped" -gt 0 ] || fail "${f:-fp32}: no kernel came from the shipped ones" "$dir/err"
    [ "$compiled" = 0 ] && [ "$interp" = 0 ] ||
        fail "${f:-fp32}: $compiled kernels compiled by NVRTC and $interp in the interpreter: the manifest lacks them; record it with bench/gpu/device.sh kernels" \
            "$dir/err"
    ! nvrtc_loaded || fail "${f:-fp32}: NVRTC was loaded though every kernel was shipped" "$dir/err"
    echo "${f:-fp32}: $shipped kernels shipped, $cached from the cache, none compiled, NVRTC not loaded; lines as the CPU's"
done
# a machine without NVRTC: the shipped kernels run all the same; with none
# shipped, every chain runs in the interpreter, and the lines are the same
run "no NVRTC" LECTOR_CUDA_NVRTC_LIB="$dir/no/libnvrtc.so"
[ "$shipped" -gt 0 ] && [ "$compiled" = 0 ] && [ "$interp" = 0 ] ||
    fail "no NVRTC: $shipped shipped, $compiled compiled, $interp in the interpreter" "$dir/err"
echo "no NVRTC: $shipped kernels shipped, none in the interpreter; lines as the CPU's"
run "no NVRTC, none shipped" LECTOR_CUDA_NVRTC_LIB="$dir/no/libnvrtc.so" LECTOR_CUDA_KERNELS_SHIPPED=
grep -q "NVRTC: $dir/no/libnvrtc.so not found" "$dir/err" && [ "$shipped" = 0 ] && [ "$compiled" = 0 ] ||
    fail "no NVRTC, none shipped: no message that NVRTC is missing, or kernels that cannot be ($shipped, $compiled)" "$dir/err"
echo "no NVRTC, none shipped: chains in the interpreter; lines as the CPU's"
echo "shipped_kernels: passed"
