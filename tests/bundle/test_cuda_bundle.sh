#!/usr/bin/env bash
# test_cuda_bundle.sh SRC LECTOR FX WORK - the CUDA archive of the offline
# bundle (scripts/bundle --with-cuda) and the choice of CUDA libraries
# (--cuda-libs), without a GPU and in seconds: the archive is built from a
# toolkit and a cuDNN made of stand-in libraries (make_fake_cuda.sh: real ELF
# files with the real SONAMEs and DT_NEEDED graph), over a stand-in base
# bundle, with `xz -0`. FX is the gpuenv fixtures' directory (the NVML and
# libcuda shims that report a driver version).
#  1. the archive unpacks over the base bundle (same top directory, no file of
#     the base replaced);
#  2. MANIFEST.cuda13 lists every file with the sha256 sha256sum computes, and
#     each library's licence, which is the one that came with it (pip
#     dist-info, the cuDNN tarball's LICENSE); the libraries are the toolkit's
#     bytes, unmodified; libcudart (linked statically into the module) and
#     libcudnn_adv (never loaded) are not shipped, the other cuDNN 9
#     sub-libraries are;
#  3. readelf -d: each library's SONAME is its file name, none has DT_RPATH,
#     and each DT_NEEDED is glibc, a library earlier in lector-cuda13.libs (the
#     load order) or one of the base bundle's lib/;
#  4. glibc's loader (LD_DEBUG=files) as the oracle of what the module loader
#     maps: --cuda-libs auto and bundle map every listed library from the
#     bundle and then the module; system maps none of them; a driver too old
#     for CUDA 13 (the shim at CUDA 12.2) stops it with the message and the
#     fix before any is mapped; a set missing one file is not used by auto and
#     is an error for bundle;
#  5. `lector doctor --json` (parsed with Python's json) names the set used,
#     with the versions of the stand-ins' dist-info and file names, and says
#     "driver_too_old_for_bundle" for the old driver.
# Exit 77 (skipped) without the CUDA module, the models or a tool.
set -euo pipefail
src=$1 lector=$2 fx=$3 work=$4
for t in cc readelf python3 xz sha256sum; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$src/models/$f" ] || { echo "SKIP: models/$f missing (scripts/fetch_models.sh)"; exit 77; }
done
major=$({ "$lector" doctor --json --no-dlopen 2>/dev/null || true; } |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["facts"]["lector_cuda_major"])' 2>/dev/null || echo 0)
[ "$major" = 13 ] || { echo "SKIP: this lector's CUDA module is not for CUDA 13 ($major)"; exit 77; }
[ -f "$fx/shims/libcuda.so.1" ] || { echo "SKIP: no gpuenv shims in $fx"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
fake=$work/fake
sh "$src/tests/bundle/make_fake_cuda.sh" cc "$fake" "$lector"
base=$fake/base/lector-0.1.0-linux-x86_64

t0=$(date +%s.%N)
tarball=$("$src/scripts/bundle" --with-cuda --base "$base" --cuda-root "$fake/cuda" --cudnn-root "$fake/cudnn" \
          --out "$work/dist" --cuda-xz 0 2>"$work/bundle.log" | tail -1) || { cat "$work/bundle.log"; fail "scripts/bundle --with-cuda"; }
echo "built $(basename "$tarball") in $(python3 -c "import time,sys; print('%.1f s' % (time.time() - float(sys.argv[1])))" "$t0")"
[ "$(basename "$tarball")" = lector-0.1.0-cuda13-linux-x86_64.tar.xz ] || fail "archive name $tarball"

# 1. over the base
tops=$(tar -tJf "$tarball" | cut -d/ -f1 | sort -u)
[ "$tops" = lector-0.1.0-linux-x86_64 ] || fail "top directories: $tops"
root=$work/unpacked
mkdir -p "$root"; cp -a "$base" "$root/"
(cd "$root" && find . -type f | sort | xargs sha256sum) >"$work/base.sums"
tar -C "$root" -xJf "$tarball"
(cd "$root" && sha256sum -c --quiet "$work/base.sums") || fail "the CUDA archive replaced a file of the base bundle"
b=$root/lector-0.1.0-linux-x86_64
L=$b/lib

# 2. MANIFEST
m=$b/MANIFEST.cuda13
[ -f "$m" ] || fail "no MANIFEST.cuda13"
(cd "$b" && grep -v '^#' "$m" | awk -F'\t' '{print $4"  "$1}' | sha256sum -c --quiet -) || fail "MANIFEST sha256"
listed=$(grep -v '^#' "$m" | cut -f1 | sort)
shipped=$(tar -tJf "$tarball" | grep -v '/$' | sed 's|^lector-0.1.0-linux-x86_64/||' | grep -v '^MANIFEST.cuda13$' | sort)
[ "$listed" = "$shipped" ] || { diff <(echo "$listed") <(echo "$shipped"); fail "MANIFEST does not list exactly the archive's files"; }
want="libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libcudnn_cnn.so.9 libcudnn_engines_precompiled.so.9
libcudnn_engines_runtime_compiled.so.9 libcudnn_graph.so.9 libcudnn_heuristic.so.9 libcudnn_ops.so.9
libnvrtc-builtins.so.13.0 libnvrtc.so.13"
libs=$(tar -tJf "$tarball" | grep '/lib/lib' | sed 's|.*/lib/||' | sort | tr '\n' ' ')
[ "$libs" = "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" ] || fail "libraries shipped: $libs"
declare -A origin=(
  [libcublas.so.13]="$fake/cuda/lib64/libcublas.so.13:$fake/cuda/dist-info/nvidia_cublas-13.1.0.3.dist-info/licenses/License.txt:13.1.0.3"
  [libcublasLt.so.13]="$fake/cuda/lib64/libcublasLt.so.13:$fake/cuda/dist-info/nvidia_cublas-13.1.0.3.dist-info/licenses/License.txt:13.1.0.3"
  [libnvrtc.so.13]="$fake/cuda/lib64/libnvrtc.so.13:$fake/cuda/dist-info/nvidia_cuda_nvrtc-13.0.88.dist-info/licenses/License.txt:13.0.88"
  [libnvrtc-builtins.so.13.0]="$fake/cuda/lib64/libnvrtc-builtins.so.13.0:$fake/cuda/dist-info/nvidia_cuda_nvrtc-13.0.88.dist-info/licenses/License.txt:13.0.88")
for s in libcudnn.so.9 libcudnn_cnn.so.9 libcudnn_engines_precompiled.so.9 libcudnn_engines_runtime_compiled.so.9 \
         libcudnn_graph.so.9 libcudnn_heuristic.so.9 libcudnn_ops.so.9; do
  origin[$s]="$fake/cudnn/lib/$s:$fake/cudnn/LICENSE:9.14.0"
done
for s in "${!origin[@]}"; do
  IFS=: read -r from lic ver <<<"${origin[$s]}"
  cmp -s "$L/$s" "$from" || fail "lib/$s is not the toolkit's file unmodified ($from)"
  row=$(awk -F'\t' -v f="lib/$s" '$1==f' "$m")
  [ "$(echo "$row" | cut -f3)" = "$ver" ] || fail "lib/$s: version $(echo "$row" | cut -f3), expected $ver"
  l=$(echo "$row" | cut -f5)
  [ -n "$l" ] && [ -f "$b/$l" ] || fail "lib/$s: no licence file ($l)"
  cmp -s "$b/$l" "$lic" || fail "lib/$s: $l is not the licence it came with ($lic)"
done
echo "manifest: $(grep -vc '^#' "$m") files, sha256 and licences right; libcudart and libcudnn_adv left out"

# 3. readelf -d
order=$(awk '$1=="lib"{print $2}' "$L/lector-cuda13.libs")
[ "$(echo "$order" | sort | tr '\n' ' ')" = "$libs" ] || fail "lector-cuda13.libs lists: $order"
glibc=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 "
before=" "
for s in $order; do
  d=$(readelf -d "$L/$s")
  sn=$(echo "$d" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$sn" = "$s" ] || fail "lib/$s: SONAME $sn"
  ! echo "$d" | grep -q '(RPATH)' || fail "lib/$s has DT_RPATH"
  for n in $(echo "$d" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case "$glibc$before" in *" $n "*) continue ;; esac
    [ -f "$base/lib/$n" ] || fail "lib/$s needs $n: neither glibc, nor before it in the load order, nor in the base bundle"
  done
  before="$before$s "
done
echo "readelf: SONAMEs, no RPATH, every DT_NEEDED met by glibc, the load order or the base bundle"

# 4. what glibc maps, per choice
run() { # CHOICE SHIM-MODE LOG: lector --device cuda with the bundle's module, under env -i
  env -i LD_LIBRARY_PATH="$fx/shims" GPUENV_SHIM_MODE="$2" LECTOR_CUDA_MODULE="$L/liblector-cuda.so" \
      LD_DEBUG=files LD_DEBUG_OUTPUT="$3.ld" "$lector" --cuda-libs "$1" --device cuda --models "$src/models" \
      "$src/samples/sample.jpg" >"$3" 2>&1 || true
}
# the objects ld.so loaded, in order ("generating link map": the path for a
# dlopen by path), and any path it initialised or opened (a need found by name)
mapped() {
  cat "$1".ld.* | sed -n -e 's/.*file=\([^ ]*\) \[0\];  generating link map.*/\1/p' \
    -e 's/.*calling init: \(\/[^ ]*\).*/init \1/p' -e 's/.*opening file=\(\/[^ ]*\) \[0\].*/open \1/p'
  rm -f "$1".ld.*
}
for c in auto bundle; do
  run $c ok "$work/run_$c"
  got=$(mapped "$work/run_$c" | grep "^$L/" | sed "s|^$L/||" | tr '\n' ' ')
  [ "$(echo $got)" = "$(echo $order liblector-cuda.so)" ] || fail "--cuda-libs $c: ld.so mapped [$got]"
  grep -q "liblector-cuda.so has no entry point" "$work/run_$c" || { cat "$work/run_$c"; fail "--cuda-libs $c: the module was not reached"; }
done
echo "ld.so: --cuda-libs auto and bundle map the $(echo $order | wc -w) bundled libraries in order, then the module"
run system ok "$work/run_system"
! mapped "$work/run_system" | grep -q "$L/lib[cn]" || fail "--cuda-libs system mapped a bundled library"
run auto geforce535 "$work/run_old"
! mapped "$work/run_old" | grep -q "$L/" || fail "a driver too old: ld.so still mapped bundled files"
grep -q "the NVIDIA driver supports CUDA up to 12.2, older than the bundled CUDA 13.0 libraries, which need driver 580.65.06 or newer" "$work/run_old" ||
  { cat "$work/run_old"; fail "driver too old: no message"; }
grep -q "Fix: install NVIDIA driver 580.65.06 or newer" "$work/run_old" || fail "driver too old: no fix"
echo "ld.so: --cuda-libs system maps none; driver 535 (CUDA 12.2): $(sed -n 's/.*device cuda: \(the NVIDIA driver.*newer\) (CUDA.*/\1/p' "$work/run_old")"
mv "$L/libcudnn_ops.so.9" "$work/"
run auto ok "$work/run_partial"
! mapped "$work/run_partial" | grep -q "$L/lib[cn]" || fail "auto used an incomplete set"
run bundle ok "$work/run_partial_b"
grep -q "the bundled CUDA 13 libraries are not usable: $L/libcudnn_ops.so.9: No such file or directory" "$work/run_partial_b" ||
  { cat "$work/run_partial_b"; fail "bundle with a missing file: no message"; }
echo "an incomplete set: auto falls back to the system's, bundle names the missing file"

# 5. the doctor
doctor() { # CHOICE SHIM-MODE
  env LECTOR_DOCTOR_NVML="$fx/shims/libnvidia-ml.so.1" LECTOR_DOCTOR_LIBCUDA="$fx/shims/libcuda.so.1" \
      GPUENV_SHIM_MODE="$2" LECTOR_CUDA_MODULE="$L/liblector-cuda.so" "$lector" --cuda-libs "$1" doctor --json \
      --no-dlopen 2>/dev/null || true
}
check() { # JSON-FILE PYTHON-ASSERTIONS (c: the l4.cuda_libs check)
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for l in d["layers"] for c in l["checks"] if c["id"] == "l4.cuda_libs"]
assert c, "no l4.cuda_libs check"
c = c[0]
try:
    exec(sys.argv[2])
except AssertionError as e:
    sys.exit("%s\n%s" % (e, json.dumps(c, indent=1)))
PY
}
doctor auto ok >"$work/doctor_partial.json"
check "$work/doctor_partial.json" 'assert c["status"] == "warn" and c["code"] == "cuda_bundle_incomplete" and "libcudnn_ops.so.9" in c["finding"], "incomplete"' ||
  fail "doctor: incomplete set"
mv "$work/libcudnn_ops.so.9" "$L/"
# a file that is not a library, and a list for another CUDA major
cp "$L/libcudnn_cnn.so.9" "$work/cnn.keep"; echo "not a library" >"$L/libcudnn_cnn.so.9"
run bundle ok "$work/run_text"; mv "$work/cnn.keep" "$L/libcudnn_cnn.so.9"
grep -q "$L/libcudnn_cnn.so.9: not an ELF file" "$work/run_text" || { cat "$work/run_text"; fail "a text file in the set: no message"; }
cp "$L/lector-cuda13.libs" "$work/libs.keep"; sed -i 's/^cuda 13.0$/cuda 12.8/' "$L/lector-cuda13.libs"
run bundle ok "$work/run_major"; mv "$work/libs.keep" "$L/lector-cuda13.libs"
grep -q "lector-cuda13.libs is for CUDA 12.8, Lector's CUDA module for CUDA 13" "$work/run_major" ||
  { cat "$work/run_major"; fail "a list for CUDA 12: no message"; }
echo "bundle: a file that is not a library, a list for CUDA 12: named"
doctor auto ok >"$work/doctor_ok.json"
check "$work/doctor_ok.json" 'assert c["status"] == "ok" and "bundled CUDA 13.0" in c["finding"] and "cuBLAS 13.1.0.3" in c["finding"] and "cuDNN 9.14.0" in c["finding"] and "NVRTC 13.0.88" in c["finding"], "bundle named"' ||
  fail "doctor: the bundle's set"
doctor system ok >"$work/doctor_system.json"
check "$work/doctor_system.json" 'assert c["status"] == "ok" and c["finding"].startswith("the system"), "system"' ||
  fail "doctor: --cuda-libs system"
doctor auto geforce535 >"$work/doctor_old.json"
check "$work/doctor_old.json" 'assert c["status"] == "fail" and c["code"] == "driver_too_old_for_bundle" and "supports CUDA up to 12.2" in c["cause"] and "580.65.06" in c["fix"] and "lector" in c["hits"], "old driver"' ||
  fail "doctor: driver too old"
echo "doctor: names the bundled set (ok), the system's (system), an incomplete set (warn), driver 535 (fail for Lector)"
echo PASS
