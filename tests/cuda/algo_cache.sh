#!/bin/bash
# cuda.algo_cache: cuDNN's convolution algorithm choices kept between
# processes (src/backend/cuda/cuda_algos.c). A first process with an empty
# cache writes its choices; a second reads them, makes none of its own (each
# choice it needed was in the file) and reads every line as the CPU engine
# does (test_cuda_engine same: the CPU's text is the oracle).
# Usage: algo_cache.sh TEST_CUDA_ENGINE --models DIR IMAGE...
set -u
engine=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export XDG_CACHE_HOME=$dir LECTOR_LOG=debug
fail() {
    echo "FAIL $1"
    shift
    for f in "$@"; do grep -v "^lector: debug" "$f" | tail -20; done
    exit 1
}
"$engine" same "$@" >"$dir/1.out" 2>"$dir/1.err"
r=$?
if [ $r = 77 ]; then
    echo "skipped: no GPU"
    exit 77
fi
[ $r = 0 ] || fail "the first process (exit $r)" "$dir/1.out" "$dir/1.err"
written=$(grep -c "convolution algorithm choices written to the kernel cache" "$dir/1.err")
[ "$written" -gt 0 ] || fail "the first process wrote no algorithm choices" "$dir/1.err"
ls "$dir"/lector/kernels/*.kc >/dev/null 2>&1 || fail "no cache file in $dir/lector/kernels" "$dir/1.err"
"$engine" same "$@" >"$dir/2.out" 2>"$dir/2.err"
r=$?
[ $r = 0 ] || fail "the second process (exit $r): its text against the CPU's" "$dir/2.out" "$dir/2.err"
read_n=$(sed -n 's/.* \([0-9][0-9]*\) convolution algorithm choices read from the kernel cache.*/\1/p' "$dir/2.err" |
    awk '{s += $1} END {print s + 0}')
[ "$read_n" -gt 0 ] || fail "the second process read no algorithm choices" "$dir/2.err"
if grep -q "convolution algorithm choices written" "$dir/2.err"; then
    fail "the second process made choices the first had made: $(grep -m3 "choices written" "$dir/2.err")"
fi
echo "the first process wrote its choices ($written writes); the second read $read_n, made none, and read as the CPU does"
echo "algo_cache: passed"
