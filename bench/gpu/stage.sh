#!/usr/bin/env bash
# bench/gpu/stage.sh - prepares .device/ (git-ignored) for a run on the
# accelerator machine, which has the NVIDIA stack but none of our Debian
# libraries, no node and no ../shared: the offline bundle (lector, the CUDA
# module, the libraries, the models), the GPU test programs, the ONNX node
# test cases, a subset of ../shared/data and the PyTorch peer. The device
# tool carries at most 64 MiB per call: --icdar N / --sroie N size the data.
# Usage: bench/gpu/stage.sh [--icdar N] [--sroie N] [--docs N] [--lean] [--asan DIR] [--wrk]   (then see bench/gpu/device.sh)
# --docs N: also the first N JPEG pages of the document benchmark's generated set (build/documents/generated,
#   made by bench/documents/run.sh generate) into data/documents, for device.sh's archive step
# --lean: leave out RapidOCR's and Tesseract's images (two of the parity step's images) and the test
#   programs' debug information, for calls that carry the document pages (device.sh docs, firstpass, ...)
# --wrk: also stage wrk (Debian's, with its LuaJIT and OpenSSL) for device.sh's soak step
# --asan DIR: also stage DIR's lector and liblector-cuda.so, built with AddressSanitizer
# (LECTOR_SANITIZE leaves CUDA out, so: cmake -B DIR -DLECTOR_CUDA=ON
#  "-DCMAKE_C_FLAGS=-fsanitize=address -fno-omit-frame-pointer" and -fsanitize=address in
#  CMAKE_EXE_LINKER_FLAGS and CMAKE_MODULE_LINKER_FLAGS; cmake --build DIR -- lector lector_cuda),
# with libasan, for device.sh's asan step.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
icdar=120 sroie=40 docs=0 asan= wrk= lean=
while [ $# -gt 0 ]; do
  case "$1" in
    --icdar) icdar=$2; shift ;;
    --sroie) sroie=$2; shift ;;
    --docs) docs=$2; shift ;;
    --asan) asan=$2; shift ;;
    --wrk) wrk=1 ;;
    --lean) lean=1 ;;
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
extras="tesseract_test rapidocr_tests"; [ -n "$lean" ] && extras=
for s in paddleocr_doc_imgs $extras; do cp -r "$shared/data/$s" "$d/"; done
[ -n "$lean" ] && strip --strip-debug "$dev"/bin/*
mkdir -p "$d/icdar2015_test/ch4_test_images" "$d/sroie_subset/img"
cp "$shared/data/icdar2015_test/gt.tsv" "$d/icdar2015_test/"
cp "$shared/data/sroie_subset/gt.tsv" "$d/sroie_subset/"
ls "$shared/data/icdar2015_test/ch4_test_images" | sort -t_ -k2 -n | sed -n "1,${icdar}p" |
  while read -r f; do cp "$shared/data/icdar2015_test/ch4_test_images/$f" "$d/icdar2015_test/ch4_test_images/"; done
cp "$shared/data/icdar2015_test/ch4_test_images/img_20.jpg" "$d/icdar2015_test/ch4_test_images/"
ls "$shared/data/sroie_subset/img" | sort | sed -n "1,${sroie}p" |
  while read -r f; do cp "$shared/data/sroie_subset/img/$f" "$d/sroie_subset/img/"; done
if [ "$docs" -gt 0 ]; then
  gen=$top/build/documents/generated/pages
  [ -d "$gen" ] || { echo "stage: no generated pages in $gen (bench/documents/run.sh generate)" >&2; exit 2; }
  mkdir -p "$d/documents"
  find "$gen" -name '*.jpg' | sort | sed -n "1,${docs}p" | while read -r f; do cp "$f" "$d/documents/"; done
fi
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
# what a call carries: this folder and the tracked tree, counted in disk blocks, at most 64 MiB
carry=$(( $(du -sk "$dev" | cut -f1) + $(git -C "$top" ls-files -z | (cd "$top" && xargs -0 du -ck 2>/dev/null) | tail -1 | cut -f1) ))
echo "stage: .device $(du -sh "$dev" | cut -f1); with the tracked tree $((carry / 1024)) MiB of the 64 a call may carry"
[ "$carry" -le $((62 * 1024)) ] || echo "stage: too much for one call: fewer --icdar/--sroie images, or --lean" >&2
