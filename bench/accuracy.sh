#!/usr/bin/env bash
# Accuracy run: Lector and the @gutenye/ocr-node peer (ONNX Runtime) on ICDAR2015 test (500 images)
# and the SROIE subset (40 receipts), same machine, same run, then scored by the same tool
# (tools/score/lector-score).  Results: docs/ACCURACY.md is written by hand from $OUT/summary.md.
#
# usage: bench/accuracy.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  a Lector build with build/lector and build/lector-score (default: build)
#   OUT_DIR    where JSON Lines, timings and scores go (default: BUILD_DIR/accuracy)
# env: DATA (default ../shared/data), THREADS (2), SETS ("icdar2015_test sroie_subset"),
#      ENGINES ("lector ocr-node"), LECTOR_ARGS (extra lector options, e.g. "--backend ref"),
#      SCORE_ONLY=1 (re-score existing results without running the engines),
#      RESUME=1 (keep images already done in earlier shards; wall time then covers only the rest),
#      LECTOR_THREADS (default THREADS), PEER_THREADS (default THREADS), JOBS=N (shards per engine, run in parallel; default 1), SERIAL=1 (one engine/set at a time)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
OUT=${2:-$BUILD/accuracy}
DATA=${DATA:-$ROOT/../shared/data}
THREADS=${THREADS:-2}
LECTOR_THREADS=${LECTOR_THREADS:-$THREADS}
PEER_THREADS=${PEER_THREADS:-$THREADS}
SETS=${SETS:-"icdar2015_test sroie_subset"}
ENGINES=${ENGINES:-"lector ocr-node"}
LECTOR_ARGS=${LECTOR_ARGS:-}
SCORE=$BUILD/lector-score
[ -x "$BUILD/lector" ] || { echo "accuracy.sh: $BUILD/lector not built" >&2; exit 2; }
if [ ! -x "$SCORE" ]; then   # normally built by CMake (tools/score); else compile it here
  cc -std=c11 -O2 -D_GNU_SOURCE -o "$SCORE" "$ROOT/tools/score/score.c" -lcjson -lm ||
    { echo "accuracy.sh: cannot build $SCORE (needs libcjson-dev)" >&2; exit 2; }
fi
[ -d "$DATA" ] || { echo "accuracy.sh: data dir $DATA missing" >&2; exit 77; }
if [[ " $ENGINES " == *" ocr-node "* ]] && [ ! -d "$ROOT/bench/peers/node_modules/@gutenye/ocr-node" ]; then
  echo "accuracy.sh: peer not installed; run scripts/fetch_peers.sh" >&2; exit 2
fi
mkdir -p "$OUT"
now() { date +%s.%N; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "lector: $("$BUILD/lector" --version 2>&1 | head -1) args: --threads $LECTOR_THREADS $LECTOR_ARGS"
  echo "ocr-node: $(node -p "require('$ROOT/bench/peers/node_modules/@gutenye/ocr-node/package.json').version" 2>/dev/null) onnxruntime-node $(node -p "require('$ROOT/bench/peers/node_modules/onnxruntime-node/package.json').version" 2>/dev/null) intra-op threads $PEER_THREADS"
} > "$OUT/env.txt.new"
[ -z "${SCORE_ONLY:-}" ] && cat "$OUT/env.txt.new" >> "$OUT/env.txt"; rm -f "$OUT/env.txt.new"

# One job per (set, engine, shard); JOBS shards per engine, all started together.  Accuracy does not
# depend on scheduling; images/s here is the wall time of each engine's shards divided into the
# image count (it is only comparable within one run; docs/BENCHMARKS.md has the speed benchmark).
JOBS=${JOBS:-1}
run_engine() { # set eng list res
  case $2 in
    lector)   xargs -d '\n' -a "$3" "$BUILD/lector" --models "$ROOT/models" --threads "$LECTOR_THREADS" $LECTOR_ARGS \
                --format json -q > "$4" 2> "$4.err" || true ;;
    ocr-node) node "$ROOT/bench/peers/ocr_node_run.js" --models "$ROOT/models" --threads "$PEER_THREADS" \
                --list "$3" > "$4" 2> "$4.err" || true ;;
  esac
}
pids=()
for set in $SETS; do
  d=$DATA/$set
  # images in gt.tsv order (first occurrence), absolute paths
  awk -F'\t' -v d="$d" 'NR>1 && !seen[$1]++ {print d "/" $1}' "$d/gt.tsv" > "$OUT/$set.list"
  [ -n "${SCORE_ONLY:-}" ] && continue
  n=$(wc -l < "$OUT/$set.list")
  for eng in $ENGINES; do
    echo "== $set ($n images): $eng, $JOBS shard(s)" >&2
    (
      if [ -n "${RESUME:-}" ]; then   # keep finished images, run the rest as new shards
        cat "$OUT/$set.$eng".shard*.jsonl 2>/dev/null | grep -v '"error":"' > "$OUT/$set.$eng.done.jsonl.tmp" || true
        rm -f "$OUT/$set.$eng".shard*
        mv "$OUT/$set.$eng.done.jsonl.tmp" "$OUT/$set.$eng.shardD.jsonl"
        node -e 'const fs=require("fs");const done=new Set(fs.readFileSync(process.argv[1],"utf8").split("\n").filter(Boolean).map(l=>JSON.parse(l).file));for(const f of fs.readFileSync(process.argv[2],"utf8").split("\n").filter(Boolean))if(!done.has(f))console.log(f)' \
          "$OUT/$set.$eng.shardD.jsonl" "$OUT/$set.list" > "$OUT/$set.$eng.todo"
      else
        rm -f "$OUT/$set.$eng".shard*
        cp "$OUT/$set.list" "$OUT/$set.$eng.todo"
      fi
      t0=$(now)
      spids=()
      for ((k = 0; k < JOBS; k++)); do
        awk -v k=$k -v j=$JOBS '(NR - 1) % j == k' "$OUT/$set.$eng.todo" > "$OUT/$set.$eng.shard$k.list"
        run_engine "$set" "$eng" "$OUT/$set.$eng.shard$k.list" "$OUT/$set.$eng.shard$k.jsonl" &
        spids+=($!)
      done
      wait "${spids[@]}"
      t1=$(now)
      cat "$OUT/$set.$eng".shard*.jsonl > "$OUT/$set.$eng.jsonl"
      echo "$set $eng $n $(echo "$t1 - $t0" | bc) $JOBS" >> "$OUT/walltime.txt"
    ) &
    pids+=($!)
    [ -n "${SERIAL:-}" ] && wait $!
  done
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"

# score (same tool, same options, for every engine)
"$SCORE" --tsv-header > "$OUT/scores.tsv"
for set in $SETS; do
  mode=line; [ "$set" = icdar2015_test ] && mode=both
  for eng in $ENGINES; do
    wall=$(awk -v s="$set" -v e="$eng" '$1==s && $2==e {w=$4; n=$3} END {print w}' "$OUT/walltime.txt")
    for loose in "" --loose; do
      "$SCORE" --gt "$DATA/$set/gt.tsv" --res "$OUT/$set.$eng.jsonl" --name "$set	$eng" --mode $mode \
         --wall "$wall" --tsv $loose --per-image "$OUT/$set.$eng${loose:+.loose}.per-image.tsv" >> "$OUT/scores.tsv"
    done
  done
done
cat "$OUT/env.txt"; column -t -s$'\t' "$OUT/scores.tsv"
