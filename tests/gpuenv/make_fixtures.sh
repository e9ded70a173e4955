#!/bin/sh
# make_fixtures.sh CC SRCDIR OUTDIR [NVCC]
# Builds everything the gpuenv tests read, at test time:
#   shims/   fake libnvidia-ml.so.1 and libcuda.so.1 (behaviour: GPUENV_SHIM_MODE);
#            shims/legacy/ the NVML one as an old driver (NVML_SHIM_LEGACY)
#   stubs/   the libcuda shim again, under a path named like the toolkit stub
#   roots/   small filesystem trees for --root: /proc/driver/nvidia/version,
#            /dev/nvidia*, CUDA libraries with chosen SONAMEs and versions,
#            /etc/ld.so.cache made by `ldconfig -r`
#   inspect/ objects with chosen NEEDED / RPATH / RUNPATH for --inspect
#   cache/   ld.so.cache files in the new, old and compat formats
#   nvcc/    CUDA objects for known -gencode lists (only when NVCC is given)
set -eu
CC=$1; SRC=$2; OUT=$3; NVCC=${4:-}
# ldconfig lives in /sbin, which a non-root PATH may lack
PATH=$PATH:/usr/sbin:/sbin; export PATH
rm -rf "$OUT"; mkdir -p "$OUT" "$OUT/seeds"
FAKE="$SRC/shims/fakelib.c"

# lib DIR FILE SONAME [cc flags...]: a fake shared library
. "$SRC/lib_once.sh"
lib() {
    d=$1; f=$2; so=$3; shift 3
    mkdir -p "$d"
    lib_once "$OUT/.built" "$FAKE" "$d/$f" "$so" "$@"
}
# ver DIR STEM SOVER FULLVER [cc flags]: lib<stem>.so.FULL + lib<stem>.so.SOVER link
ver() {
    d=$1; stem=$2; sov=$3; full=$4; shift 4
    lib "$d" "lib$stem.so.$full" "lib$stem.so.$sov" "$@"
    ln -sf "lib$stem.so.$full" "$d/lib$stem.so.$sov"
}

mkdir -p "$OUT/shims" "$OUT/stubs"
"$CC" -shared -fPIC -I"$SRC/../../src" -o "$OUT/shims/libnvidia-ml.so.1" "$SRC/shims/nvml_shim.c" -Wl,-soname,libnvidia-ml.so.1
mkdir -p "$OUT/shims/legacy" # an NVML before R510: no _v2 memory info, "throttle reasons"
"$CC" -shared -fPIC -I"$SRC/../../src" -DNVML_SHIM_LEGACY -o "$OUT/shims/legacy/libnvidia-ml.so.1" "$SRC/shims/nvml_shim.c" \
    -Wl,-soname,libnvidia-ml.so.1
"$CC" -shared -fPIC -o "$OUT/shims/libcuda.so.1" "$SRC/shims/cuda_shim.c" -Wl,-soname,libcuda.so.1
cp "$OUT/shims/libcuda.so.1" "$OUT/stubs/libcuda.so.1"

# ---------------------------------------------------------------- roots
# base ROOT DRIVER: a running system's skeleton with that kernel driver
base() {
    r=$OUT/roots/$1
    mkdir -p "$r/etc" "$r/proc/driver/nvidia" "$r/dev" "$r/usr/lib/x86_64-linux-gnu" "$r/lib"
    printf 'PRETTY_NAME="Fixture Linux 1"\n' > "$r/etc/os-release"
    printf '/usr/lib/x86_64-linux-gnu\n' > "$r/etc/ld.so.conf"
    if [ -n "$2" ]; then
        printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Sep 23 09:55:41 UTC 2025\nGCC version:  gcc version 13.3.0\n' "$2" \
            > "$r/proc/driver/nvidia/version"
    fi
    : > "$r/dev/nvidiactl"; : > "$r/dev/nvidia0"; : > "$r/dev/nvidia-uvm"
    printf 'nvidia_uvm 1961984 0 - Live 0x0000000000000000 (PO)\nnvidia 14381056 1 nvidia_uvm, Live 0x0 (PO)\n' > "$r/proc/modules"
    # the driver's user-space libraries of the same version
    if [ -n "$2" ]; then driverlibs "$r/usr/lib/x86_64-linux-gnu" "$2"; fi
}
# driverlibs DIR VERSION: libcuda.so.VERSION and libnvidia-ml.so.VERSION (+ .so.1 links)
driverlibs() {
    lib "$1" "libcuda.so.$2" libcuda.so.1 -DFAKE_PAD=1048576; ln -sf "libcuda.so.$2" "$1/libcuda.so.1"
    ln -sf libcuda.so.1 "$1/libcuda.so"
    lib "$1" "libnvidia-ml.so.$2" libnvidia-ml.so.1 -DFAKE_PAD=1048576
    ln -sf "libnvidia-ml.so.$2" "$1/libnvidia-ml.so.1"
}
L=usr/lib/x86_64-linux-gnu
# cuda13 ROOT [cudnn-cudart] [cublasLt-full]: CUDA 13 + cuDNN 9.14 libraries
cuda13() {
    d=$OUT/roots/$1/$L; cb=${2:-13000}; lt=${3:-13.1.0.3}
    ver "$d" cudart 13 13.0.96 -DFAKE_CUDART=13000
    ver "$d" cublas 13 13.1.0.3 -DFAKE_CUBLAS_MAJOR=13 -DFAKE_CUBLAS_MINOR=1 -DFAKE_CUBLAS_PATCH=0
    ver "$d" cublasLt 13 "$lt" -DFAKE_CUBLAS_MAJOR=13 -DFAKE_CUBLAS_MINOR=1 -DFAKE_CUBLAS_PATCH=0
    ver "$d" cudnn 9 9.14.0 -DFAKE_CUDNN=91400 -DFAKE_CUDNN_CUDART="$cb"
    ln -sf libcudnn.so.9 "$d/libcudnn.so"
    for s in graph ops cnn adv engines_precompiled engines_runtime_compiled heuristic; do
        ver "$d" "cudnn_$s" 9 9.14.0
    done
    ver "$d" nvrtc 13 13.0.88
}
cache() { # ldconfig -r chroots: needs root or a user namespace; skipped otherwise
    ldconfig -X -r "$OUT/roots/$1" 2>/dev/null ||
        unshare -r ldconfig -X -r "$OUT/roots/$1" 2>/dev/null || true
}

base good 580.95.05; cuda13 good; cache good
base nokmod ""
base nodev 580.95.05; rm -f "$OUT/roots/nodev/dev/"nvidia*
base nouvm 580.95.05; rm -f "$OUT/roots/nouvm/dev/nvidia-uvm" "$OUT/roots/nouvm/proc/modules"
base kver 580.65.06; cuda13 kver
base old 470.82.01; cuda13 old
base split 580.95.05; cuda13 split
ver "$OUT/roots/split/opt/fake" cudnn 9 9.1.0 -DFAKE_CUDNN=90100 -DFAKE_CUDNN_CUDART=13000
ver "$OUT/roots/split/opt/fake" cudnn_ops 9 9.1.0
base nounv 580.95.05; cuda13 nounv; rm -f "$OUT/roots/nounv/$L/libcudnn.so"
base cudnn12 580.95.05; cuda13 cudnn12 12080
base cudnn12old 470.82.01; cuda13 cudnn12old 12080
base cublasmix 580.95.05; cuda13 cublasmix 13000 13.0.0.19
base minor 580.65.06; cuda13 minor
rm -f "$OUT/roots/minor/$L/libcudart.so."*
ver "$OUT/roots/minor/$L" cudart 13 13.1.80 -DFAKE_CUDART=13010
base empty 580.95.05
# a library reachable only through the cache
base cacheonly 580.95.05
ver "$OUT/roots/cacheonly/opt/cudnn/lib" cudnn 9 9.14.0 -DFAKE_CUDNN=91400 -DFAKE_CUDNN_CUDART=13000
printf '/usr/lib/x86_64-linux-gnu\n/opt/cudnn/lib\n' > "$OUT/roots/cacheonly/etc/ld.so.conf"
cache cacheonly
# a pip wheel outside every search path
base wheel 580.95.05
ver "$OUT/roots/wheel/usr/local/lib/python3.12/site-packages/nvidia/cudnn/lib" cudnn 9 9.14.0 \
    -DFAKE_CUDNN=91400 -DFAKE_CUDNN_CUDART=13000
# a symlink loop (gpuenv_root_resolve: ELOOP)
mkdir -p "$OUT/roots/good/loop"; ln -s b "$OUT/roots/good/loop/a"; ln -s a "$OUT/roots/good/loop/b"
# /etc/ld.so.conf with comments, an include glob, several directories on a line
mkdir -p "$OUT/roots/conf/etc/ld.so.conf.d"
printf '# system\n/opt/first\ninclude /etc/ld.so.conf.d/*.conf\n/opt/last # trailing\n' > "$OUT/roots/conf/etc/ld.so.conf"
printf '/opt/a:/opt/b\n' > "$OUT/roots/conf/etc/ld.so.conf.d/a.conf"
printf '/opt/cuda/lib64/\n' > "$OUT/roots/conf/etc/ld.so.conf.d/cuda.conf"
printf '/opt/ignored\n' > "$OUT/roots/conf/etc/ld.so.conf.d/readme.txt"
# CUDA 11: the runtime's SONAME is libcudart.so.11.0
base cuda11 520.61.05
ver "$OUT/roots/cuda11/usr/local/cuda-11.8/lib64" cudart 11.0 11.8.89 -DFAKE_CUDART=11080
mkdir -p "$OUT/roots/cuda11/etc/ld.so.conf.d"
printf '/usr/local/cuda-11.8/lib64\n' > "$OUT/roots/cuda11/etc/ld.so.conf.d/cuda-11-8.conf"
printf 'include /etc/ld.so.conf.d/*.conf\n' > "$OUT/roots/cuda11/etc/ld.so.conf"
cache cuda11
# an image rootfs: no /proc at all
mkdir -p "$OUT/roots/image/etc" "$OUT/roots/image/$L"
printf 'PRETTY_NAME="Image Linux"\n' > "$OUT/roots/image/etc/os-release"
cuda13 image

# -------------------------------------------------------------- inspect
I=$OUT/inspect
lib "$I/chain/lib" libleaf.so libleaf.so
lib "$I/chain/lib" libmid.so libmid.so -L"$I/chain/lib" -lleaf
lib "$I/chain" app_rpath.so app_rpath.so -L"$I/chain/lib" -lmid \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
lib "$I/chain" app_runpath.so app_runpath.so -L"$I/chain/lib" -lmid \
    -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/lib'
# search order: P holds one libord.so, L another
lib "$I/order/P" libord.so libord.so
lib "$I/order/L" libord.so libord.so
lib "$I/order" app_ord_rpath.so app_ord_rpath.so -L"$I/order/P" -lord \
    -Wl,--disable-new-dtags -Wl,-rpath,"$I/order/P"
lib "$I/order" app_ord_runpath.so app_ord_runpath.so -L"$I/order/P" -lord \
    -Wl,--enable-new-dtags -Wl,-rpath,"$I/order/P"
# $ORIGIN/$PLATFORM expansion
lib "$I/tok/x86_64" libtok.so libtok.so
lib "$I/tok" app_tok.so app_tok.so -L"$I/tok/x86_64" -ltok \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/$PLATFORM'
# built against CUDA 11's cuBLASLt, which is not installed anywhere
lib "$I/cu11/fake" libcublasLt.so.11 libcublasLt.so.11
lib "$I/cu11" app_cu11.so app_cu11.so -L"$I/cu11/fake" -l:libcublasLt.so.11
rm -rf "$I/cu11/fake"

# symbol versions: libuses.so needs VER_2 of libver.so.1
mkdir -p "$I/ver"
printf 'int ver_one(void);\nint ver_two(void);\nint ver_one(void) { return 1; }\nint ver_two(void) { return 2; }\n' > "$I/ver/ver.c"
printf 'VER_1 { global: ver_one; local: *; };\nVER_2 { global: ver_two; } VER_1;\n' > "$I/ver/ver.map"
printf 'int ver_two(void);\nint uses(void);\nint uses(void) { return ver_two(); }\n' > "$I/ver/uses.c"
"$CC" -shared -fPIC -o "$I/ver/libver.so.1" "$I/ver/ver.c" -Wl,-soname,libver.so.1 -Wl,--version-script,"$I/ver/ver.map"
"$CC" -shared -fPIC -o "$I/ver/libuses.so" "$I/ver/uses.c" -Wl,-soname,libuses.so -L"$I/ver" -l:libver.so.1

# ---------------------------------------------------------------- caches
C=$OUT/cache; mkdir -p "$C"
printf '%s\n' "$I/chain/lib" "$I/order/L" > "$C/ld.so.conf"
ldconfig -X -C "$C/new.cache" -f "$C/ld.so.conf" -c new
ldconfig -X -C "$C/old.cache" -f "$C/ld.so.conf" -c old
ldconfig -X -C "$C/compat.cache" -f "$C/ld.so.conf" -c compat
ldconfig -p -C "$C/new.cache" | sed -n 's/^\t\([^ ]*\) (libc6,x86-64) => \(.*\)$/\1 \2/p' > "$C/new.expected"

# ----------------------------------------------------------------- nvcc
if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
    N=$OUT/nvcc; mkdir -p "$N"
    K="$SRC/shims/kernel.cu"
    "$NVCC" -c -Xcompiler -fPIC -o "$N/multi.o" "$K" \
        -gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90 \
        -gencode arch=compute_90,code=compute_90
    "$NVCC" -shared -Xcompiler -fPIC -o "$N/libk_sm80.so" "$K" -gencode arch=compute_80,code=sm_80
    "$NVCC" -shared -Xcompiler -fPIC -o "$N/libk_ptx80.so" "$K" -gencode arch=compute_80,code=compute_80
    "$NVCC" -shared -Xcompiler -fPIC -o "$N/libk_sm90.so" "$K" -gencode arch=compute_90,code=sm_90
    # a host library whose dependency carries sm_80-only code
    lib "$N" libapp_dep80.so libapp_dep80.so -L"$N" -lk_sm80 -Wl,-rpath,'$ORIGIN'
    # raw .nv_fatbin bytes: a seed for the fatbin fuzzer
    objcopy -O binary --only-section=.nv_fatbin "$N/multi.o" "$OUT/seeds/multi.fatbin" || true
    touch "$N/ok"
fi
echo "fixtures ready in $OUT"
