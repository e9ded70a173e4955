#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up (packages, models, the ONNX
# Runtime oracle), a normal build with ctest, then the same suite built with
# AddressSanitizer + UndefinedBehaviorSanitizer.
#   scripts/test.sh [--no-sanitize] [-R REGEX]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sanitize=1; ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitize) sanitize=0 ;;
    -R|-E|-L|-LE) ctest_args+=("$1" "$2"); shift ;;
    *) echo "test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
jobs=$(nproc)

scripts/setup.sh --test-deps
echo "== ctest (build/)" >&2
ctest --test-dir build --output-on-failure -j"$jobs" "${ctest_args[@]}"

if [ $sanitize = 1 ]; then
  scripts/setup.sh --test-deps --build-dir build-asan --sanitize
  echo "== ctest under ASan+UBSan (build-asan/)" >&2
  # detect_leaks: LeakSanitizer runs at exit of every test program
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE no_sanitize "${ctest_args[@]}"
fi
