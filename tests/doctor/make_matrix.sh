#!/bin/sh
# make_matrix.sh CC SRCDIR GPUENV_SRCDIR OUTDIR ORACLE_HELPER
# Builds the broken-environment matrix (tests/doctor/matrix.tsv): one
# filesystem tree per case under OUTDIR/t/<id>, each a copy of one "host"
# (Ubuntu 24.04, driver 580.95.05, CUDA 13.0 from NVIDIA's packages, cuDNN
# 9.14 in /usr/lib/x86_64-linux-gnu, merged /usr, ld.so.cache made by
# `ldconfig -r`) broken the way the case's public thread describes.
# Every tree holds the oracle helper with the host's ld.so and libc, so
# that glibc's own loader can be run in it (tests/doctor/matrix.c).
# The libraries are stand-ins (tests/gpuenv/shims/fakelib.c) with the
# SONAMEs, NEEDED entries, versions and sizes of the real ones, compiled
# once into OUTDIR/store/<group>/<SONAME> and copied into the trees.
set -eu
CC=$1; SRC=$2; GSRC=$3; OUT=$4; HELPER=$5
PATH=$PATH:/usr/sbin:/sbin; export PATH
FAKE=$GSRC/shims/fakelib.c
rm -rf "$OUT"; mkdir -p "$OUT/store" "$OUT/t"
ST=$OUT/store
D=usr/lib/x86_64-linux-gnu
T=usr/local/cuda-13.0/targets/x86_64-linux/lib
VENV=opt/venv/lib/python3.12/site-packages
LFS='version https://git-lfs.github.com/spec/v1
oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393
size 1047126728'

# ------------------------------------------------------------ the store
# lib GROUP SONAME [cc flags]: a stand-in library store/GROUP/SONAME
lib() {
    mkdir -p "$ST/$1"
    g=$1; so=$2; shift 2
    "$CC" -shared -fPIC -o "$ST/$g/$so" "$FAKE" -Wl,-soname,"$so" -Wl,--no-as-needed "$@"
}
blas() { echo "-DFAKE_CUBLAS_MAJOR=$1 -DFAKE_CUBLAS_MINOR=$2 -DFAKE_CUBLAS_PATCH=$3"; }
PAD=-DFAKE_PAD=1048576 # the driver's libraries are tens of MiB, the stubs a few hundred KiB
# NVIDIA's libraries find their siblings through DT_RUNPATH $ORIGIN (cuBLAS,
# cuBLASLt, cuDNN's shim and split libraries; libcudnn_ops needs _graph)
RP='-Wl,--enable-new-dtags -Wl,-rpath,$ORIGIN'
lib drv libcuda.so.1 $PAD
lib drv libnvidia-ml.so.1 $PAD
lib stub libcuda.so.1
lib stub libnvidia-ml.so.1
lib c13 libcudart.so.13 -DFAKE_CUDART=13000
# cuBLASLt exports its symbols under a version named after its SONAME; a
# cuBLAS of one release calls what its own cuBLASLt release added
printf 'libcublasLt.so.13 { global: *; };\n' > "$ST/lt13.map"
lib c13 libcublasLt.so.13 $(blas 13 1 0) $RP -DFAKE_LT_NEW -Wl,--version-script,"$ST/lt13.map"
lib c13 libcublas.so.13 $(blas 13 1 0) -L"$ST/c13" -l:libcublasLt.so.13 $RP -DFAKE_USES_LT_NEW
lib c13 libnvrtc.so.13
lib c13old libcublasLt.so.13 $(blas 13 0 0) $RP -Wl,--version-script,"$ST/lt13.map"
lib c12 libcudart.so.12 -DFAKE_CUDART=12080
lib c12 libcublasLt.so.12 $(blas 12 8 4) $RP
lib c12 libcublas.so.12 $(blas 12 8 4) -L"$ST/c12" -l:libcublasLt.so.12 $RP
lib c12 libnvrtc.so.12
lib c122 libcudart.so.12 -DFAKE_CUDART=12020
lib c122 libcublasLt.so.12 $(blas 12 2 5) $RP
lib c122 libcublas.so.12 $(blas 12 2 5) -L"$ST/c122" -l:libcublasLt.so.12 $RP
lib c11 libcudart.so.11.0 -DFAKE_CUDART=11080
lib c11 libcublasLt.so.11 $(blas 11 11 3) $RP
lib c11 libcublas.so.11 $(blas 11 11 3) -L"$ST/c11" -l:libcublasLt.so.11 $RP
lib dnn13 libcudnn.so.9 -DFAKE_CUDNN=91400 -DFAKE_CUDNN_CUDART=13000 $RP
lib dnn12 libcudnn.so.9 -DFAKE_CUDNN=91400 -DFAKE_CUDNN_CUDART=12080 $RP
lib dnn91 libcudnn.so.9 -DFAKE_CUDNN=90100 -DFAKE_CUDNN_CUDART=12040 $RP
SPLIT9="graph ops cnn adv engines_precompiled engines_runtime_compiled heuristic"
lib dnn9s libcudnn_graph.so.9 $RP
for s in $SPLIT9; do [ $s = graph ] || lib dnn9s "libcudnn_$s.so.9" -L"$ST/dnn9s" -l:libcudnn_graph.so.9 $RP; done
lib dnn8 libcudnn.so.8 -DFAKE_CUDNN=8907 -DFAKE_CUDNN_CUDART=12020 $RP
SPLIT8="ops_infer ops_train cnn_infer cnn_train adv_infer adv_train"
for s in $SPLIT8; do lib dnn8 "libcudnn_$s.so.8" $RP; done

# the host's loader and libc, found the way the helper itself finds them
LDSO=$(readlink -f /lib64/ld-linux-x86-64.so.2)
LIBC=$(ldd "$HELPER" | awk '$1 == "libc.so.6" { print $3 }')
LIBC=$(readlink -f "$LIBC")

# ------------------------------------------------------------ helpers
# put TREE DIR GROUP SONAME [FILE]: copy a store library to TREE/DIR/FILE
# (default: the SONAME) and link the SONAME to it
put() {
    t=$OUT/t/$1; d=$2; g=$3; so=$4; f=${5:-$4}
    mkdir -p "$t/$d"
    rm -f "$t/$d/$f"; cp "$ST/$g/$so" "$t/$d/$f"
    if [ "$f" != "$so" ]; then rm -f "$t/$d/$so"; ln -s "$f" "$t/$d/$so"; fi
}
# lnk TREE DIR NAME TARGET
lnk() { mkdir -p "$OUT/t/$1/$2"; rm -f "$OUT/t/$1/$2/$3"; ln -s "$4" "$OUT/t/$1/$2/$3"; }
# text TREE PATH CONTENT: a file with that content (replacing a link or copy)
text() { mkdir -p "$(dirname "$OUT/t/$1/$2")"; rm -f "$OUT/t/$1/$2"; printf '%s\n' "$3" > "$OUT/t/$1/$2"; }
del() { t=$1; shift; for p in "$@"; do rm -rf "${OUT:?}/t/$t/"$p; done; }
# cache ID: ldconfig as the system runs it (it also makes the SONAME links)
cache() {
    ldconfig -r "$OUT/t/$1" 2>/dev/null || unshare -r ldconfig -r "$OUT/t/$1" 2>/dev/null ||
        { echo "make_matrix: ldconfig -r failed for $1" >&2; exit 1; }
}
# driver TREE VERSION: the kernel module and the user-space libraries of a driver
driver() {
    t=$OUT/t/$1
    mkdir -p "$t/proc/driver/nvidia/gpus/0000:18:00.0"
    text "$1" proc/driver/nvidia/version "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $2  Tue Sep 23 09:55:41 UTC 2025
GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)"
    userspace "$1" "$2"
}
# userspace TREE VERSION: only the driver's user-space libraries
userspace() {
    t=$OUT/t/$1
    rm -f "$t/$D"/libcuda.so* "$t/$D"/libnvidia-ml.so*
    put "$1" $D drv libcuda.so.1 "libcuda.so.$2"; lnk "$1" $D libcuda.so libcuda.so.1
    put "$1" $D drv libnvidia-ml.so.1 "libnvidia-ml.so.$2"
}
# a pip wheel's dist-info directory (what pip leaves next to the package)
distinfo() { mkdir -p "$OUT/t/$1/$VENV/$2.dist-info"; printf 'Name: %s\n' "$2" > "$OUT/t/$1/$VENV/$2.dist-info/METADATA"; }
# cudnn9 TREE DIR GROUP VERSION: the cuDNN 9 shim and its split libraries
cudnn9() {
    put "$1" "$2" "$3" libcudnn.so.9 "libcudnn.so.$4"
    for s in $SPLIT9; do put "$1" "$2" dnn9s "libcudnn_$s.so.9" "libcudnn_$s.so.$4"; done
}
# prog TREE PATH SONAME RUNPATH NEEDED...: an object linked against store
# libraries (each NEEDED as GROUP/SONAME), with that DT_RUNPATH ("-": none)
prog() {
    t=$OUT/t/$1; p=$2; so=$3; rp=$4; shift 4
    mkdir -p "$(dirname "$t/$p")"
    set -- "$@"; args=""
    for n in "$@"; do args="$args -L$ST/${n%%/*} -l:${n#*/}"; done
    if [ "$rp" = - ]; then
        "$CC" -shared -fPIC -o "$t/$p" "$FAKE" -Wl,-soname,"$so" -Wl,--no-as-needed $args
    else
        "$CC" -shared -fPIC -o "$t/$p" "$FAKE" -Wl,-soname,"$so" -Wl,--no-as-needed $args \
            -Wl,--enable-new-dtags -Wl,-rpath,"$rp"
    fi
}
# patch TREE FILE OFFSET OCTAL-BYTE: one byte of an ELF header
patch() { printf "\\$4" | dd of="$OUT/t/$1/$2" bs=1 seek="$3" conv=notrunc 2>/dev/null; }

# ------------------------------------------------------------ the host
H=host
mkdir -p "$OUT/t/$H/$D" "$OUT/t/$H/usr/lib64" "$OUT/t/$H/etc/ld.so.conf.d" "$OUT/t/$H/oracle" \
    "$OUT/t/$H/dev" "$OUT/t/$H/usr/local/lib" "$OUT/t/$H/tmp"
ln -s usr/lib "$OUT/t/$H/lib"; ln -s usr/lib64 "$OUT/t/$H/lib64"
cp "$LDSO" "$OUT/t/$H/$D/ld-linux-x86-64.so.2"
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$OUT/t/$H/usr/lib64/ld-linux-x86-64.so.2"
cp "$LIBC" "$OUT/t/$H/$D/libc.so.6"
cp "$HELPER" "$OUT/t/$H/oracle/oracle_dlopen"
text $H etc/os-release 'PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
ID=ubuntu
ID_LIKE=debian'
text $H etc/ld.so.conf 'include /etc/ld.so.conf.d/*.conf'
text $H etc/ld.so.conf.d/libc.conf '/usr/local/lib'
text $H etc/ld.so.conf.d/x86_64-linux-gnu.conf '/usr/local/lib/x86_64-linux-gnu
/lib/x86_64-linux-gnu
/usr/lib/x86_64-linux-gnu'
text $H etc/ld.so.conf.d/988_cuda-13.conf '/usr/local/cuda-13.0/targets/x86_64-linux/lib'
text $H proc/modules 'nvidia_uvm 2076672 0 - Live 0x0000000000000000 (PO)
nvidia_drm 135168 0 - Live 0x0000000000000000 (PO)
nvidia_modeset 1830912 1 nvidia_drm, Live 0x0000000000000000 (PO)
nvidia 14381056 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)'
for n in nvidiactl nvidia0 nvidia-uvm nvidia-uvm-tools; do : > "$OUT/t/$H/dev/$n"; done
driver $H 580.95.05
cudnn9 $H $D dnn13 9.14.0; lnk $H $D libcudnn.so libcudnn.so.9
put $H $T c13 libcudart.so.13 libcudart.so.13.0.96; lnk $H $T libcudart.so libcudart.so.13
put $H $T c13 libcublas.so.13 libcublas.so.13.1.0.3; lnk $H $T libcublas.so libcublas.so.13
put $H $T c13 libcublasLt.so.13 libcublasLt.so.13.1.0.3; lnk $H $T libcublasLt.so libcublasLt.so.13
put $H $T c13 libnvrtc.so.13 libnvrtc.so.13.0.88; lnk $H $T libnvrtc.so libnvrtc.so.13
mkdir -p "$OUT/t/$H/$T/stubs"
cp "$ST/stub/libcuda.so.1" "$OUT/t/$H/$T/stubs/libcuda.so"
cp "$ST/stub/libnvidia-ml.so.1" "$OUT/t/$H/$T/stubs/libnvidia-ml.so"
ln -s targets/x86_64-linux/lib "$OUT/t/$H/usr/local/cuda-13.0/lib64"
ln -s cuda-13.0 "$OUT/t/$H/usr/local/cuda"
cache $H

# mk ID: a copy of the host (hard links; every helper above replaces a file
# instead of writing into it, so the copies stay apart)
mk() { cp -al "$OUT/t/$H" "$OUT/t/$1"; }
# own ID PATH: give the tree its own copy of a file before changing it in place
own() { f=$OUT/t/$1/$2; cp "$f" "$f.own"; mv "$f.own" "$f"; }
STUBS=/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs

# ------------------------------------------------------------ the cases
mk ready

mk container-no-gpus; : > "$OUT/t/container-no-gpus/.dockerenv"
del container-no-gpus "dev/nvidia*" "$D/libcuda.so*" "$D/libnvidia-ml.so*"; cache container-no-gpus

mk stub-in-cache; text stub-in-cache etc/ld.so.conf.d/000_cuda-stubs.conf "$STUBS"; cache stub-in-cache

mk stub-preload

mk stub-llp

mk compat-older; put compat-older usr/local/cuda-13.0/compat drv libcuda.so.1 libcuda.so.575.57.08

mk compat-geforce; driver compat-geforce 535.54.03
put compat-geforce usr/local/cuda-13.0/compat drv libcuda.so.1 libcuda.so.580.95.05
text compat-geforce etc/ld.so.conf.d/000_cuda-compat.conf /usr/local/cuda-13.0/compat; cache compat-geforce

mk upgraded-no-reboot
text upgraded-no-reboot proc/driver/nvidia/version "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:15 UTC 2025
GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)"

mk cudnn-partial-llp
put cudnn-partial-llp opt/cudnn-9.1/lib dnn91 libcudnn.so.9 libcudnn.so.9.1.0
for s in graph ops; do put cudnn-partial-llp opt/cudnn-9.1/lib dnn9s "libcudnn_$s.so.9" "libcudnn_$s.so.9.1.0"; done

mk lfs-pointer; text lfs-pointer opt/models/lib/libcudnn.so.9 "$LFS"

# cuDNN unpacked in /opt/cudnn/lib, its real file replaced by a link back
mk symlink-loop; del symlink-loop "$D/libcudnn*"; cache symlink-loop
cudnn9 symlink-loop opt/cudnn/lib dnn13 9.14.0
lnk symlink-loop opt/cudnn/lib libcudnn.so.9 libcudnn.so.9.14.0
lnk symlink-loop opt/cudnn/lib libcudnn.so.9.14.0 libcudnn.so.9

mk unreadable-cudnn; own unreadable-cudnn "$D/libcudnn.so.9.14.0"; chmod 600 "$OUT/t/unreadable-cudnn/$D/libcudnn.so.9.14.0"

mk cuda-lib32; del cuda-lib32 etc/ld.so.conf.d/988_cuda-13.conf; cache cuda-lib32
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
    put cuda-lib32 usr/local/cuda-13.0/lib c13 $so; own cuda-lib32 usr/local/cuda-13.0/lib/$so
    patch cuda-lib32 usr/local/cuda-13.0/lib/$so 4 001
done

mk ldconfig-not-run; del ldconfig-not-run "$D/libcudnn*"; cache ldconfig-not-run
cudnn9 ldconfig-not-run usr/local/cudnn-9.14/lib dnn13 9.14.0
text ldconfig-not-run etc/ld.so.conf.d/cudnn.conf /usr/local/cudnn-9.14/lib

mk torch-llp-shadow
cudnn9 torch-llp-shadow "$VENV/torch/lib" dnn12 9.14.0
prog torch-llp-shadow "$VENV/torch/lib/libtorch_cuda.so" libtorch_cuda.so '$ORIGIN' dnn12/libcudnn.so.9 \
    c12/libcublas.so.12 c12/libcublasLt.so.12 c12/libcudart.so.12
put torch-llp-shadow "$VENV/torch/lib" c12 libcublas.so.12; put torch-llp-shadow "$VENV/torch/lib" c12 libcublasLt.so.12
put torch-llp-shadow "$VENV/torch/lib" c12 libcudart.so.12
cudnn9 torch-llp-shadow opt/cudnn-9.1/lib dnn91 9.1.0

mk pascal-cuda13

mk cvd-one
mk cvd-empty

mk nouveau; del nouveau proc/driver/nvidia "dev/nvidia*"
text nouveau proc/modules 'nouveau 2838528 1 - Live 0x0000000000000000
drm_ttm_helper 16384 1 nouveau, Live 0x0000000000000000
ttm 110592 2 nouveau,drm_ttm_helper, Live 0x0000000000000000'

mk kmod-not-loaded; del kmod-not-loaded proc/driver/nvidia "dev/nvidia*"
text kmod-not-loaded proc/modules 'snd_hda_intel 61440 0 - Live 0x0000000000000000'

mk uvm-missing; del uvm-missing "dev/nvidia-uvm*"
text uvm-missing proc/modules 'nvidia_drm 135168 0 - Live 0x0000000000000000 (PO)
nvidia 14381056 1 nvidia_drm, Live 0x0000000000000000 (PO)'

# WSL2: no kernel module; Windows' driver comes through /dev/dxg and /usr/lib/wsl/lib
wsl() {
    mk "$1"; del "$1" proc/driver/nvidia "dev/nvidia*" "$D/libcuda.so*" "$D/libnvidia-ml.so*"
    : > "$OUT/t/$1/dev/dxg"
    text "$1" proc/modules ''
    for f in libcuda.so libcuda.so.1 libcuda.so.1.1; do
        mkdir -p "$OUT/t/$1/usr/lib/wsl/lib"; cp "$ST/drv/libcuda.so.1" "$OUT/t/$1/usr/lib/wsl/lib/$f"
    done
    cp "$ST/drv/libnvidia-ml.so.1" "$OUT/t/$1/usr/lib/wsl/lib/libnvidia-ml.so.1"
    text "$1" etc/ld.so.conf.d/ld.wsl.conf /usr/lib/wsl/lib
}
wsl wsl-libcuda-unversioned; cache wsl-libcuda-unversioned
wsl wsl-linux-driver; userspace wsl-linux-driver 535.183.01; cache wsl-linux-driver

mk driver535-cuda13; driver driver535-cuda13 535.54.03

mk r470-torch-cu12; driver r470-torch-cu12 470.82.01
del r470-torch-cu12 usr/local/cuda-13.0 usr/local/cuda etc/ld.so.conf.d/988_cuda-13.conf "$D/libcudnn*"
for p in cuda_runtime:libcudart.so.12 cublas:libcublas.so.12 cublas:libcublasLt.so.12; do
    put r470-torch-cu12 "$VENV/nvidia/${p%%:*}/lib" c12 "${p#*:}"
done
cudnn9 r470-torch-cu12 "$VENV/nvidia/cudnn/lib" dnn12 9.10.2
distinfo r470-torch-cu12 nvidia_cudnn_cu12-9.10.2.21
prog r470-torch-cu12 "$VENV/torch/lib/libtorch_cuda.so" libtorch_cuda.so \
    '$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cudnn/lib' \
    c12/libcudart.so.12 c12/libcublas.so.12 dnn12/libcudnn.so.9
cache r470-torch-cu12

mk cudnn-unversioned; del cudnn-unversioned "$D/libcudnn.so"; cache cudnn-unversioned

mk libcuda-unversioned; : > "$OUT/t/libcuda-unversioned/.dockerenv"
del libcuda-unversioned "$D/libcuda.so"; cache libcuda-unversioned

mk ort-cu11
prog ort-cu11 "$VENV/onnxruntime/capi/libonnxruntime_providers_cuda.so" libonnxruntime_providers_cuda.so '$ORIGIN' \
    c11/libcublasLt.so.11 c11/libcublas.so.11 c11/libcudart.so.11.0 dnn8/libcudnn.so.8

mk ort-cudnn9; del ort-cudnn9 "$D/libcudnn*" usr/local/cuda-13.0 usr/local/cuda etc/ld.so.conf.d/988_cuda-13.conf
C12=usr/local/cuda-12.8/targets/x86_64-linux/lib
put ort-cudnn9 $C12 c12 libcudart.so.12 libcudart.so.12.8.90
put ort-cudnn9 $C12 c12 libcublas.so.12 libcublas.so.12.8.4.1
put ort-cudnn9 $C12 c12 libcublasLt.so.12 libcublasLt.so.12.8.4.1
text ort-cudnn9 etc/ld.so.conf.d/988_cuda-12.conf /usr/local/cuda-12.8/targets/x86_64-linux/lib
put ort-cudnn9 $D dnn8 libcudnn.so.8 libcudnn.so.8.9.7
for s in $SPLIT8; do put ort-cudnn9 $D dnn8 "libcudnn_$s.so.8" "libcudnn_$s.so.8.9.7"; done
prog ort-cudnn9 "$VENV/onnxruntime/capi/libonnxruntime_providers_cuda.so" libonnxruntime_providers_cuda.so '$ORIGIN' \
    c12/libcublasLt.so.12 c12/libcublas.so.12 c12/libcudart.so.12 dnn12/libcudnn.so.9
cache ort-cudnn9

mk ort-cublaslt12
prog ort-cublaslt12 "$VENV/onnxruntime/capi/libonnxruntime_providers_cuda.so" libonnxruntime_providers_cuda.so \
    '$ORIGIN' c12/libcublasLt.so.12 c12/libcublas.so.12 c12/libcudart.so.12 dnn13/libcudnn.so.9

mk cublas-mixed-llp; put cublas-mixed-llp opt/cuda-13.0.0/lib64 c13old libcublasLt.so.13 libcublasLt.so.13.0.0.19

mk fabric-manager
mk devices-busy
mk gpu-lost

mk cudnn13-driver535; driver cudnn13-driver535 535.54.03
del cudnn13-driver535 usr/local/cuda-13.0 usr/local/cuda etc/ld.so.conf.d/988_cuda-13.conf
C122=usr/local/cuda-12.2/targets/x86_64-linux/lib
put cudnn13-driver535 $C122 c122 libcudart.so.12 libcudart.so.12.2.140
put cudnn13-driver535 $C122 c122 libcublas.so.12 libcublas.so.12.2.5.6
put cudnn13-driver535 $C122 c122 libcublasLt.so.12 libcublasLt.so.12.2.5.6
text cudnn13-driver535 etc/ld.so.conf.d/988_cuda-12.conf /usr/local/cuda-12.2/targets/x86_64-linux/lib
cache cudnn13-driver535

# the runfile installer writes no /etc/ld.so.conf.d entry
mk cuda-not-on-path; del cuda-not-on-path etc/ld.so.conf.d/988_cuda-13.conf; cache cuda-not-on-path

mk aarch64-cudnn; del aarch64-cudnn "$D/libcudnn*"; cache aarch64-cudnn
cudnn9 aarch64-cudnn opt/cudnn/lib dnn13 9.14.0
for f in "$OUT/t/aarch64-cudnn/opt/cudnn/lib/"*.so.9.14.0; do
    b=$(basename "$f"); patch aarch64-cudnn "opt/cudnn/lib/$b" 18 267; patch aarch64-cudnn "opt/cudnn/lib/$b" 19 000
done

mk truncated-cublaslt; mkdir -p "$OUT/t/truncated-cublaslt/opt/cublas/lib"
head -c 40 "$ST/c13/libcublasLt.so.13" > "$OUT/t/truncated-cublaslt/opt/cublas/lib/libcublasLt.so.13"

mk libcuda-missing; del libcuda-missing "$D/libcuda.so*"; cache libcuda-missing

# the container runtime mounts the driver's versioned files, and its
# ldconfig hook that makes the SONAME links and the cache entries fails
mk container-no-links; : > "$OUT/t/container-no-links/.dockerenv"
del container-no-links "$D/libcuda.so*" "$D/libnvidia-ml.so*"; cache container-no-links
cp "$ST/drv/libcuda.so.1" "$OUT/t/container-no-links/$D/libcuda.so.580.95.05"
cp "$ST/drv/libnvidia-ml.so.1" "$OUT/t/container-no-links/$D/libnvidia-ml.so.580.95.05"

mk driver-not-configured; del driver-not-configured "$D/libcuda.so*" "$D/libnvidia-ml.so*"
put driver-not-configured usr/lib64/nvidia drv libcuda.so.1 libcuda.so.580.95.05
put driver-not-configured usr/lib64/nvidia drv libnvidia-ml.so.1 libnvidia-ml.so.580.95.05
cache driver-not-configured

mk cudnn-ops-missing; del cudnn-ops-missing "$D/libcudnn_ops*"; cache cudnn-ops-missing

mk cudnn8-split-missing
put cudnn8-split-missing "$VENV/nvidia/cudnn/lib" dnn8 libcudnn.so.8
put cudnn8-split-missing "$VENV/nvidia/cudnn/lib" dnn8 libcudnn_ops_train.so.8
distinfo cudnn8-split-missing nvidia_cudnn_cu12-8.9.7.29

mk no-gpu-nvml

mk ldcache-missing; del ldcache-missing etc/ld.so.cache

mk cuda11-runtime-missing
prog cuda11-runtime-missing "$VENV/tensorflow/libtensorflow_framework.so.2" libtensorflow_framework.so.2 '$ORIGIN' \
    c11/libcudart.so.11.0

mk lector-cudnn8-only; del lector-cudnn8-only "$D/libcudnn*"
put lector-cudnn8-only $D dnn8 libcudnn.so.8 libcudnn.so.8.9.7
for s in $SPLIT8; do put lector-cudnn8-only $D dnn8 "libcudnn_$s.so.8" "libcudnn_$s.so.8.9.7"; done
cache lector-cudnn8-only

# copied without its links (cp without -P, a zip): the real file and the
# dev link, no SONAME link, and the cache made before
mk cublas-missing-lt; del cublas-missing-lt "$T/libcublasLt*"; cache cublas-missing-lt
cp "$ST/c13/libcublasLt.so.13" "$OUT/t/cublas-missing-lt/$T/libcublasLt.so.13.1.0.3"
lnk cublas-missing-lt $T libcublasLt.so libcublasLt.so.13.1.0.3

echo "matrix trees ready in $OUT/t"
