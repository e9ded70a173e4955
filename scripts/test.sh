#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up (packages, models, the ONNX
# Runtime oracle), a normal build with ctest, the same suite built with
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded tests of the
# CPU paths built with ThreadSanitizer (those labelled tsan), then a clang
# build that runs the libFuzzer targets for a bounded time.
#   scripts/test.sh [--no-sanitize] [--no-tsan] [--no-fuzz] [-R REGEX]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sanitize=1; tsan=1; fuzz=1; ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitize) sanitize=0 ;;
    --no-tsan) tsan=0 ;;
    --no-fuzz) fuzz=0 ;;
    -R|-E|-L|-LE) ctest_args+=("$1" "$2"); shift ;;
    *) echo "test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
jobs=$(nproc)
# CI has 90 minutes for all of it: each stage's wall time is printed as it
# ends, and every ctest gets --timeout, the limit of a test that sets none
# (a hang must fail the run, not outlast CI)
stage_start=$SECONDS
stage_end() { echo "== $1 took $((SECONDS - stage_start)) s (total $SECONDS s)" >&2; stage_start=$SECONDS; }

scripts/setup.sh --test-deps
stage_end "set-up and build"
echo "== format (scripts/check-format) and layers (scripts/layers --check)" >&2
scripts/check-format
scripts/layers --check >/dev/null
echo "== ctest (build/)" >&2
ctest --test-dir build --output-on-failure --timeout 900 -j"$jobs" -LE fuzz "${ctest_args[@]}"
stage_end "format and ctest"

if [ $sanitize = 1 ]; then
  scripts/setup.sh --test-deps --build-dir build-asan --sanitize
  echo "== ctest under ASan+UBSan (build-asan/)" >&2
  # detect_leaks: LeakSanitizer runs at exit of every test program
  # LECTOR_TEST_SERVE_CLIENTS: serve.concurrent with 12 clients, not 32 (a read takes seconds here)
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LECTOR_TEST_SERVE_CLIENTS=12 ctest --test-dir build-asan --output-on-failure --timeout 1500 -j"$jobs" -LE 'no_sanitize|fuzz|bundle' "${ctest_args[@]}"
  stage_end "ASan+UBSan build and ctest"
fi

if [ $tsan = 1 ]; then
  # only the targets of the tests labelled tsan (rt.threads, rt.width_masks.ref, debug.facility,
  # ocr.engine_threads, serve.concurrent, cuda.choice_table); no CUDA module in this build
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLECTOR_TSAN=ON >/dev/null
  cmake --build build-tsan --target lector test_threads test_engine_threads test_debug test_width_masks test_choice_table -- -j"$jobs" >&2
  echo "== ctest under ThreadSanitizer (build-tsan/)" >&2
  # tests/tsan.supp: oneDNN's own synchronisation is invisible to TSan
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$top/tests/tsan.supp" \
    LECTOR_TEST_SERVE_CLIENTS=8 ctest --test-dir build-tsan --output-on-failure --timeout 1500 -j"$jobs" -L tsan "${ctest_args[@]}"
  stage_end "TSan build and ctest"
fi

if [ $fuzz = 1 ]; then
  # clang instruments every library for coverage; the fuzz targets link libFuzzer
  scripts/setup.sh --test-deps --build-dir build-fuzz --sanitize -DCMAKE_C_COMPILER=clang \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
  echo "== fuzzing (build-fuzz/)" >&2
  ctest --test-dir build-fuzz --output-on-failure --timeout 600 -j"$jobs" -R fuzz "${ctest_args[@]}"
  stage_end "fuzz build and runs"
fi
