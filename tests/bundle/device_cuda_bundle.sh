#!/usr/bin/env bash
# tests/bundle/device_cuda_bundle.sh - the GPU offline bundle proven on the
# accelerator machine (docs/DEPLOY.md, "The CUDA archive, proven"): a tree with
# nothing but glibc, the NVIDIA driver's own libraries and /dev, /proc, /sys
# runs the two archives' lector on the GPU.
#
# Here (the build machine), once:   tests/bundle/device_cuda_bundle.sh --stage [N_ICDAR N_SROIE]
#   puts into .device/cudabundle/ (git-ignored, carried by the device tool:
#   carry [".device"]) the base bundle (scripts/bundle) and the first N_ICDAR
#   (default 6) ICDAR2015 and N_SROIE (default 3) SROIE images of ../shared/data.
# There (root, no network, one call):  tests/bundle/device_cuda_bundle.sh [CUDA_ROOT [CUDNN_ROOT]]
#   (defaults /usr/local/cuda-13.0 and /usr/lib/x86_64-linux-gnu)
#   maps   which CUDA libraries a GPU read maps (glibc's LD_DEBUG=files) with the
#          system's libraries, per configuration (fp32, fp16, LECTOR_CUDA_CONV_SEARCH=1),
#          and the size of each cuDNN sub-library: what the archive must carry
#   build  scripts/bundle --with-cuda --base <the staged base> from CUDA_ROOT and
#          CUDNN_ROOT: the CUDA archive, its size and the time it takes
#   root   a clean root: glibc, the driver's libcuda / libnvidia-* files, the two
#          archives unpacked in /opt/lector, the images; ldconfig -r; /dev, /proc,
#          /sys bound in a private mount namespace (unshare -m), chroot, env -i
#   doctor `lector doctor` there: exit 0, "GPU ready", the bundled set named
#   ldso   what ld.so maps there for a GPU read: nothing but glibc, the driver and
#          /opt/lector
#   e2e    `lector --device cuda` and `--device cpu` there on samples/sample.jpg and the
#          staged images: the same text lines per image (fp32; fp16 as information)
# Prints a PASS/FAIL table; logs, MANIFEST.cuda13 and the tables go to $OUT.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
stage_dir=$top/.device/cudabundle

if [ "${1:-}" = --stage ]; then
  set -e
  ni=${2:-6} ns=${3:-3}
  shared=$(cd "$top/../shared" && pwd)
  rm -rf "$stage_dir"; mkdir -p "$stage_dir/images"
  "$top/scripts/bundle" --out "$stage_dir" >/dev/null
  ls "$shared/data/icdar2015_test/ch4_test_images" | sort -t_ -k2 -n | head -n "$ni" |
    while read -r f; do cp "$shared/data/icdar2015_test/ch4_test_images/$f" "$stage_dir/images/icdar_$f"; done
  ls "$shared/data/sroie_subset/img" | sort | head -n "$ns" |
    while read -r f; do cp "$shared/data/sroie_subset/img/$f" "$stage_dir/images/sroie_$f"; done
  du -sh "$stage_dir"
  exit 0
fi

cuda_root=${1:-/usr/local/cuda-13.0}
cudnn_root=${2:-/usr/lib/x86_64-linux-gnu}
out=${OUT:-/tmp/out}
W=/tmp/cudabundle
rm -rf "$W"; mkdir -p "$W" "$out"
base_tar=$(ls "$stage_dir"/lector-*-linux-x86_64.tar.xz 2>/dev/null | grep -v -- '-cuda' | head -1)
[ -f "$base_tar" ] || { echo "no base bundle in $stage_dir: run tests/bundle/device_cuda_bundle.sh --stage here first"; exit 2; }
declare -a RES
res() { RES+=("$(printf '%-6s %-8s %s' "$1" "$2" "$3")"); printf '%-6s %-8s %s\n' "$1" "$2" "$3"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar -C "$W" -xJf "$base_tar"
B=$(echo "$W"/lector-*-linux-x86_64)
name=$(basename "$B")
images="$top/samples/sample.jpg $(ls "$stage_dir"/images/*.jpg 2>/dev/null | tr '\n' ' ')"

# the objects an LD_DEBUG=files log shows loaded: the paths of "calling init" and
# of dlopen's "opening file=", and the names of "generating link map" (a
# DT_NEEDED or dlopen by name)
ldso_objects() {
  sed -n -e 's/.*calling init: \(\/[^ ]*\).*/\1/p' -e 's/.*opening file=\(\/[^ ]*\) \[0\].*/\1/p' \
         -e 's/.*file=\([^ ]*\) \[0\];  generating link map.*/\1/p' | sort -u
}
echo "=== maps: CUDA libraries mapped by a GPU read with the system's libraries"
cfgs=("fp32:" "fp16:--fp16" "search:LECTOR_CUDA_CONV_SEARCH=1")
for c in "${cfgs[@]}"; do
  tag=${c%%:*} a=${c#*:} envs= flags=
  case $a in *=*) envs=$a ;; *) flags=$a ;; esac
  env LECTOR_CUDA_LIBS=system LECTOR_CUDA_MODULE="$B/lib/liblector-cuda.so" LD_DEBUG=files \
      LD_DEBUG_OUTPUT="$W/ld_$tag" $envs "$B/bin/lector" --device cuda $flags --format tsv $images \
      >"$W/maps_$tag.tsv" 2>"$W/maps_$tag.err"
  echo "$tag rc=$? $(grep -c $'^4\t' "$W/maps_$tag.tsv") lines"
  cat "$W/ld_$tag".* 2>/dev/null | ldso_objects |
    grep -E 'cudnn|cublas|nvrtc|cudart|nvJitLink|nvvm|nvidia|libcuda' >"$W/mapped_$tag.txt"
done
python3 - "$W" "$cudnn_root" "${cfgs[@]%%:*}" <<'PY' | tee "$out/maps.txt"
import glob, os, re, sys
w, cudnn_root, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
mapped = {t: [l.strip() for l in open("%s/mapped_%s.txt" % (w, t))] for t in tags}
names = sorted({os.path.basename(p) for v in mapped.values() for p in v})
print("%-44s %10s  %s" % ("library mapped (system's)", "MiB", "  ".join(tags)))
for n in names:
    p = next((p for v in mapped.values() for p in v if os.path.basename(p) == n and p.startswith("/")), n)
    size = os.path.getsize(os.path.realpath(p)) / 2**20 if os.path.exists(p) else 0
    print("%-44s %10.1f  %s" % (n, size, "  ".join("%-6s" % ("yes" if any(os.path.basename(q) == n for q in mapped[t]) else "-") for t in tags)))
subs = sorted(glob.glob(os.path.join(cudnn_root, "libcudnn*.so.9")))
print("\ncuDNN 9 sub-libraries in %s, never mapped by any configuration:" % cudnn_root)
stem = lambda p: os.path.basename(p).split(".so")[0]  # libcudnn_ops.so.9 and .so.9.14.0 alike
for s in subs:
    if not any(stem(s) == stem(q) for v in mapped.values() for q in v):
        print("  %-40s %8.1f MiB" % (os.path.basename(s), os.path.getsize(os.path.realpath(s)) / 2**20))
PY
leave=$(python3 - "$W" "$cudnn_root" "${cfgs[@]%%:*}" <<'PY'
import glob, os, sys
w, root, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
stem = lambda p: os.path.basename(p).split(".so")[0]  # libcudnn_ops.so.9 and .so.9.14.0 alike
m = {stem(l.strip()) for t in tags for l in open("%s/mapped_%s.txt" % (w, t))}
print(",".join(os.path.basename(s)[len("libcudnn_"):-len(".so.9")] for s in sorted(glob.glob(root + "/libcudnn_*.so.9"))
               if stem(s) not in m))
PY
)
echo "cuDNN sub-libraries no configuration mapped: ${leave:-none} (the archive below leaves out only scripts/bundle_cuda.py's default)"

echo "=== build: the CUDA archive from $cuda_root and $cudnn_root"
t0=$(date +%s)
"$top/scripts/bundle" --with-cuda --base "$base_tar" --cuda-root "$cuda_root" --cudnn-root "$cudnn_root" --out "$W/dist" \
    --cuda-keep-stage "$W/cstage" >"$W/build.out" 2>"$W/build.log"
rc=$?
if [ $rc -ne 0 ] && grep -q "no licence found" "$W/build.log"; then
  # this install ships no licence file beside its libraries: NVIDIA's EULA from
  # wherever the toolkit put one, recorded as given (the table says so)
  cat "$W/build.log"
  lic=$(find "$cuda_root"/ /usr/local/cuda*/ /usr/share/doc/ -maxdepth 3 \( -name 'EULA.txt' -o -name 'License.txt' \) \
        2>/dev/null | head -1)
  if [ -n "$lic" ]; then
    echo "retrying with --nvidia-licence $lic"; nvlic="(licence: --nvidia-licence $lic)"
    "$top/scripts/bundle" --with-cuda --base "$base_tar" --cuda-root "$cuda_root" --cudnn-root "$cudnn_root" \
        --out "$W/dist" --cuda-keep-stage "$W/cstage" --nvidia-licence "$lic" >"$W/build.out" 2>"$W/build.log"
    rc=$?
  fi
fi
t1=$(date +%s)
cat "$W/build.log"
ct=$(ls "$W"/dist/*-cuda*-linux-x86_64.tar.xz 2>/dev/null | head -1)
if [ $rc -ne 0 ] || [ ! -f "$ct" ]; then
  res FAIL build "scripts/bundle --with-cuda rc=$rc (licence files on this machine:)"
  find "$cuda_root"/ /usr/share/doc -maxdepth 2 \( -iname 'EULA*' -o -iname 'LICENSE*' \) 2>/dev/null | grep -i -E 'cuda|cudnn|cublas|nvrtc' | head
  printf '%s\n' "${RES[@]}"; exit 1
fi
res PASS build "$(basename "$ct"): $(( $(stat -c %s "$ct") / 1048576 )) MiB in $((t1 - t0)) s ($(du -sm "$W/cstage" | cut -f1) MiB unpacked) ${nvlic:-}"
cp "$W/cstage/$name/MANIFEST.cuda"* "$W/cstage/$name/lib/"lector-cuda*.libs "$out/"
ls -l "$W/cstage/$name/lib" | tee "$out/cuda_lib_sizes.txt"

echo "=== root: glibc + the driver's files + the bundle, nothing else"
R=$W/root
mkdir -p "$R/usr/lib/x86_64-linux-gnu" "$R/lib64" "$R/etc" "$R/dev" "$R/proc" "$R/sys" "$R/tmp" "$R/opt" "$R/data"
ln -s usr/lib "$R/lib"   # merged /usr, as on Ubuntu 24.04
for so in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2; do
  cp -L "/lib/x86_64-linux-gnu/$so" "$R/usr/lib/x86_64-linux-gnu/"
done
ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$R/lib64/ld-linux-x86-64.so.2"
# the driver's libcuda: the cache, else LD_LIBRARY_PATH (containers: /usr/local/nvidia/lib64)
drv=$(ldconfig -p | awk '/libcuda.so.1 .*x86-64/{print $NF; exit}')
for d in ${LD_LIBRARY_PATH//:/ } /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
  [ -n "$drv" ] || { [ -e "$d/libcuda.so.1" ] && drv=$d/libcuda.so.1; }
done
[ -n "$drv" ] || { res FAIL root "no libcuda.so.1 on this machine"; printf '%s\n' "${RES[@]}"; exit 1; }
drv=$(readlink -f "$drv")
ddir=$(dirname "$drv"); dver=${drv##*.so.}
echo "driver files ($ddir, version $dver):"
for f in "$ddir"/lib*.so."$dver"; do
  case $(basename "$f") in libcuda.so.*|libnvidia-ml.so.*|libnvidia-ptxjitcompiler.so.*|libnvidia-nvvm.so.*|libnvidia-gpucomp.so.*|libcudadebugger.so.*)
    cp -a "$f" "$R/usr/lib/x86_64-linux-gnu/"; echo "  $(basename "$f")" ;;
  esac
done
echo "/usr/lib/x86_64-linux-gnu" >"$R/etc/ld.so.conf"
# the unversioned libcuda.so link, where the machine's driver installation has one (the
# NVIDIA installer and some packages make it; programs that dlopen "libcuda.so" need it)
if ldconfig -p | grep -qE '^\s*libcuda\.so \(.*x86-64'; then
  ln -s libcuda.so.1 "$R/usr/lib/x86_64-linux-gnu/libcuda.so"; echo "  libcuda.so -> libcuda.so.1 (as on this machine)"
fi
ldconfig -r "$R"   # the SONAME links and the cache, as the driver's installer leaves them
mkdir -p "$R/opt/lector"
tar -C "$R/opt" -xJf "$base_tar" && tar -C "$R/opt" -xJf "$ct" && mv "$R/opt/$name"/* "$R/opt/lector/" && rmdir "$R/opt/$name"
for i in $images; do cp "$i" "$R/data/"; done
echo "CUDA libraries in the root outside /opt/lector: $(find "$R" -path "$R/opt" -prune -o -name 'lib*' -print | grep -c -E 'cudnn|cublas|nvrtc|cudart') (must be 0)"
# inroot [VAR=VALUE...] PROGRAM ARGS...: PROGRAM in the root, in a private mount
# namespace (/dev, /proc, /sys bound there), with an environment of the VARs only
inroot() {
  local vars=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done
  unshare -m --propagation private sh -c 'R=$1; shift; mount --rbind /dev "$R/dev" &&
    { mount -t proc proc "$R/proc" 2>/dev/null || mount --rbind /proc "$R/proc"; } &&
    mount --rbind /sys "$R/sys" && exec "$@"' sh "$R" env -i "${vars[@]}" "$(command -v chroot)" "$R" "$@"
}

echo "=== doctor (in the root)"
inroot /opt/lector/bin/lector doctor >"$out/doctor.txt" 2>&1; drc=$?
cat "$out/doctor.txt"
inroot /opt/lector/bin/lector doctor --json >"$out/doctor.json" 2>&1
if [ $drc -eq 0 ] && grep -q "GPU ready" "$out/doctor.txt" && grep -q "bundled CUDA 13" "$out/doctor.txt"; then
  res PASS doctor "$(grep -m1 'GPU ready' "$out/doctor.txt" | cut -c1-200)"
else
  res FAIL doctor "exit $drc: $(tail -1 "$out/doctor.txt" | cut -c1-200)"
fi
inroot /opt/lector/bin/lector doctor -v 2>&1 | grep -A14 "l4.cuda_libs\|CUDA library set" | head -16 | tee "$out/doctor_libs.txt"

echo "=== ldso: what a GPU read maps in the root"
inroot LD_DEBUG=files /opt/lector/bin/lector --device cuda --format tsv /data/sample.jpg >"$W/ld.tsv" 2>"$W/ld.log"
ldso_objects <"$W/ld.log" | grep '^/' >"$out/ldso_mapped.txt"
outside=$(grep -v -E '^/opt/lector/|^/(usr/)?lib(64)?/(x86_64-linux-gnu/)?(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|libcuda\.so\.[0-9.]*|libnvidia-[a-z]*\.so\.[0-9.]*)$' "$out/ldso_mapped.txt" | tr '\n' ' ')
ncuda=$(grep -c -E '^/opt/lector/(bin/\.\./)?lib/lib(cudnn|cublas|nvrtc)' "$out/ldso_mapped.txt")
grep -E 'cudnn|cublas|nvrtc|libcuda|nvidia' "$out/ldso_mapped.txt"
if [ -z "$outside" ] && [ "$ncuda" -gt 0 ] && grep -q $'^4\t' "$W/ld.tsv"; then
  res PASS ldso "$ncuda bundled CUDA libraries mapped from /opt/lector/lib; nothing but glibc and the driver from elsewhere"
else
  res FAIL ldso "outside: ${outside:-none}; bundled CUDA libraries mapped: $ncuda; $(tail -2 "$W/ld.log" | tr '\n' ' ' | cut -c1-200)"
fi

echo "=== e2e (in the root): GPU vs CPU text"
dimgs=$(for i in $images; do echo "/data/$(basename "$i")"; done | tr '\n' ' ')
inroot /opt/lector/bin/lector --device cpu --format tsv $dimgs >"$out/e2e_cpu.tsv" 2>"$out/e2e_cpu.err"
inroot /opt/lector/bin/lector --device cuda --format tsv $dimgs >"$out/e2e_cuda.tsv" 2>"$out/e2e_cuda.err"
inroot /opt/lector/bin/lector --device cuda --fp16 --format tsv $dimgs >"$out/e2e_cuda_fp16.tsv" 2>"$out/e2e_cuda_fp16.err"
python3 - "$out/e2e_cpu.tsv" "$out/e2e_cuda.tsv" "$out/e2e_cuda_fp16.tsv" "$W/maps_fp32.tsv" $dimgs <<'PY' >"$W/e2e.txt"
import collections, sys
def pages(p):   # per page: the multiset of line texts
    r = []
    try:
        for l in open(p, encoding="utf-8"):
            c = l.rstrip("\n").split("\t")
            if c[0] == "1": r.append(collections.Counter())
            elif c[0] == "4" and r: r[-1][c[11] if len(c) > 11 else ""] += 1
    except OSError:
        pass
    return r
cpu, gpu, f16, host = (pages(p) for p in sys.argv[1:5])
names = sys.argv[5:]
bad = 0
print("%-28s %5s %5s %6s  %-6s %s" % ("image", "cpu", "cuda", "fp16=", "", "cuda in the root vs cuda with the system's libs"))
for i, n in enumerate(names):
    a = cpu[i] if i < len(cpu) else collections.Counter()
    b = gpu[i] if i < len(gpu) else None
    ok = b is not None and a == b and sum(a.values()) > 0
    bad += not ok
    h = host[i] if i < len(host) else None
    s16 = sum((a & f16[i]).values()) if i < len(f16) else 0
    print("%-28s %5d %5s %3d/%-3d %-6s %s" % (n.split("/")[-1], sum(a.values()), sum(b.values()) if b is not None else "-",
          s16, sum(a.values()), "PASS" if ok else "FAIL", "same" if h is not None and h == b else "differs"))
    if not ok and b is not None:
        for t in a - b: print("    cpu  %r" % t)
        for t in b - a: print("    cuda %r" % t)
print("RESULT %s %d/%d images with the CPU's text lines" % ("PASS" if not bad else "FAIL", len(names) - bad, len(names)))
PY
cat "$W/e2e.txt" | tee "$out/e2e.txt"
r=$(sed -n 's/^RESULT \([A-Z]*\) \(.*\)/\1|\2/p' "$W/e2e.txt")
res "${r%%|*}" e2e "${r#*|} (fp32; fp16 agreement per image above, for information)"
tail -3 "$out/e2e_cuda.err"

echo; echo "=== summary"
printf '%s\n' "${RES[@]}" | tee "$out/summary.txt"
! printf '%s\n' "${RES[@]}" | grep -q '^FAIL'
