#!/bin/bash
# cuda.algo_cache: the algorithm choices kept between processes: cuDNN's
# convolution algorithms (src/backend/cuda/cuda_algos.c) in fp32, and with
# --fp16 cuBLASLt's product algorithms as well (src/backend/cuda/cuda_gemm.c).
# For each, a first process with an empty cache writes its choices; a second
# reads them, makes none of its own (each choice it needed was in the file)
# and reads every line as the CPU engine does (test_cuda_engine same: the
# CPU's text is the oracle; with --fp16, its 99.5% bar).
# Usage: algo_cache.sh TEST_CUDA_ENGINE --models DIR IMAGE...
set -u
engine=$1
shift
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
export LECTOR_LOG=debug
fail() {
    echo "FAIL $1"
    shift
    for f in "$@"; do grep -v "^lector: debug" "$f" | tail -20; done
    exit 1
}
# pair TAG WHAT MADE_PATTERN [--fp16]: two processes in a new cache; WHAT names the file's choices in the log
pair() {
    local tag=$1 what=$2 made=$3 dir=$top/$1
    shift 3
    mkdir -p "$dir"
    XDG_CACHE_HOME=$dir "$engine" same "$@" >"$dir/1.out" 2>"$dir/1.err"
    r=$?
    if [ $r = 77 ]; then
        echo "skipped: no GPU"
        exit 77
    fi
    [ $r = 0 ] || fail "$tag: the first process (exit $r)" "$dir/1.out" "$dir/1.err"
    written=$(grep -c "$what choices written to the kernel cache" "$dir/1.err")
    [ "$written" -gt 0 ] || fail "$tag: the first process wrote no $what choices" "$dir/1.err"
    ls "$dir"/lector/kernels/*.kc >/dev/null 2>&1 || fail "$tag: no cache file in $dir/lector/kernels" "$dir/1.err"
    XDG_CACHE_HOME=$dir "$engine" same "$@" >"$dir/2.out" 2>"$dir/2.err"
    r=$?
    [ $r = 0 ] || fail "$tag: the second process (exit $r): its text against the CPU's" "$dir/2.out" "$dir/2.err"
    read_n=$(sed -n "s/.* \([0-9][0-9]*\) $what choices read from the kernel cache.*/\1/p" "$dir/2.err" |
        awk '{s += $1} END {print s + 0}')
    [ "$read_n" -gt 0 ] || fail "$tag: the second process read no $what choices" "$dir/2.err"
    if grep -q -E "$made" "$dir/2.err"; then
        fail "$tag: the second process made choices the first had made: $(grep -m3 -E "$made" "$dir/2.err")"
    fi
    echo "$tag: the first process wrote its $what choices ($written writes); the second read $read_n, made none, and read as the CPU does"
}
pair cudnn "convolution algorithm" "convolution algorithm choices written" "$@"
pair cublaslt "cuBLASLt algorithm" "cuBLASLt (class|shape) .*: " --fp16 "$@"
echo "algo_cache: passed"
