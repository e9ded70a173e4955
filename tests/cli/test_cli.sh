#!/usr/bin/env bash
# End-to-end tests of the `lector` command line on the committed sample image.
# Truth: the hand transcription of PaddleOCR's doc/imgs/11.jpg
# (../shared/data/paddleocr_doc_imgs/gt.tsv, copied in samples/SOURCE.md).
#   test_cli.sh LECTOR MODELS_DIR SAMPLE_IMAGE
set -u
lector=$1 models=$2 sample=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
run() { "$lector" --models "$models" --threads 2 "$@"; }

"$lector" --version | grep -q '^lector [0-9]' && ok || ko "--version"
"$lector" --help >/dev/null && ok || ko "--help exit code"

# txt: lines in reading order
run "$sample" >"$tmp/out.txt" 2>"$tmp/err" || ko "txt run failed: $(cat "$tmp/err")"
head -1 "$tmp/out.txt" | grep -qx '纯臻营养护发素' && ok || ko "txt first line: $(head -1 "$tmp/out.txt")"
grep -q 'YM-X-3011' "$tmp/out.txt" && ok || ko "txt: product number line missing"
grep -q '220ml' "$tmp/out.txt" && ok || ko "txt: 220ml missing"
n=$(wc -l <"$tmp/out.txt"); [ "$n" -ge 12 ] && ok || ko "txt: only $n lines"

# json: one object per file, the documented fields
run --format json "$sample" >"$tmp/out.json" || ko "json run failed"
/usr/bin/python3 - "$tmp/out.json" "$sample" <<'PY' && ok || ko "json structure"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(objs) == 1, objs
o = objs[0]
assert o["file"] == sys.argv[2] and o["error"] is None
pg = o["pages"][0]
assert (pg["width"], pg["height"]) == (500, 500)
assert pg["lines"][0]["text"] == "纯臻营养护发素"
for l in pg["lines"]:
    assert 0.5 <= l["score"] <= 1 and len(l["box"]) == 4
    xs = [p[0] for p in l["box"]]; ys = [p[1] for p in l["box"]]
    assert min(xs) >= 0 and max(xs) < 500 and min(ys) >= 0 and max(ys) < 500
for k in ("decode", "det", "cls", "rec", "total"):
    assert o["timings_ms"][k] >= 0
PY

# tsv: Tesseract's header and one level-4 row per line
run --format tsv "$sample" >"$tmp/out.tsv" || ko "tsv run failed"
head -1 "$tmp/out.tsv" | grep -q $'^level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext$' && ok || ko "tsv header"
[ "$(awk -F'\t' '$1==4' "$tmp/out.tsv" | wc -l)" -eq "$n" ] && ok || ko "tsv: line rows != txt lines"
awk -F'\t' '$1==4 && NF!=12 {bad=1} END {exit bad}' "$tmp/out.tsv" && ok || ko "tsv: rows without 12 columns"

# hocr: well-formed XHTML, hocr-tools' structure rules (hocr-check/hocr-lint):
# ocr_line inside ocr_par inside ocr_carea inside ocr_page, bboxes inside the
# page, every class used is declared in ocr-capabilities
run --format hocr "$sample" >"$tmp/out.hocr" || ko "hocr run failed"
/usr/bin/python3 - "$tmp/out.hocr" <<'PY' && ok || ko "hocr validation"
import re, sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/1999/xhtml}"
root = ET.parse(sys.argv[1]).getroot()
caps = [m.get("content") for m in root.iter(ns + "meta") if m.get("name") == "ocr-capabilities"]
assert caps, "no ocr-capabilities"
caps = set(caps[0].split())
assert any(m.get("name") == "ocr-system" for m in root.iter(ns + "meta"))
def bbox(e):
    m = re.search(r"bbox (\d+) (\d+) (\d+) (\d+)", e.get("title", ""))
    assert m, "element without bbox: %s" % e.get("class")
    return tuple(map(int, m.groups()))
pages = [e for e in root.iter() if e.get("class") == "ocr_page"]
assert len(pages) == 1
lines = 0
for page in pages:
    pb = bbox(page)
    for e in page.iter():
        c = e.get("class")
        if c is None: continue
        assert c in caps, "class %s not declared" % c
        b = bbox(e)
        assert pb[0] <= b[0] <= b[2] <= pb[2] and pb[1] <= b[1] <= b[3] <= pb[3], (c, b, pb)
    for area in page.iter(ns + "div"):
        if area.get("class") != "ocr_carea": continue
        for par in area:
            assert par.get("class") == "ocr_par"
            for line in par:
                assert line.get("class") == "ocr_line" and (line.text or "").strip()
                assert re.search(r"x_wconf \d+", line.get("title"))
                lines += 1
assert lines >= 12, lines
PY

# many files through one engine: a bad one is reported, the others go on, exit 1
printf 'not an image' >"$tmp/bad.jpg"
run --format json "$sample" "$tmp/bad.jpg" "$sample" >"$tmp/multi.json" 2>"$tmp/multi.err"
rc=$?
[ $rc -eq 1 ] && ok || ko "exit code with a bad file: $rc"
[ "$(wc -l <"$tmp/multi.json")" -eq 3 ] && ok || ko "json lines for 3 inputs"
grep -q "bad.jpg" "$tmp/multi.err" && ok || ko "error message does not name the file"
/usr/bin/python3 -c "
import json,sys
o=[json.loads(l) for l in open(sys.argv[1])]
assert o[1]['error'] and 'bad.jpg' in o[1]['error'] and o[1]['pages']==[]
assert o[0]['pages'][0]['lines'][0]['text']==o[2]['pages'][0]['lines'][0]['text']
" "$tmp/multi.json" && ok || ko "json error object"
run "$tmp/does-not-exist.png" >/dev/null 2>"$tmp/e2"; [ $? -eq 1 ] && grep -q "does-not-exist.png" "$tmp/e2" && ok || ko "missing file"

# standard input
run - <"$sample" | head -1 | grep -qx '纯臻营养护发素' && ok || ko "stdin"

# bad usage: exit 2
run --format pdf "$sample" >/dev/null 2>&1; [ $? -eq 2 ] && ok || ko "unknown format exit code"
run --no-such-option "$sample" >/dev/null 2>&1; [ $? -eq 2 ] && ok || ko "unknown option exit code"
run --det-db-thresh abc "$sample" >/dev/null 2>&1; [ $? -eq 2 ] && ok || ko "bad number exit code"
run --device cuda:x "$sample" >/dev/null 2>&1; [ $? -eq 2 ] && ok || ko "bad device exit code"
run --gpu-mem-limit 3X "$sample" >/dev/null 2>&1; [ $? -eq 2 ] && ok || ko "bad --gpu-mem-limit exit code"
# a parameter out of its range: the engine refuses it by name (exit 1), nothing read
run --rec-crop-margin 1.5 "$sample" >"$tmp/m.txt" 2>"$tmp/em"; rc=$?
[ $rc -eq 1 ] && [ ! -s "$tmp/m.txt" ] && grep -q "rec_crop_margin must be in \[0, 1\]" "$tmp/em" && ok ||
  ko "--rec-crop-margin 1.5: rc $rc, $(cat "$tmp/em")"

# the GPU, when there is none usable: auto runs on the CPU with one line saying
# why and the CPU's results; cuda fails with that reason (exit 1)
run --device auto "$sample" >"$tmp/auto.txt" 2>"$tmp/ea" && ok || ko "device auto failed: $(cat "$tmp/ea")"
if grep -q "^lector: device: cpu" "$tmp/ea"; then
  [ "$(wc -l <"$tmp/ea")" -eq 1 ] && grep -q "\[auto: device cuda: .\+\]" "$tmp/ea" && ok ||
    ko "device auto: expected one line with the reason: $(cat "$tmp/ea")"
  cmp -s "$tmp/auto.txt" "$tmp/out.txt" && ok || ko "device auto on the CPU differs from --device cpu"
  run --device cuda "$sample" >/dev/null 2>"$tmp/e3"; rc=$?
  [ $rc -eq 1 ] && grep -q "device cuda: " "$tmp/e3" && grep -q "LECTOR_ERR_UNAVAILABLE" "$tmp/e3" && ok ||
    ko "device cuda without a usable GPU: rc $rc, $(cat "$tmp/e3")"
  if ! grep -q "this build has no CUDA backend" "$tmp/e3"; then # (sanitizer builds have no module)
    LECTOR_CUDA_MODULE=$tmp/no-such-module.so run --device cuda "$sample" >/dev/null 2>"$tmp/e4"
    grep -q "the CUDA module is missing: no $tmp/no-such-module.so" "$tmp/e4" && ok ||
      ko "missing module not named: $(cat "$tmp/e4")"
  fi
else
  echo "note: a GPU is usable here: $(cat "$tmp/ea"); the no-GPU checks were not run"
fi

# parameters reach the pipeline: a drop score of 1.0 keeps nothing
[ -z "$(run --drop-score 1.0 "$sample")" ] && ok || ko "--drop-score 1.0 should drop every line"

# a page with a degenerate box (two equal corners after PaddleOCR's corner
# ordering; ICDAR2015 img_292) still gives its other lines
img292=$(dirname "$0")/../../../shared/data/icdar2015_test/ch4_test_images/img_292.jpg
if [ -f "$img292" ]; then
  out=$(run "$img292" 2>"$tmp/e292"); rc=$?
  [ $rc -eq 0 ] && [ -n "$out" ] && ok || ko "img_292: rc $rc, $(cat "$tmp/e292")"
fi

# --draw writes a PNG twice the page's width (page | text panel)
run --draw "$tmp/draw.png" "$sample" >/dev/null || ko "--draw run failed"
/usr/bin/python3 -c "
import struct,sys
b=open(sys.argv[1],'rb').read(24)
assert b[:8]==b'\x89PNG\r\n\x1a\n'
w,h=struct.unpack('>II',b[16:24]); assert (w,h)==(1000,500),(w,h)
" "$tmp/draw.png" && ok || ko "--draw output"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
