#!/usr/bin/env bash
# Builds the ONNX fuzz target with clang (-fsanitize=fuzzer,address,undefined)
# and runs it for a bounded time over a seed corpus of small real models
# (ONNX's node tests) and the tensors beside them.
#   run_fuzz.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
src=$1 build=$2 secs=${3:-30}
command -v clang >/dev/null || { echo "skipped: clang not installed"; exit 77; }
out=$build/fuzz
mkdir -p "$out/corpus"
gen=$build/generated
[ -f "$gen/onnx.pb-c.c" ] || { echo "generated protobuf code missing in $gen (build first)"; exit 1; }
srcs=$(ls "$src"/src/util/*.c "$src"/src/rt/*.c "$src"/src/backend/cpu/ref/*.c)
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fopenmp -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
if [ ! -x "$out/fuzz_onnx" ] || [ -n "$(find "$src/src" "$src/tests/fuzz" -newer "$out/fuzz_onnx" -name '*.[ch]' | head -1)" ]; then
  # shellcheck disable=SC2086
  clang $flags -DLECTOR_VERSION_STRING='"fuzz"' -I"$src/include" -I"$src/src" -I"$gen" \
    "$src/tests/fuzz/fuzz_onnx.c" $srcs "$gen/onnx.pb-c.c" -lprotobuf-c -lm -o "$out/fuzz_onnx"
fi
n=0
for d in /usr/include/onnx/backend/test/data/node/test_{relu,add,conv_with_strides_padding,maxpool_2d_default,softmax_axis_1,reshape_reordered_all_dims,slice,concat_2d_axis_0,resize_upsample_scales_linear,matmul_2d}; do
  [ -d "$d" ] || continue
  cp "$d/model.onnx" "$out/corpus/$(basename "$d").onnx"
  cp "$d/test_data_set_0/input_0.pb" "$out/corpus/$(basename "$d").pb"
  n=$((n + 1))
done
echo "fuzz_onnx: $n seed models, ${secs}s"
ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_onnx" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 \
  -timeout=20 -print_final_stats=1 "$out/corpus" 2>&1 | tail -15
