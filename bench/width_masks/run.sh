#!/usr/bin/env bash
# bench/width_masks/run.sh [LECTOR] [SHARED_DATA] - does rec_width_bucket
# (width masks) change any line? The CLI over 40 SROIE receipts, PaddleOCR's
# document images and 150 ICDAR2015 images, three ways: each line at its own
# width (--rec-width-bucket 0), --rec-width-bucket 64 (the default), and the
# same buckets without masks (--rec-width-bucket 0 with LECTOR_REC_PAD=64);
# then each run's lines against those at their own width: text, box, score. docs/ACCURACY.md has the figures.
set -euo pipefail
L=${1:-build/lector}
D=${2:-../shared/data}
out=$(mktemp -d)
{ ls "$D"/sroie_subset/img/*.jpg "$D"/paddleocr_doc_imgs/imgs/*; ls "$D"/icdar2015_test/ch4_test_images/*.jpg | sed -n 1,150p; } >"$out/list.txt"
echo "$(wc -l <"$out/list.txt") images"
run() { # name env args...
  local name=$1 env=$2; shift 2
  local t0 t1; t0=$(date +%s.%N)
  env $env "$L" --workers 2 "$@" --format json -q $(cat "$out/list.txt") >"$out/$name.jsonl" 2>/dev/null
  t1=$(date +%s.%N)
  echo "$name: $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s"
}
run own LECTOR_REC_PAD=1 --rec-width-bucket 0
run masks64 LECTOR_REC_PAD=1 --rec-width-bucket 64
run pad64 LECTOR_REC_PAD=64 --rec-width-bucket 0
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
def load(name):
    r = {}
    for line in open(f"{d}/{name}.jsonl"):
        if line.strip():
            j = json.loads(line)
            r[j["file"]] = [(l["text"], l["score"], l["box"]) for p in j["pages"] for l in p["lines"]]
    return r
own = load("own")
for name, what in (("masks64", "--rec-width-bucket 64 (width masks)"), ("pad64", "LECTOR_REC_PAD=64 (no masks)")):
    other = load(name)
    n = text = box = score = 0
    for f, lines in own.items():
        o = other.get(f, [])
        if len(o) != len(lines):
            print(f"{f}: {len(o)} lines against {len(lines)}")
            continue
        for a, b in zip(lines, o):
            n += 1
            text += a[0] != b[0]
            box += a[2] != b[2]
            score += abs(a[1] - b[1]) > 1e-4
    print(f"{what}: {n} lines, {text} texts ({100 * text / max(n, 1):.2f}%), {box} boxes, "
          f"{score} scores (> 1e-4) unlike the default")
PY
rm -rf "$out"
