#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up (packages, models, the ONNX
# Runtime oracle), a normal build with ctest, the same suite built with
# AddressSanitizer + UndefinedBehaviorSanitizer, then a clang build that runs
# the libFuzzer targets for a bounded time.
#   scripts/test.sh [--no-sanitize] [--no-fuzz] [-R REGEX]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sanitize=1; fuzz=1; ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitize) sanitize=0 ;;
    --no-fuzz) fuzz=0 ;;
    -R|-E|-L|-LE) ctest_args+=("$1" "$2"); shift ;;
    *) echo "test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
jobs=$(nproc)

scripts/setup.sh --test-deps
echo "== format (scripts/check-format)" >&2
scripts/check-format
echo "== ctest (build/)" >&2
ctest --test-dir build --output-on-failure -j"$jobs" -LE fuzz "${ctest_args[@]}"

if [ $sanitize = 1 ]; then
  scripts/setup.sh --test-deps --build-dir build-asan --sanitize
  echo "== ctest under ASan+UBSan (build-asan/)" >&2
  # detect_leaks: LeakSanitizer runs at exit of every test program
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE 'no_sanitize|fuzz|bundle' "${ctest_args[@]}"
fi

if [ $fuzz = 1 ]; then
  # clang instruments every library for coverage; the fuzz targets link libFuzzer
  scripts/setup.sh --test-deps --build-dir build-fuzz --sanitize -DCMAKE_C_COMPILER=clang \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
  echo "== fuzzing (build-fuzz/)" >&2
  ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -R fuzz "${ctest_args[@]}"
fi
