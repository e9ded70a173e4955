#!/usr/bin/env bash
# bench/documents/run.sh - the document benchmark: pages the project generates (A4 at 150-300 dpi in English
# and Chinese, receipts, screenshots, some rotated; bench/documents/generate.py) plus the shared SROIE
# receipts and PaddleOCR's document images, read by Lector and by the ONNX Runtime based peer in one run.
#
# usage: bench/documents/run.sh COMMAND [options]
#   generate   the generated pages (default 60) into SET (default BUILD/documents/generated)
#   bench      speed and accuracy on this machine (generates the set first if it is absent):
#                - `lector bench pipeline --device cpu` (one process, warm: after its warm-up pass),
#                - the CLI `lector --format json FILES` and the peer (bench/peers/ocr_node_run.js) on the
#                  same files, pinned to the same CPUs, in R rounds of consecutive files with the order
#                  of the two rotating (bench/pipeline/run.sh's scheme); pages/s = pages / wall seconds
#                  of the processes (model loading included), p50/p99 of each page's own time,
#                - accuracy of both outputs with tools/score (lector-score): line P/R/H-mean and CER
#                  against the boxes of the generated pages and SROIE, word F1 (mode text) on all
#                  three sets (PaddleOCR's images: their hand transcriptions only).
#              Tables on stdout; OUT/speed.json, OUT/scores.tsv, OUT/summary.txt and the engines' output.
#   score      the accuracy table again from OUT's results (RES=DIR: JSON Lines named ENGINE.SET.jsonl,
#              e.g. what the `device` step brought back; then only the images that have a result count)
#   stage      for the accelerator machine: .device/ (git-ignored) with the offline bundle and the data
#              (the generated set, --sroie N SROIE receipts, PaddleOCR's document images); at most 64 MiB
#   device     on the accelerator machine, from the repository root, on what `stage` made: bench pipeline
#              --device cuda in fp32 and fp16 at W workers, the CLI over the same files (fp32, fp16),
#              the CPU rows, the first result's time after process start, and the GPU texts against
#              the CPU's; logs and JSON Lines under $OUT (then `RES=that dir bench/documents/run.sh score`)
# options: --build DIR (build) --out DIR (BUILD/documents) --set DIR (BUILD/documents/generated)
#          --pages N (60) --seed S (19) --threads T (2) --rounds R (3) --sroie N (40; stage: 20)
#          --sets "generated sroie paddle" --engines "pipeline lector ocr-node" --workers W (device: 16)
# env: DATA (../shared/data), CPUS (taskset list, default 0..T-1), PYTHON (/usr/bin/python3),
#      BUNDLE (stage: an offline bundle .tar.xz made already, instead of running scripts/bundle)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/documents
cmd=${1:-}
[ $# -gt 0 ] && shift
ENV_OUT=${OUT:-} # the device tool's folder that comes back
BUILD=$ROOT/build OUT='' SET='' PAGES=60 SEED=19 T=2 ROUNDS=3 SROIE='' SETS="generated sroie paddle"
ENGINES="pipeline lector ocr-node" WORKERS=16
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --set) SET=$2; shift 2 ;;
    --pages) PAGES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --threads) T=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --sroie) SROIE=$2; shift 2 ;;
    --sets) SETS=$2; shift 2 ;;
    --engines) ENGINES=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    -h|--help) sed -n 2,30p "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$BUILD/documents}
SET=${SET:-$BUILD/documents/generated}
DATA=${DATA:-$ROOT/../shared/data}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; } # t0 t1 -> seconds

generate() {
  "$PYTHON" "$HERE/generate.py" --out "$SET" --pages "$PAGES" --seed "$SEED"
}

# file lists and ground truth of each set: $1 = set name, $2 = data root (the generated set's is $SET)
# -> OUT/SET.list (absolute paths), OUT/SET.gt.tsv
lists() {
  local root=$1 gen=$2 n=${SROIE:-40}
  mkdir -p "$OUT"
  for s in $SETS; do
    case $s in
      generated)
        [ -f "$gen/gt.tsv" ] || { echo "run.sh: no generated set in $gen (run.sh generate)" >&2; exit 2; }
        find "$gen/pages" -type f | sort > "$OUT/generated.list"
        cp "$gen/gt.tsv" "$OUT/generated.gt.tsv" ;;
      sroie)
        [ -d "$root/sroie_subset" ] || { echo "run.sh: $root/sroie_subset missing" >&2; exit 77; }
        awk -F'\t' -v d="$root/sroie_subset" 'NR>1 && !seen[$1]++ {print d "/" $1}' "$root/sroie_subset/gt.tsv" |
          while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done > "$OUT/sroie.all"
        head -n "$n" "$OUT/sroie.all" > "$OUT/sroie.list"
        awk -F'\t' -v d="$root/sroie_subset/" 'NR == FNR { keep[substr($0, length(d) + 1)] = 1; next }
                                                 FNR == 1 || keep[$1]' "$OUT/sroie.list" "$root/sroie_subset/gt.tsv" \
          > "$OUT/sroie.gt.tsv" ;;
      paddle)
        # PaddleOCR's document images (imgs/, and the two documents of imgs_en/; its other images are
        # ICDAR2015 scene photos); truth: the rows read by hand (the others are model outputs)
        local d=$root/paddleocr_doc_imgs
        [ -d "$d" ] || { echo "run.sh: $d missing" >&2; exit 77; }
        { find "$d/imgs" -maxdepth 1 -name '*.jpg' | sort; ls "$d/imgs_en/254.jpg" "$d/imgs_en/img623.jpg"; } > "$OUT/paddle.list"
        awk -F'\t' -v d="$d/" 'NR == FNR { keep[substr($0, length(d) + 1)] = 1; next }
          FNR == 1 || (keep[$1] && $5 ~ /^hand transcription/ && ($2 == "line" || $2 == "word" || $2 == "cell"))' \
          "$OUT/paddle.list" "$d/gt.tsv" > "$OUT/paddle.gt.tsv" ;;
      *) echo "run.sh: unknown set $s" >&2; exit 2 ;;
    esac
  done
  : > "$OUT/all.list"
  for s in $SETS; do cat "$OUT/$s.list" >> "$OUT/all.list"; done
}

# accuracy of RES/ENGINE.SET.jsonl for every engine and set found
score() {
  local res=$1 sc=$BUILD/lector-score
  if [ ! -x "$sc" ]; then
    cc -std=c11 -O2 -D_GNU_SOURCE -o "$sc" "$ROOT/tools/score/score.c" -lcjson -lm ||
      { echo "run.sh: cannot build $sc (needs libcjson-dev)" >&2; exit 2; }
  fi
  "$sc" --tsv-header > "$OUT/scores.tsv"
  for s in $SETS; do
    local modes="line text"
    [ "$s" = paddle ] && modes=text   # no boxes in its truth
    for f in "$res"/*."$s".jsonl; do
      [ -f "$f" ] || continue
      local eng; eng=$(basename "$f" ".$s.jsonl")
      for m in $modes; do
        for loose in "" --loose; do
          "$sc" --gt "$OUT/$s.gt.tsv" --res "$f" --name "$s	$eng" --mode $m --tsv $loose ${RES:+--only-present} \
            --per-image "$OUT/per-image.$eng.$s.$m${loose:+.loose}.tsv" 2>>"$OUT/score.log" >> "$OUT/scores.tsv"
        done
      done
    done
  done
  "$PYTHON" "$HERE/report.py" accuracy "$OUT/scores.tsv"
}

# results of one engine over all sets -> one file per set (ENGINE.SET.jsonl), by the file's path
split_sets() { # engine file.jsonl...
  local eng=$1; shift
  for s in $SETS; do
    cat "$@" | "$PYTHON" -c 'import sys, json
want = set(l.strip() for l in open(sys.argv[1]) if l.strip())
for l in sys.stdin:
    try: f = json.loads(l).get("file")
    except ValueError: continue
    if f in want: sys.stdout.write(l)' "$OUT/$s.list" > "$OUT/res/$eng.$s.jsonl"
  done
}

bench() {
  [ -x "$BUILD/lector" ] || { echo "run.sh: $BUILD/lector not built" >&2; exit 2; }
  [ -f "$SET/gt.tsv" ] || generate
  lists "$DATA" "$SET"
  mkdir -p "$OUT/res" "$OUT/runs"
  local n; n=$(wc -l < "$OUT/all.list")
  local CPUS=${CPUS:-$(seq -s, 0 $((T - 1)))}
  local PIN="taskset -c $CPUS"
  command -v taskset >/dev/null || PIN=
  local pipe=-
  declare -A wall
  read -r -a engs <<< "$ENGINES"
  local order=()
  for e in "${engs[@]}"; do
    case $e in
      pipeline)
        echo "== lector bench pipeline, $n files" >&2
        # shellcheck disable=SC2046
        $PIN "$BUILD/lector" bench pipeline --models "$ROOT/models" --device cpu --workers 1 --threads "$T" --rounds 1 \
          --json $(cat "$OUT/all.list") > "$OUT/pipeline.json" 2> "$OUT/pipeline.err" || true
        pipe=$OUT/pipeline.json ;;
      lector|ocr-node) order+=("$e") ;;
      *) echo "run.sh: unknown engine $e" >&2; exit 2 ;;
    esac
  done
  if [ "${#order[@]}" -gt 0 ]; then
    [[ " ${order[*]} " != *" ocr-node "* ]] || [ -d "$ROOT/bench/peers/node_modules/@gutenye/ocr-node" ] ||
      { echo "run.sh: peer not installed (scripts/fetch_peers.sh)" >&2; exit 2; }
    rm -f "$OUT"/runs/*
    local ne=${#order[@]}
    for ((r = 0; r < ROUNDS; r++)); do
      awk -v r=$r -v R="$ROUNDS" -v n="$n" 'NR > int(r * n / R) && NR <= int((r + 1) * n / R)' "$OUT/all.list" \
        > "$OUT/runs/round$r.list"
      [ -s "$OUT/runs/round$r.list" ] || continue
      for ((k = 0; k < ne; k++)); do
        local e=${order[$(((k + r) % ne))]} t0 t1
        t0=$(now)
        case $e in
          lector) xargs -d '\n' -a "$OUT/runs/round$r.list" $PIN "$BUILD/lector" --models "$ROOT/models" \
                    --threads "$T" --format json -q > "$OUT/runs/lector.r$r.jsonl" 2> "$OUT/runs/lector.r$r.err" || true ;;
          ocr-node) $PIN node "$ROOT/bench/peers/ocr_node_run.js" --models "$ROOT/models" --threads "$T" --warmup 0 \
                      --list "$OUT/runs/round$r.list" > "$OUT/runs/ocr-node.r$r.jsonl" 2> "$OUT/runs/ocr-node.r$r.err" || true ;;
        esac
        t1=$(now)
        wall[$e]=$(awk -v w="${wall[$e]:-0}" -v d="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.3f", w + d }')
      done
      echo "== round $((r + 1))/$ROUNDS: $(for e in "${order[@]}"; do printf '%s %.1fs  ' "$e" "${wall[$e]}"; done)" >&2
    done
  fi
  : > "$OUT/walls.tsv"
  for e in "${order[@]}"; do
    local files; files=$(ls "$OUT"/runs/"$e".r*.jsonl | tr '\n' ' ')
    printf '%s\t%s\t%d\t%s\n' "$e" "${wall[$e]}" "$n" "$files" >> "$OUT/walls.tsv"
    # shellcheck disable=SC2086
    split_sets "$e" $files
  done
  {
    echo "document benchmark: $(for s in $SETS; do printf '%s %d  ' "$s" "$(wc -l < "$OUT/$s.list")"; done)files; $T threads, CPUs ${CPUS}, $ROUNDS rounds"
    echo "host: $(nproc) cpus ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "lector: $("$BUILD/lector" --version 2>&1 | head -1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+changes')"
    echo
    "$PYTHON" "$HERE/report.py" speed "$OUT/walls.tsv" "$pipe" "$OUT/speed.json"
    echo
    score "$OUT/res"
  } | tee "$OUT/summary.txt"
}

stage() {
  [ -f "$SET/gt.tsv" ] || generate
  local dev=$ROOT/.device d
  rm -rf "$dev"; mkdir -p "$dev/data"
  if [ -n "${BUNDLE:-}" ]; then cp "$BUNDLE" "$dev/"; else "$ROOT/scripts/bundle" --out "$dev" > /dev/null; fi
  cp -r "$SET" "$dev/data/documents"
  d=$dev/data/sroie_subset; mkdir -p "$d/img"
  cp "$DATA/sroie_subset/gt.tsv" "$d/"
  ls "$DATA/sroie_subset/img" | sort | head -n "${SROIE:-20}" | while read -r f; do cp "$DATA/sroie_subset/img/$f" "$d/img/"; done
  d=$dev/data/paddleocr_doc_imgs; mkdir -p "$d/imgs" "$d/imgs_en"
  cp "$DATA/paddleocr_doc_imgs/gt.tsv" "$d/"
  cp "$DATA"/paddleocr_doc_imgs/imgs/*.jpg "$d/imgs/"
  cp "$DATA/paddleocr_doc_imgs/imgs_en/254.jpg" "$DATA/paddleocr_doc_imgs/imgs_en/img623.jpg" "$d/imgs_en/"
  mkdir -p "$dev/data/letterbox"   # RapidOCR's letterbox cases, read on the GPU too
  cp "$DATA/rapidocr_tests/images/test_without_det.jpg" "$DATA/rapidocr_tests/images/test_letterbox_like.jpg" \
    "$dev/data/letterbox/"
  local kib; kib=$(du -sk "$dev" | cut -f1)
  echo "run.sh stage: $dev holds $((kib / 1024)) MiB (the device tool carries 64 MiB at most)"
  [ "$kib" -le $((64 * 1024)) ] || { echo "run.sh stage: too large: fewer --sroie or --pages" >&2; exit 1; }
  echo "then, on the accelerator machine (repository root, carrying .device):  bench/documents/run.sh device"
}

device() {
  local dev=.device B=/tmp/lector res=${ENV_OUT:-/tmp/out}
  mkdir -p "$B" "$res/res"
  [ -x "$B/bin/lector" ] || tar -C "$B" --strip-components=1 -xJf "$dev"/lector-*.tar.xz
  export LECTOR_CUDA_MODULE=$B/lib/liblector-cuda.so
  local L=$B/bin/lector
  OUT=$res
  SROIE=${SROIE:-1000}
  lists "$dev/data" "$dev/data/documents"
  set +e # a configuration that fails says so in its log; the others still run
  local n; n=$(wc -l < "$OUT/all.list")
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true
  echo "== first result after process start (one page, fresh process each)"
  local first; first=$(head -1 "$OUT/all.list")
  for dv in cuda cpu; do
    local t0 t1 rc
    t0=$(now); $L --device $dv --format json -q "$first" > "$OUT/first-$dv.json" 2>&1; rc=$?; t1=$(now)
    printf '%s: %s s (%s, exit %d)\n' "$dv" "$(elapsed "$t0" "$t1")" "$(basename "$first")" $rc
  done
  echo "== RapidOCR's letterbox cases on the GPU (test_without_det.jpg: one line, 在中国作家协会第三届儿童文学)"
  for f in "$dev"/data/letterbox/*; do
    for fl in "" --fp16; do echo "$(basename "$f") cuda $fl: $($L --device cuda $fl -q "$f" 2>&1 | tr '\n' '|')"; done
  done
  echo "== lector bench pipeline, $n files"
  : > "$OUT/pipeline.jsonl"
  for f in "" --fp16; do
    # shellcheck disable=SC2046
    $L bench pipeline --device cuda --workers "$WORKERS" --rounds "$ROUNDS" $f --json $(cat "$OUT/all.list") \
      2> "$OUT/pipeline$f.err" | tee -a "$OUT/pipeline.jsonl"
  done
  # shellcheck disable=SC2046
  $L bench pipeline --device cpu --workers "$WORKERS" --threads 1 --rounds 1 --json $(cat "$OUT/all.list") \
    2> "$OUT/pipeline-cpu.err" | tee -a "$OUT/pipeline.jsonl"
  echo "== the CLI over the same files (one process each, model loading included)"
  : > "$OUT/walls.tsv"
  for cfg in "cuda:cuda:" "cuda-fp16:cuda:--fp16" "cpu:cpu:--threads $WORKERS"; do
    local tag=lector-${cfg%%:*} rest=${cfg#*:} t0 t1
    local dv=${rest%%:*} fl=${rest#*:}
    t0=$(now)
    # shellcheck disable=SC2046,SC2086
    $L --device $dv $fl --format json -q $(cat "$OUT/all.list") > "$OUT/res/$tag.jsonl" 2> "$OUT/$tag.err" || true
    t1=$(now)
    printf '%s\t%s\t%d\t%s\n' "$tag" "$(elapsed "$t0" "$t1")" "$n" "$OUT/res/$tag.jsonl" >> "$OUT/walls.tsv"
  done
  python3 "$HERE/report.py" speed "$OUT/walls.tsv" - "$OUT/speed.json"
  python3 - "$OUT/pipeline.jsonl" "$OUT/speed.json" <<'PY'
import json, sys
pipe = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
cli = {r["engine"]: r for r in json.load(open(sys.argv[2]))}
for p in pipe:
    print("bench pipeline %s %d workers: %.1f pages/s, p50 %.1f ms, p99 %.1f ms, %d errors" % (
        p["device"], p["workers"], p["pages_per_s"], p["p50_ms"], p["p99_ms"], p["errors"]))
for tag, k in (("lector-cuda", 0), ("lector-cuda-fp16", 1)):
    if tag in cli and k < len(pipe) and pipe[k]["pages_per_s"] > 0:
        print("%s CLI / bench pipeline = %.2f (bar: >= 0.8)" % (tag, cli[tag]["pages_per_s"] / pipe[k]["pages_per_s"]))
PY
  echo "== GPU texts against the CPU's"
  python3 "$HERE/report.py" same "$OUT/res/lector-cpu.jsonl" "$OUT/res/lector-cuda.jsonl" "cuda fp32 vs cpu"
  python3 "$HERE/report.py" same "$OUT/res/lector-cpu.jsonl" "$OUT/res/lector-cuda-fp16.jsonl" "cuda fp16 vs cpu"
  for f in "$OUT"/res/lector-*.jsonl; do
    for s in $SETS; do
      python3 -c 'import sys, json
want = set(l.strip() for l in open(sys.argv[1]) if l.strip())
for l in open(sys.argv[2]):
    try: f = json.loads(l).get("file")
    except ValueError: continue
    if f in want: sys.stdout.write(l)' "$OUT/$s.list" "$f" > "${f%.jsonl}.$s.jsonl"
    done
    rm -f "$f"
  done
  echo "results in $OUT/res (score them on the development machine: RES=DIR bench/documents/run.sh score)"
}

case $cmd in
  generate) generate ;;
  bench) bench ;;
  score)
    lists "$DATA" "$SET"
    score "${RES:-$OUT/res}" | tee "$OUT/accuracy.txt" ;;
  stage) stage ;;
  device) device ;;
  *) sed -n 2,30p "$0" >&2; exit 2 ;;
esac
