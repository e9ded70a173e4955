#!/bin/sh
# make_fake_cuda.sh CC OUT LECTOR - a CUDA 13 toolkit and cuDNN 9 made of
# tiny stand-ins, and a base bundle to put them over, for test_cuda_bundle.sh:
#   OUT/cuda/lib64/      libcublasLt.so.13, libcublas.so.13 (NEEDED libcublasLt, RUNPATH
#                        $ORIGIN), libnvrtc.so.13, libnvrtc-builtins.so.13.0, libcudart.so.13
#   OUT/cuda/dist-info/  nvidia_cublas-13.1.0.3 and nvidia_cuda_nvrtc-13.0.88 dist-info
#                        directories with RECORD (name, sha256) and a licence, as a
#                        toolkit assembled from pip wheels has them
#   OUT/cudnn/lib/       cuDNN 9.14.0: libcudnn.so.9 and its sub-libraries with the
#                        real DT_NEEDED graph (ops and cnn need graph, ...; libz.so.1)
#   OUT/cudnn/LICENSE    its licence (a tarball install's)
#   OUT/base/lector-0.1.0-linux-x86_64/  bin/lector (LECTOR), lib/liblector-cuda.so (a
#                        stand-in with the real module's DT_NEEDED: libcublas.so.13,
#                        libcudnn.so.9), lib/libz.so.1 (the base bundle's)
# Every library is a real x86-64 ELF shared object with the SONAME its name
# says, so that glibc's loader can load them.
set -eu
CC=$1 OUT=$2 LECTOR=$3
rm -rf "$OUT"
mkdir -p "$OUT/cuda/lib64" "$OUT/cudnn/lib" "$OUT/base/lector-0.1.0-linux-x86_64/bin" \
         "$OUT/base/lector-0.1.0-linux-x86_64/lib"
src=$OUT/stub.c
echo 'int lector_fake_cuda_stub(void); int lector_fake_cuda_stub(void) { return 42; }' >"$src"
# so DIR FILE SONAME [NEEDED...]: a stub shared object (RUNPATH $ORIGIN when it has needs)
so() {
  d=$1 f=$2 sn=$3; shift 3
  needs=
  for n in "$@"; do needs="$needs -l:$n"; done
  rp=
  [ $# -eq 0 ] || rp="-Wl,--enable-new-dtags,-rpath,\$ORIGIN -L$OUT/cuda/lib64 -L$OUT/cudnn/lib -L$B/lib"
  # shellcheck disable=SC2086
  "$CC" -shared -fPIC -o "$d/$f" "$src" -Wl,-soname,"$sn" -Wl,--no-as-needed $rp $needs
}
B=$OUT/base/lector-0.1.0-linux-x86_64
so "$B/lib" libz.so.1 libz.so.1
cp "$LECTOR" "$B/bin/lector"
C=$OUT/cuda/lib64
so "$C" libcublasLt.so.13 libcublasLt.so.13
so "$C" libcublas.so.13 libcublas.so.13 libcublasLt.so.13
so "$C" libnvrtc-builtins.so.13.0 libnvrtc-builtins.so.13.0
so "$C" libnvrtc.so.13 libnvrtc.so.13
so "$C" libcudart.so.13 libcudart.so.13
for n in libcublasLt.so.13 libcublas.so.13 libnvrtc.so.13 libnvrtc-builtins.so.13.0; do
  ln -s "$n" "$C/${n%%.so*}.so"
done
D=$OUT/cudnn/lib
so "$D" libcudnn_graph.so.9.14.0 libcudnn_graph.so.9 libz.so.1
ln -s libcudnn_graph.so.9.14.0 "$D/libcudnn_graph.so.9"
for s in ops engines_precompiled engines_runtime_compiled heuristic; do
  so "$D" "libcudnn_$s.so.9.14.0" "libcudnn_$s.so.9" libcudnn_graph.so.9 libz.so.1
  ln -s "libcudnn_$s.so.9.14.0" "$D/libcudnn_$s.so.9"
done
for s in cnn adv; do
  so "$D" "libcudnn_$s.so.9.14.0" "libcudnn_$s.so.9" libcudnn_ops.so.9 libcudnn_graph.so.9 libz.so.1
  ln -s "libcudnn_$s.so.9.14.0" "$D/libcudnn_$s.so.9"
done
so "$D" libcudnn.so.9.14.0 libcudnn.so.9
ln -s libcudnn.so.9.14.0 "$D/libcudnn.so.9"
printf 'NVIDIA Software License Agreement (cuDNN stand-in for tests)\n' >"$OUT/cudnn/LICENSE"
so "$B/lib" liblector-cuda.so liblector-cuda.so libcublas.so.13 libcudnn.so.9
# dist-info directories whose RECORD lists the files with their sha256
record() { # PKG VERSION FILE...
  di=$OUT/cuda/dist-info/$1-$2.dist-info; pkg=$1 v=$2; shift 2
  mkdir -p "$di/licenses"
  printf 'LICENSE AGREEMENT FOR NVIDIA SOFTWARE DEVELOPMENT KITS (%s stand-in for tests)\n' "$pkg" \
    >"$di/licenses/License.txt"
  for f in "$@"; do
    h=$(python3 -c 'import base64,hashlib,sys; print(base64.urlsafe_b64encode(hashlib.sha256(open(sys.argv[1],"rb").read()).digest()).rstrip(b"=").decode())' "$C/$f")
    printf 'nvidia/cu13/lib/%s,sha256=%s,%s\n' "$f" "$h" "$(stat -c %s "$C/$f")"
  done >"$di/RECORD"
}
record nvidia_cublas 13.1.0.3 libcublasLt.so.13 libcublas.so.13
record nvidia_cuda_nvrtc 13.0.88 libnvrtc.so.13 libnvrtc-builtins.so.13.0
rm -f "$src"
