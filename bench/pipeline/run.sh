#!/usr/bin/env bash
# End-to-end OCR throughput (pages/s) on ICDAR2015 test images, one run, three engines, same cores:
#   Lector (build/lector, --workers T --threads 1), @gutenye/ocr-node (ONNX Runtime, intra-op threads T) and
#   Tesseract 5 (-l chi_sim+eng, OMP_THREAD_LIMIT=T).
# Every engine is one process that reads the models once and then all images in sequence (Lector:
# all files on one command line; ocr-node: bench/peers/ocr_node_run.js; Tesseract: a list file).
# pages/s = images / wall-clock seconds of that process (model loading included, as a user sees it).
# All processes are pinned to the same CPUs with taskset (CPUS, default: the first T).
#
# usage: bench/pipeline/run.sh [--build DIR] [--images N] [--threads T] [--engines "lector ocr-node tesseract"]
#                              [--json FILE] [--out DIR] [--lector-args "..."] [--list FILE]
#   --images N  the first N test images in numeric order img_1..img_N (default 100; 500 = all)
#   --list FILE the images named in FILE (one path a line) instead of ICDAR2015's, e.g. document pages
#   engine lector-base: Lector from --base-build DIR (another commit's build, for before/after in one run)
#   --rounds R  split the images into R consecutive chunks and run every engine on each chunk in
#               turn, rotating the engine order (default 5), so that load changes on a shared
#               machine hit all engines alike; wall time is summed per engine (R model loads each)
#   engine lector-onednn: Lector with --backend onednn from --onednn-build DIR (default --build);
#   engine lector-ref: Lector with --backend ref (plain-C reference kernels)
# env: DATA (default ../shared/data), CPUS (taskset list, default 0..T-1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
N=100
T=2
ENGINES="lector ocr-node tesseract"
JSON=
OUT=
LECTOR_ARGS=
ONEDNN_BUILD=
ROUNDS=5
USER_LIST=
BASE_BUILD=
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --images) N=$2; shift 2 ;;
    --threads) T=$2; shift 2 ;;
    --engines) ENGINES=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --lector-args) LECTOR_ARGS=$2; shift 2 ;;
    --onednn-build) ONEDNN_BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --list) USER_LIST=$2; shift 2 ;;
    --base-build) BASE_BUILD=$2; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
DATA=${DATA:-$ROOT/../shared/data}
IMGDIR=$DATA/icdar2015_test/ch4_test_images
[ -n "$USER_LIST" ] || [ -d "$IMGDIR" ] || { echo "run.sh: $IMGDIR missing" >&2; exit 77; }
OUT=${OUT:-$BUILD/bench-pipeline}
mkdir -p "$OUT"
CPUS=${CPUS:-$(seq -s, 0 $((T - 1)))}
PIN="taskset -c $CPUS"
command -v taskset >/dev/null || PIN=
LIST=$OUT/images.txt
if [ -n "$USER_LIST" ]; then
  grep -v '^\s*$' "$USER_LIST" > "$LIST"
  N=$(wc -l < "$LIST")
else
  for ((i = 1; i <= N; i++)); do echo "$IMGDIR/img_$i.jpg"; done > "$LIST"
fi
now() { date +%s.%N; }

declare -A wall
rm -f "$OUT"/cpu-*.txt
read_with_lector() { # time-prefix binary list jsonl [lector args...]: one Lector process over every image of list
  local tm=$1 bin=$2 list=$3 jsonl=$4
  shift 4
  # shellcheck disable=SC2086
  $tm xargs -d '\n' -a "$list" $PIN "$bin" --models "$ROOT/models" "$@" --format json -q > "$jsonl"
}
run_one() { # engine list outsuffix
  local eng=$1 LIST=$2 sfx=$3 t0 t1
  local TM=
  [ -x /usr/bin/time ] && TM="/usr/bin/time -a -o $OUT/cpu-$eng.txt -f %U+%S"
  case $eng in # what the engine needs, checked before the clock starts
    lector) [ -x "$BUILD/lector" ] || { echo "run.sh: $BUILD/lector not built" >&2; exit 2; } ;;
    lector-base)
      [ -x "$BASE_BUILD/lector" ] || { echo "run.sh: --base-build DIR with a built lector is needed" >&2; exit 2; } ;;
    ocr-node)
      [ -d "$ROOT/bench/peers/node_modules/@gutenye/ocr-node" ] || { echo "run.sh: run scripts/fetch_peers.sh" >&2; exit 2; } ;;
    tesseract)
      command -v tesseract >/dev/null || { echo "run.sh: tesseract not installed (apt-get install tesseract-ocr tesseract-ocr-chi-sim)" >&2; exit 2; } ;;
  esac
  t0=$(now)
  case $eng in
    lector)
      # T cores: T workers of one inference thread each (lector_params.workers)
      # shellcheck disable=SC2086
      read_with_lector "$TM" "$BUILD/lector" "$LIST" "$OUT/lector$sfx.jsonl" --workers "$T" --threads 1 $LECTOR_ARGS ;;
    lector-onednn)
      read_with_lector "$TM" "${ONEDNN_BUILD:-$BUILD}/lector" "$LIST" "$OUT/lector-onednn$sfx.jsonl" --threads "$T" \
        --backend onednn ;;
    lector-base) read_with_lector "$TM" "$BASE_BUILD/lector" "$LIST" "$OUT/lector-base$sfx.jsonl" --threads "$T" ;;
    lector-ref)
      read_with_lector "$TM" "$BUILD/lector" "$LIST" "$OUT/lector-ref$sfx.jsonl" --threads "$T" --backend ref ;;
    ocr-node)
      $TM $PIN node "$ROOT/bench/peers/ocr_node_run.js" --models "$ROOT/models" --threads "$T" --warmup 0 \
        --list "$LIST" > "$OUT/ocr-node$sfx.jsonl" ;;
    tesseract)
      OMP_THREAD_LIMIT=$T $TM $PIN tesseract "$LIST" "$OUT/tesseract$sfx" -l chi_sim+eng >/dev/null 2>"$OUT/tesseract$sfx.err" ;;
    *) echo "run.sh: unknown engine $eng" >&2; exit 2 ;;
  esac
  t1=$(now)
  wall[$eng]=$(echo "${wall[$eng]:-0} + $t1 - $t0" | bc)
}
read -r -a engs <<< "$ENGINES"
ne=${#engs[@]}
for ((r = 0; r < ROUNDS; r++)); do
  awk -v r=$r -v R=$ROUNDS -v n=$N 'NR > int(r * n / R) && NR <= int((r + 1) * n / R)' "$LIST" > "$OUT/round$r.txt"
  [ -s "$OUT/round$r.txt" ] || continue
  for ((k = 0; k < ne; k++)); do
    eng=${engs[$(((k + r) % ne))]}
    run_one "$eng" "$OUT/round$r.txt" ".r$r"
  done
  echo "run.sh: round $((r + 1))/$ROUNDS done: $(for e in "${engs[@]}"; do printf '%s %.1fs  ' "$e" "${wall[$e]}"; done)" >&2
done

host="$(nproc) cpus ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
backend=$("$BUILD/lector" --version 2>&1 | head -1)
if [ -n "$USER_LIST" ]; then
  printf '\n%d images of %s, %d threads, pinned to CPUs %s, %d rounds\n' "$N" "$USER_LIST" "$T" "$CPUS" "$ROUNDS"
else
  printf '\nICDAR2015 test images img_1..img_%d (%s), %d threads, pinned to CPUs %s, %d rounds\n' "$N" "1280x720 JPEG" "$T" "$CPUS" "$ROUNDS"
fi
printf 'host: %s\n' "$host"
printf '%-14s %7s %9s %9s %14s %9s %12s\n' engine images wall_s pages/s lector/engine cpu_s pages/cpu_s
lps=
[ -n "${wall[lector]:-}" ] && lps=$(printf '%.6f' "$(echo "scale=6; $N / ${wall[lector]}" | bc)")
json="{\"images\":$N,\"rounds\":$ROUNDS,\"threads\":$T,\"cpus\":\"$CPUS\",\"host\":\"$host\",\"lector\":\"$backend\",\"engines\":["
sep=
for eng in $ENGINES; do
  ps=$(printf '%.6f' "$(echo "scale=6; $N / ${wall[$eng]}" | bc)")
  ratio=-
  [ -n "$lps" ] && ratio=$(printf "%.3f" "$(echo "scale=6; $lps / $ps" | bc)")
  cpu=0
  [ -f "$OUT/cpu-$eng.txt" ] && cpu=$(paste -sd+ "$OUT/cpu-$eng.txt" | bc)
  cps=0
  [ "$(echo "$cpu > 0" | bc)" = 1 ] && cps=$(printf '%.6f' "$(echo "scale=6; $N / $cpu" | bc)")
  printf '%-14s %7d %9.2f %9.3f %14s %9.2f %12.3f\n' "$eng" "$N" "${wall[$eng]}" "$ps" "$ratio" "$cpu" "$cps"
  json+="$sep{\"engine\":\"$eng\",\"wall_s\":${wall[$eng]},\"pages_per_s\":$ps,\"lector_ratio\":\"$ratio\",\"cpu_s\":$cpu,\"pages_per_cpu_s\":$cps}"
  sep=,
done
json+="]}"
if [ -n "${wall[ocr-node]:-}" ]; then
  pps=$(echo "scale=6; $N / ${wall[ocr-node]}" | bc)
  for e in lector lector-base lector-onednn lector-ref; do
    [ -n "${wall[$e]:-}" ] && printf 'ratio %s / ocr-node = %.2f (bar: >= 1.5)\n' "$e" "$(echo "scale=6; $N / ${wall[$e]} / $pps" | bc)"
  done
fi
echo "$json" > "$OUT/bench.json"
[ -n "$JSON" ] && echo "$json" > "$JSON"
exit 0
