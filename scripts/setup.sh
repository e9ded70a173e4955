#!/usr/bin/env bash
# One-time (idempotent) set-up: Debian packages, models, the ONNX Runtime
# oracle for the tests, and the build. Every README command starts here.
#   scripts/setup.sh [--test-deps] [--bench-deps] [--build-dir DIR] [--sanitize]
#   --bench-deps: what bench/documents/generate.py renders its pages with (Pillow and the fonts,
#   about 40 MB installed; no test needs them)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
test_deps=0; bench_deps=0; build_dir=build; cmake_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --test-deps) test_deps=1 ;;
    --bench-deps) bench_deps=1 ;;
    --build-dir) build_dir=$2; shift ;;
    --sanitize) cmake_extra+=(-DLECTOR_SANITIZE=ON) ;;
    -D*) cmake_extra+=("$1") ;;
    *) echo "setup: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# Build and run-time dependencies (Debian package names).
pkgs="cmake ninja-build gcc pkg-config protobuf-c-compiler libprotobuf-c-dev libonnx-dev
      libdnnl-dev libcjson-dev libturbojpeg0-dev libspng-dev libtiff-dev libwebp-dev libopenjp2-7-dev libfreetype-dev fonts-wqy-microhei libmicrohttpd-dev nettle-dev"
# Node.js and npm fetch the models and run the test oracle; a machine may
# have them from elsewhere (then the Debian packages would conflict).
command -v node >/dev/null || pkgs="$pkgs nodejs"
command -v npm >/dev/null || pkgs="$pkgs npm"
[ $test_deps = 1 ] && pkgs="$pkgs git python3 libcmocka-dev libonnx-testdata clang clang-format libclang-rt-14-dev valgrind
      curl patchelf xz-utils libomp-dev python3-opencv python3-pyclipper python3-shapely python3-numpy"
[ $bench_deps = 1 ] && pkgs="$pkgs python3-pil fonts-dejavu-core fonts-liberation fonts-wqy-microhei fonts-wqy-zenhei
      fonts-arphic-uming"

missing=()
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  if ! $sudo apt-get update -qq >/tmp/lector-apt.log 2>&1; then
    echo "setup: apt-get update failed (is the Debian mirror reachable?); see /tmp/lector-apt.log" >&2
    exit 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/lector-apt.log 2>&1; then
    echo "setup: apt-get install ${missing[*]} failed; see /tmp/lector-apt.log" >&2
    exit 1
  fi
fi

scripts/fetch_models.sh

if [ $test_deps = 1 ]; then
  scripts/fetch_oracle.sh
  scripts/fetch_manifest_validator.sh
fi

# Configured every time (a few seconds): packages installed since the last
# run (the tests' cmocka, say) are then found, and what CMake leaves out says
# so in one line each.
gen=(-G Ninja); [ -f "$build_dir/CMakeCache.txt" ] && gen=()
mkdir -p "$build_dir"
if ! cmake -S . -B "$build_dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_extra[@]}" >"$build_dir/configure.log" 2>&1; then
  cat "$build_dir/configure.log" >&2
  echo "setup: cmake failed (log: $build_dir/configure.log)" >&2
  exit 1
fi
grep -E '^-- (CUDA|.*not built)' "$build_dir/configure.log" >&2 || true
cmake --build "$build_dir" -- -j"$(nproc)" >&2
