#!/bin/bash
# doctor_shipped_kernels: `lector doctor`'s l5.shipped_kernels reads which
# GPUs the kernels shipped beside the CUDA module cover from the files' own
# keys (scripts/kernels.py builds them for sm_90 here) and compares them with
# the GPUs the fake driver reports (tests/gpuenv/shims/cuda_shim.c: an H200,
# sm_90, or an RTX 3090, sm_86) and with NVRTC: a GPU they do not cover on a
# machine without NVRTC (LECTOR_CUDA_NVRTC_LIB naming no file) is a warning
# with the fix, since its chains would run in the interpreter.
# Skipped (77) without NVRTC to build them or without the CUDA module.
# Usage: shipped_kernels.sh SRC LECTOR CUDA_MODULE FIXTURES_DIR
set -u
src=$1 lector=$2 module=$3 fx=$4
[ -f "$module" ] || { echo "skipped: no CUDA module in this build"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$src/scripts/kernels.py" build "$src/src/backend/cuda/kernels.manifest" --arch 90 -o "$dir/k" --jobs 2 \
    >"$dir/build.log" 2>&1
r=$?
[ $r = 3 ] && { echo "skipped: no NVRTC"; exit 77; }
[ $r = 0 ] || { cat "$dir/build.log"; echo "FAIL scripts/kernels.py build"; exit 1; }
n=$(grep -c '^@@ kernel ' "$src/src/backend/cuda/kernels.manifest")
doctor() { # SHIM-MODE [ENV=VALUE...]
    local mode=$1
    shift
    env LECTOR_DOCTOR_NVML="$fx/shims/libnvidia-ml.so.1" LECTOR_DOCTOR_LIBCUDA="$fx/shims/libcuda.so.1" \
        GPUENV_SHIM_MODE="$mode" LECTOR_CUDA_MODULE="$module" LECTOR_CUDA_KERNELS_SHIPPED="$dir/k" "$@" \
        "$lector" doctor --json --no-dlopen 2>/dev/null >"$dir/d.json"
}
check() { # WHAT PYTHON-ASSERTIONS (c: the l5.shipped_kernels check)
    python3 - "$dir/d.json" "$2" <<'PY' || { echo "FAIL $1"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for l in d["layers"] for c in l["checks"] if c["id"] == "l5.shipped_kernels"]
assert c, "no l5.shipped_kernels check"
c = c[0]
try:
    exec(sys.argv[2])
except AssertionError as e:
    sys.exit("%s\n%s" % (e, json.dumps(c, indent=1)))
PY
}
doctor ok
check "an H200 and kernels for sm_90" "assert c['status'] == 'ok' and '$n kernels built by NVRTC ' in c['finding'] and 'for sm_90 (every GPU found)' in c['finding'], 'covered'"
echo "H200 (sm_90): covered, $n kernels"
doctor geforce535
check "an RTX 3090 with NVRTC" "assert c['status'] == 'ok' and 'not for GPU 0' in c['finding'] and '(sm_86)' in c['finding'] and 'compiles them there' in c['finding'], 'NVRTC compiles'"
echo "RTX 3090 (sm_86), NVRTC installed: not covered, compiled on first use"
doctor geforce535 LECTOR_CUDA_NVRTC_LIB="$dir/no/libnvrtc.so"
check "an RTX 3090 without NVRTC" "assert c['status'] == 'warn' and c['code'] == 'lector_kernels_interpreted' and 'nvrtc' in c['fix'] and 'NVRTC is not installed' in c['finding'], 'warned'"
echo "RTX 3090 (sm_86), no NVRTC: warned, fix: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([c for l in d["layers"] for c in l["checks"] if c["id"]=="l5.shipped_kernels"][0]["fix"])' "$dir/d.json")"
# kernels of another NVRTC than the directory names are never read: none for any GPU
echo "NVRTC 12.9" >"$dir/k/NVRTC"
doctor ok
check "files of another NVRTC" "assert c['status'] == 'ok' and ': none;' in c['finding'] and any('$n of $n files' in e for e in c.get('evidence', [])), 'none counted'"
echo "a directory naming another NVRTC than its files': none counted"
echo "doctor_shipped_kernels: passed"
