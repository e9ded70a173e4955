#!/usr/bin/env bash
# bench/gpu/stage.sh - prepares .device/ (git-ignored) for a run on the
# accelerator machine, which has the NVIDIA stack but none of our Debian
# libraries, no node and no ../shared: the offline bundle (lector, the CUDA
# module, the libraries, the models), the GPU test programs, the ONNX node
# test cases, a subset of ../shared/data and the PyTorch peer. The device
# tool carries at most 64 MiB per call: --icdar N / --sroie N size the data.
# Usage: bench/gpu/stage.sh [--icdar N] [--sroie N] [--asan DIR] [--wrk]   (then see bench/gpu/device.sh)
# --wrk: also stage wrk (Debian's, with its LuaJIT and OpenSSL) for device.sh's soak step
# --asan DIR: also stage DIR's lector and liblector-cuda.so, built with AddressSanitizer
# (LECTOR_SANITIZE leaves CUDA out, so: cmake -B DIR -DLECTOR_CUDA=ON
#  "-DCMAKE_C_FLAGS=-fsanitize=address -fno-omit-frame-pointer" and -fsanitize=address in
#  CMAKE_EXE_LINKER_FLAGS and CMAKE_MODULE_LINKER_FLAGS; cmake --build DIR -- lector lector_cuda),
# with libasan, for device.sh's asan step.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
icdar=120 sroie=40 asan= wrk=
while [ $# -gt 0 ]; do
  case "$1" in
    --icdar) icdar=$2; shift ;;
    --sroie) sroie=$2; shift ;;
    --asan) asan=$2; shift ;;
    --wrk) wrk=1 ;;
    *) echo "stage: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
shared=$(cd "$top/../shared" && pwd)
dev=$top/.device
rm -rf "$dev"; mkdir -p "$dev/bin" "$dev/data"
"$top/scripts/bundle" --out "$dev" >/dev/null
cmake --build "$top/build" --target test_backend_ops test_parity test_cuda_engine test_shapes test_width_masks >/dev/null
cp "$top/build/test_backend_ops" "$top/build/test_parity" "$top/build/test_cuda_engine" "$top/build/test_shapes" \
   "$top/build/test_width_masks" "$dev/bin/"
# ONNX node cases listed in tests/node/cases.txt (Debian's libonnx-testdata)
node=/usr/include/onnx/backend/test/data/node
awk '/^test_/{print $1}' "$top/tests/node/cases.txt" | tar -C "$node" -cJf "$dev/node.tar.xz" -T -
cp "$top/tests/node/cases.txt" "$top/tests/backend_ops/patterns.txt" "$dev/"
# data: the parity images, and the first N images of ICDAR2015 / SROIE with their gt
d=$dev/data
for s in paddleocr_doc_imgs tesseract_test rapidocr_tests; do cp -r "$shared/data/$s" "$d/"; done
mkdir -p "$d/icdar2015_test/ch4_test_images" "$d/sroie_subset/img"
cp "$shared/data/icdar2015_test/gt.tsv" "$d/icdar2015_test/"
cp "$shared/data/sroie_subset/gt.tsv" "$d/sroie_subset/"
ls "$shared/data/icdar2015_test/ch4_test_images" | sort -t_ -k2 -n | sed -n "1,${icdar}p" |
  while read -r f; do cp "$shared/data/icdar2015_test/ch4_test_images/$f" "$d/icdar2015_test/ch4_test_images/"; done
cp "$shared/data/icdar2015_test/ch4_test_images/img_20.jpg" "$d/icdar2015_test/ch4_test_images/"
ls "$shared/data/sroie_subset/img" | sort | sed -n "1,${sroie}p" |
  while read -r f; do cp "$shared/data/sroie_subset/img/$f" "$d/sroie_subset/img/"; done
cp "$shared/peers/torch_onnx.py" "$dev/"
if [ -n "$asan" ]; then
  t=$(mktemp -d); mkdir "$t/asan"
  cp "$asan/lector" "$asan/liblector-cuda.so" "$(gcc -print-file-name=libasan.so.8)" "$t/asan/"
  strip --strip-debug "$t/asan/lector" "$t/asan/liblector-cuda.so"
  tar -C "$t" -cJf "$dev/asan.tar.xz" asan; rm -rf "$t"
fi
if [ -n "$wrk" ]; then
  w=$(command -v wrk) || { echo "stage: wrk not found (apt-get install wrk)" >&2; exit 1; }
  mkdir -p "$dev/wrk"; cp "$w" "$dev/wrk/"
  ldd "$w" | awk '/libluajit|libssl|libcrypto/ {print $3}' | xargs -I{} cp -L {} "$dev/wrk/"
fi
du -sh "$dev"
