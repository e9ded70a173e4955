#!/usr/bin/env bash
# test_bundle.sh SRC LECTOR BUNDLE_BUILD_DIR WORK_DIR
# Builds the bundle with scripts/bundle (its lector in BUNDLE_BUILD_DIR, the
# tarball in WORK_DIR/dist), unpacks it into a fresh temporary directory and:
#  1. runs OCR of samples/sample.jpg with the bundle's bin/lector under
#     `env -i LD_LIBRARY_PATH=` and compares the JSON with LECTOR's (the build
#     tree's binary), byte for byte apart from "timings_ms";
#  2. asks the project's ELF resolver (`lector doctor --inspect --json`, run
#     from the bundle under env -i) where every DT_NEEDED resolves: nothing
#     outside the bundle but glibc, nothing missing;
#  3. does the same under --root on a tree holding only glibc and the bundle
#     (a machine with no other library installed);
#  4. cross-checks the objects ld.so really loaded (LD_DEBUG=files);
#  5. runs `lector doctor` from the bundle (exit 0 or 1, never a crash).
# With the CUDA module, also that lib/lector-kernels holds the manifest's
# kernels for every default architecture.
# Exit 77 (skipped) when the models are not fetched or a tool is missing.
set -euo pipefail
src=$1 lector=$2 bbuild=$3 work=$4
sample=$src/samples/sample.jpg
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$src/models/$f" ] || { echo "SKIP: models/$f missing (scripts/fetch_models.sh)"; exit 77; }
done
for t in patchelf python3 xz; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (apt-get install $t)"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }

tarball=$("$src/scripts/bundle" --build-dir "$bbuild" --out "$work/dist" 2>"$work/bundle.log" | tail -1) ||
  { cat "$work/bundle.log"; fail "scripts/bundle failed"; }
[ -f "$tarball" ] || fail "no tarball ($tarball)"
size=$(stat -c %s "$tarball")
echo "bundle: $tarball ($((size / 1024)) KiB)"
[ "$size" -lt $((64 * 1024 * 1024)) ] || fail "bundle over 64 MiB"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp"
b=$(echo "$tmp"/lector-*-linux-x86_64)
[ -x "$b/bin/lector" ] && [ -f "$b/MANIFEST" ] || fail "bundle layout"

# MANIFEST lists every file with the right sha256
(cd "$b" && grep -v '^#' MANIFEST | awk -F'\t' '{print $4"  "$1}' | sha256sum -c --quiet -) || fail "MANIFEST sha256"
n_files=$(cd "$b" && find . -type f ! -name MANIFEST | wc -l)
[ "$n_files" = "$(grep -vc '^#' "$b/MANIFEST")" ] || fail "MANIFEST does not list every file"
for l in "$b"/lib/*; do
  [ -f "$l" ] || continue
  pkg=$(awk -F'\t' -v f="lib/${l##*/}" '$1==f{print $2}' "$b/MANIFEST")
  if [ "$pkg" = lector ]; then lic=$b/LICENSES/lector.MIT; else lic=$b/LICENSES/$pkg.copyright; fi
  [ -f "$lic" ] || fail "no licence for lib/${l##*/} ($pkg)"
done

# the CUDA module's kernels shipped compiled: every kernel of the manifest (recorded on a GPU by
# bench/gpu/device.sh kernels) for each of the 7 default architectures, and nothing else
if [ -f "$b/lib/liblector-cuda.so" ] && grep -q "no kernels shipped.*cannot load NVRTC" "$work/bundle.log"; then
  echo "kernels: none shipped, this machine has no NVRTC: $(grep -m1 "no kernels shipped" "$work/bundle.log")"
elif [ -f "$b/lib/liblector-cuda.so" ]; then
  n_kc=$(find "$b/lib/lector-kernels" -name '*.kc' 2>/dev/null | wc -l)
  n_k=$(grep -c '^@@ kernel ' "$src/src/backend/cuda/kernels.manifest")
  [ "$n_kc" = $((7 * n_k)) ] || fail "lib/lector-kernels: $n_kc files, not 7 x $n_k ($(grep -i kernels "$work/bundle.log"))"
  python3 "$src/scripts/kernels.py" extract "$b/lib/lector-kernels" -o "$tmp/kernels.manifest" >/dev/null &&
    cmp -s "$tmp/kernels.manifest" "$src/src/backend/cuda/kernels.manifest" ||
    fail "lib/lector-kernels does not hold the manifest's kernels"
  echo "kernels: $n_kc shipped ($n_k kernels x 7 architectures)"
  # the bundle's own doctor reads them as the module would: their NVRTC and architectures from the keys
  env -i "$b/bin/lector" doctor --json --no-dlopen 2>/dev/null >"$tmp/doctor.json" || true   # 1: no GPU here
  python3 - "$tmp/doctor.json" "$n_k" <<'PY' || fail "lector doctor does not report the shipped kernels"
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for l in d["layers"] for c in l["checks"] if c["id"] == "l5.shipped_kernels"]
assert c and c[0]["status"] == "ok", c
f = c[0]["finding"]
assert "lib/lector-kernels: %s kernels built by NVRTC " % sys.argv[2] in f, f
assert "for sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120" in f, f
print("doctor: " + f)
PY
fi

# 1. the same JSON as the build tree's lector (both under env -i, same path)
cd "$tmp"
env -i LD_LIBRARY_PATH= "$b/bin/lector" -q --format json "$sample" >"$tmp/bundle.json" ||
  fail "bundle OCR failed: $(cat "$tmp/bundle.json")"
env -i "$lector" -q --models "$src/models" --format json "$sample" >"$tmp/build.json" || fail "build-tree OCR failed"
python3 - "$tmp/bundle.json" "$tmp/build.json" <<'PY' || fail "JSON differs"
import json, re, sys
def strip(p):
    s = open(p, encoding="utf-8").read()
    s2 = re.sub(r',"timings_ms":\{[^{}]*\}', '', s)
    return s, s2
a, a2 = strip(sys.argv[1]); b, b2 = strip(sys.argv[2])
ja, jb = json.loads(a), json.loads(b)
lines = ja["pages"][0]["lines"]
assert lines and ja["pages"] == jb["pages"], "pages differ"
assert a2 == b2, "bytes differ apart from timings_ms:\n%s\n%s" % (a2, b2)
print("json: %d lines identical (first: %s)" % (len(lines), lines[0]["text"]))
PY

# 2. the resolver, from the bundle, as ld.so would resolve on this machine
glibc='["libc.so.6","libm.so.6","libdl.so.2","libpthread.so.0","librt.so.1","ld-linux-x86-64.so.2"]'
check_inspect() { # JSON-file prefix-the-objects-must-be-under
  python3 - "$1" "$2" "$glibc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); pre = sys.argv[2]; glibc = set(json.loads(sys.argv[3]))
ins = d["inspect"][0]; bad = ["missing " + m for m in ins["missing"]]; n = 0
for o in ins["objects"]:
    if o.get("soname") in glibc: continue
    n += 1
    if not o["real"].startswith(pre): bad.append("%s -> %s (%s)" % (o.get("soname"), o["real"], o["via"]))
if bad: sys.exit("outside the bundle: " + "; ".join(bad))
print("resolver: %d objects, all under %s, the rest glibc" % (n, pre))
PY
}
env -i LD_LIBRARY_PATH= "$b/bin/lector" doctor --json --inspect "$b/bin/lector" >"$tmp/inspect.json" || true
check_inspect "$tmp/inspect.json" "$b/" || fail "resolver (live system)"

# 3. a machine with nothing but glibc: a tree with glibc and the bundle
root=$tmp/root
mkdir -p "$root/lib/x86_64-linux-gnu" "$root/usr/lib/x86_64-linux-gnu" "$root/lib64" "$root/opt" "$root/etc"
for so in libc.so.6 libm.so.6 ld-linux-x86-64.so.2; do cp -L "/lib/x86_64-linux-gnu/$so" "$root/lib/x86_64-linux-gnu/"; done
cp -a "$b" "$root/opt/lector"
env -i "$b/bin/lector" doctor --json --root "$root" --inspect /opt/lector/bin/lector >"$tmp/root.json" || true
check_inspect "$tmp/root.json" /opt/lector/ || fail "resolver (glibc-only tree)"

# 4. what ld.so actually mapped
env -i LD_LIBRARY_PATH= LD_DEBUG=files "$b/bin/lector" --version 2>"$tmp/ld.log" >/dev/null || fail "lector --version"
outside=$(grep -o 'file=[^ ]*.*generating link map' "$tmp/ld.log" | awk '{print $1}' | sed 's/^file=//' | sort -u |
          grep -v -x -E 'libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1' || true)
loaded=$(grep -o 'file=[^ ]*' "$tmp/ld.log" | sort -u | wc -l)
for so in $outside; do [ -f "$b/lib/$so" ] || fail "ld.so loaded $so from outside the bundle"; done
grep -E '^ *[0-9]+:.*(trying|calling init): /' "$tmp/ld.log" | grep -v -e "$b/" -e 'libc\.so\.6' -e 'libm\.so\.6' \
  -e 'ld-linux' >"$tmp/foreign" || true
[ ! -s "$tmp/foreign" ] || { cat "$tmp/foreign"; fail "ld.so initialised objects outside the bundle"; }
echo "ld.so: $loaded objects mapped, none outside the bundle but glibc"

# 5. doctor from the bundle: it reports, it does not crash
rc=0; env -i LD_LIBRARY_PATH= "$b/bin/lector" doctor >"$tmp/doctor.txt" 2>&1 || rc=$?
[ $rc -le 1 ] || { cat "$tmp/doctor.txt"; fail "lector doctor exit $rc"; }
tail -1 "$tmp/doctor.txt"
echo "PASS"
