#!/bin/sh
# device_cases.sh [LECTOR] - the doctor on a real GPU machine, broken on
# purpose in the ways the matrix (tests/doctor/matrix.tsv) can only imitate.
# Run from the repository root after a build (default LECTOR: build/lector);
# it changes nothing outside a temporary directory, and prints for each case
# what the doctor should say, the command, its report and exit status.
#
#   1. the machine as it is                               ready
#   2. CUDA_VISIBLE_DEVICES=1 on a one-GPU machine        broken   L3 cuda_visible_devices_hides_all
#   3. LD_PRELOAD of the toolkit's stub libcuda.so        broken   L3 libcuda_stub
#   4. the stubs directory first on LD_LIBRARY_PATH       degraded L3 libcuda_stub (dlopen("libcuda.so"))
#   5. a text file named libcudnn.so.9 first on
#      LD_LIBRARY_PATH (a Git LFS pointer)                degraded L4 library_unloadable
#   6. a partial cuDNN (9.1.0 for CUDA 12.2: the shim
#      and libcudnn_ops only) first on LD_LIBRARY_PATH    broken   L4 cudnn_split_mixed
#      (stand-ins built here from tests/gpuenv/shims/fakelib.c, as cuDNN 9.1 is not installed)
set -u
LECTOR=${1:-build/lector}
CC=${CC:-cc}
[ -x "$LECTOR" ] || { echo "device_cases: $LECTOR not found (build first, or pass its path)" >&2; exit 2; }
W=$(mktemp -d /tmp/lector-device-cases.XXXXXX)
trap 'rm -rf "$W"' EXIT INT TERM

case_() { # TITLE EXPECTED [VAR=VALUE...]
    title=$1; expected=$2; shift 2
    echo "=============================================================================="
    echo "$title"
    echo "expected: $expected"
    echo "------------------------------------------------------------------------------"
    echo "\$ $* $LECTOR doctor"
    env "$@" "$LECTOR" doctor
    echo "exit status: $?"
    printf 'json: '
    env "$@" "$LECTOR" doctor --json | tr -d '\n' | grep -o '"status": *"[a-z]*"\|"cause_code": *"[a-z_]*"\|"first_failing_layer": *"[A-Za-z0-9]*"' | head -n3 |
        tr '\n' ' '
    echo
}

LLP=${LD_LIBRARY_PATH:-}

case_ "1. the machine as it is" "ready"

case_ "2. CUDA_VISIBLE_DEVICES=1 on a machine with one GPU" \
    "broken, L3 cuda_visible_devices_hides_all, fix: export CUDA_VISIBLE_DEVICES=0" CUDA_VISIBLE_DEVICES=1

STUB=$(ls /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda*/targets/*/lib/stubs/libcuda.so \
    /usr/local/cuda*/lib64/stubs/libcuda.so 2>/dev/null | head -n1)
if [ -n "$STUB" ]; then
    case_ "3. LD_PRELOAD=$STUB" "broken, L3 libcuda_stub, fix: unset LD_PRELOAD" LD_PRELOAD="$STUB"
    case_ "4. $(dirname "$STUB") first on LD_LIBRARY_PATH" \
        "degraded (Lector loads libcuda.so.1: fine), L3 libcuda_stub for dlopen(\"libcuda.so\"), fix: export LD_LIBRARY_PATH without it" \
        LD_LIBRARY_PATH="$(dirname "$STUB")${LLP:+:$LLP}"
else
    echo "3./4. skipped: no stubs/libcuda.so under /usr/local/cuda*"
fi

mkdir -p "$W/lfs"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1047126728\n' \
    > "$W/lfs/libcudnn.so.9"
case_ "5. a text file named libcudnn.so.9 first on LD_LIBRARY_PATH ($W/lfs)" \
    "degraded (ready for Lector, which passes over it), L4 library_unloadable, fix: unset/export LD_LIBRARY_PATH without $W/lfs" \
    LD_LIBRARY_PATH="$W/lfs${LLP:+:$LLP}"

P=$W/cudnn-9.1/lib
mkdir -p "$P"
if "$CC" -shared -fPIC -o "$P/libcudnn.so.9.1.0" tests/gpuenv/shims/fakelib.c -Wl,-soname,libcudnn.so.9 \
    -DFAKE_CUDNN=90100 -DFAKE_CUDNN_CUDART=12020 -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN' &&
    "$CC" -shared -fPIC -o "$P/libcudnn_ops.so.9.1.0" tests/gpuenv/shims/fakelib.c -Wl,-soname,libcudnn_ops.so.9; then
    ln -s libcudnn.so.9.1.0 "$P/libcudnn.so.9"
    ln -s libcudnn_ops.so.9.1.0 "$P/libcudnn_ops.so.9"
    case_ "6. a partial cuDNN 9.1.0 (libcudnn.so.9 + libcudnn_ops.so.9) first on LD_LIBRARY_PATH ($P)" \
        "broken (Lector would preload that shim), L4 cudnn_split_mixed, fix: LD_LIBRARY_PATH without $P" \
        LD_LIBRARY_PATH="$P${LLP:+:$LLP}"
else
    echo "6. skipped: $CC cannot build the stand-in cuDNN"
fi
