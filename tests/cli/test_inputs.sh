#!/usr/bin/env bash
# Hostile and odd inputs through the `lector` command line (issue 21):
#   test_inputs.sh CASE LECTOR MODELS_DIR SAMPLE_IMAGE
# CASE:
#   fifo         a FIFO without a writer, a directory, a device: refused at
#                once as "not a regular file", never a hang
#   stdin_limit  standard input over --max-file-size: the limit, named, without
#                reading the rest (the kernel's /dev/zero never ends)
#   utf8_names   file names that are not UTF-8: JSON, hOCR and TSV stay valid
#                (Python's strict UTF-8 decoder, its json and ElementTree are the
#                judges), one warning
#   utf8_dict    a dictionary entry that is not UTF-8: the same, one warning
#   dict_mismatch  a dictionary of another model: an error naming the model and
#                the dictionary, not the image, reported once
#   nan_model    a det model whose largest weight tensor is NaN: an error
#                naming the model, exit 1 (it used to read no text and exit 0)
set -u
case_=$1 lector=$2 models=$3 sample=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
run() { "$lector" --models "$models" --threads 1 "$@"; }

case $case_ in
fifo)
    mkfifo "$tmp/pipe.png"
    for f in "$tmp/pipe.png" /dev/zero; do # (a directory is a tree of inputs: tests/cli/test_batch.sh)
        t0=$(date +%s%N)
        timeout 20 "$lector" --models "$models" --threads 1 "$f" >/dev/null 2>"$tmp/err"
        rc=$? el=$((($(date +%s%N) - t0) / 1000000))
        [ $rc -eq 1 ] && grep -q "$f: not a regular file" "$tmp/err" && ok ||
            ko "$f: rc $rc after $el ms: $(cat "$tmp/err")"
    done
    # the FIFO with a writer: refused too, and the writer is not left hanging on an open reader
    (exec 3>"$tmp/pipe.png"; sleep 3) &
    w=$!
    timeout 20 "$lector" --models "$models" --threads 1 "$tmp/pipe.png" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "not a regular file (a FIFO)" "$tmp/err" && ok || ko "FIFO with a writer: rc $rc $(cat "$tmp/err")"
    kill $w 2>/dev/null
    wait $w 2>/dev/null
    # other inputs go on
    run -f json "$tmp/pipe.png" "$sample" >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 1 ] && sed -n 2p "$tmp/out" | grep -q '"text":"纯臻营养护发素"' && ok || ko "the image after the FIFO was not read"
    ;;
stdin_limit)
    t0=$(date +%s%N)
    timeout 60 "$lector" --models "$models" --threads 1 --max-file-size 1000000 - </dev/zero >/dev/null 2>"$tmp/err"
    rc=$? el=$((($(date +%s%N) - t0) / 1000000))
    [ $rc -eq 1 ] && grep -q "<stdin>: more than the file size limit of 1000000 bytes (--max-file-size)" "$tmp/err" &&
        grep -q LECTOR_ERR_LIMIT "$tmp/err" && ok || ko "stdin over the limit: rc $rc after $el ms: $(cat "$tmp/err")"
    # exactly at the limit is fine
    n=$(stat -c %s "$sample")
    run --max-file-size "$n" - <"$sample" | head -1 | grep -qx '纯臻营养护发素' && ok || ko "stdin at the limit"
    run --max-file-size $((n - 1)) - <"$sample" >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && grep -q "limit of $((n - 1)) bytes" "$tmp/err" && ok || ko "stdin one byte over: $(cat "$tmp/err")"
    # a file over the limit names it too
    run --max-file-size $((n - 1)) "$sample" >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && grep -q "over the file size limit of $((n - 1)) bytes" "$tmp/err" && ok || ko "file over: $(cat "$tmp/err")"
    ;;
utf8_names)
    bad=$tmp/$'bad\xff\xfe-\x01-name.jpg'
    cp "$sample" "$bad"
    run -f json "$bad" "$sample" >"$tmp/out.json" 2>"$tmp/err" || ko "json run: $(cat "$tmp/err")"
    python3 - "$tmp/out.json" <<'PY' && ok || ko "JSON not valid UTF-8 / JSON"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], "rb").read().decode("utf-8", "strict").splitlines()]
assert objs[0]["file"].endswith("bad\ufffd\ufffd-\x01-name.jpg"), objs[0]["file"]
assert objs[0]["pages"][0]["lines"][0]["text"] == "纯臻营养护发素"
PY
    [ "$(grep -c 'not valid UTF-8' "$tmp/err")" = 1 ] && ok || ko "want one warning: $(cat "$tmp/err")"
    run -f hocr "$bad" >"$tmp/out.hocr" 2>/dev/null || ko "hocr run"
    python3 -c '
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1], "rb").read())
t = [e.get("title") for e in root.iter() if e.get("class") == "ocr_page"][0]
assert "bad\ufffd\ufffd-\ufffd-name.jpg" in t, t
' "$tmp/out.hocr" && ok || ko "hOCR not well-formed XML"
    # a missing file with such a name: the error in the JSON is valid too
    run -f json "$tmp/"$'gone\xff.png' >"$tmp/gone.json" 2>/dev/null
    python3 -c 'import json,sys; o=json.loads(open(sys.argv[1],"rb").read().decode("utf-8")); assert "gone\ufffd.png" in o["error"]' \
        "$tmp/gone.json" && ok || ko "error message JSON"
    ;;
utf8_dict)
    python3 - "$models/ppocr_keys_v1.txt" "$tmp/dict.txt" <<'PY'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
lines[lines.index("纯".encode())] = b"\xff"
lines[lines.index("臻".encode())] = b"\xe8\x87"  # a sequence cut short
open(sys.argv[2], "wb").write(b"\n".join(lines))
PY
    run --rec-dict "$tmp/dict.txt" -f json "$sample" >"$tmp/out.json" 2>"$tmp/err" || ko "run: $(cat "$tmp/err")"
    python3 -c '
import json, sys
o = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"))
t = o["pages"][0]["lines"][0]["text"]
assert t == "\ufffd\ufffd营养护发素", t
' "$tmp/out.json" && ok || ko "JSON with the bad dictionary: $(head -c 300 "$tmp/out.json")"
    [ "$(grep -c 'not valid UTF-8' "$tmp/err")" = 1 ] && grep -q "dict.txt: 2 entries" "$tmp/err" && ok ||
        ko "want one warning naming the dictionary: $(cat "$tmp/err")"
    run --rec-dict "$tmp/dict.txt" -f tsv "$sample" 2>/dev/null | python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' &&
        ok || ko "TSV not UTF-8"
    ;;
dict_mismatch)
    head -100 "$models/ppocr_keys_v1.txt" >"$tmp/small.txt"
    run --rec-dict "$tmp/small.txt" "$sample" "$sample" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && ok || ko "exit code $rc"
    # once, and the run stopped there (the summary line of a run of several inputs follows)
    [ "$(grep -c 'do not match' "$tmp/err")" = 1 ] && [ "$(grep -vc 'input(s):' "$tmp/err")" = 1 ] && ok ||
        ko "reported more than once: $(cat "$tmp/err")"
    grep -q "^lector: $models/ch_PP-OCRv4_rec_infer.onnx and $tmp/small.txt do not match" "$tmp/err" && ok ||
        ko "the model and the dictionary are not named first: $(cat "$tmp/err")"
    grep -q "sample.jpg" "$tmp/err" && ko "the image is blamed: $(cat "$tmp/err")" || ok
    ;;
nan_model)
    python3 - "$models/ch_PP-OCRv4_det_infer.onnx" "$tmp/det_nan.onnx" <<'PY'
# Overwrites the largest weight tensor (a TensorProto's raw_data, field 9,
# in an initializer or a Constant node's attribute) with 0xFF bytes: NaN.
import sys
def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1; r |= (c & 0x7F) << s; s += 7
        if c < 0x80: return r, i
def fields(b, lo, hi):
    i = lo
    while i < hi:
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0: _, i = varint(b, i)
        elif wt == 1: i += 8
        elif wt == 5: i += 4
        elif wt == 2:
            n, i = varint(b, i); yield f, i, i + n; i += n
        else: raise ValueError(wt)
b = bytearray(open(sys.argv[1], "rb").read())
raws = []
def tensor(lo, hi): raws.extend((z - a, a, z) for f, a, z in fields(b, lo, hi) if f == 9)
for f, a, z in fields(b, 0, len(b)):
    if f != 7: continue  # ModelProto.graph
    for g, ga, gz in fields(b, a, z):
        if g == 5: tensor(ga, gz)  # GraphProto.initializer
        if g == 1:  # GraphProto.node -> attribute (5) -> t (5)
            for h, ha, hz in fields(b, ga, gz):
                if h == 5:
                    for k, ka, kz in fields(b, ha, hz):
                        if k == 5: tensor(ka, kz)
n, a, z = max(raws)
b[a:z] = b"\xff" * n
open(sys.argv[2], "wb").write(b)
PY
    run --det-model "$tmp/det_nan.onnx" "$sample" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && ok || ko "exit code $rc (lines: $(wc -l <"$tmp/out"))"
    grep -q "det_nan.onnx: .*holds NaN" "$tmp/err" && grep -q LECTOR_ERR_INVALID_MODEL "$tmp/err" && ok ||
        ko "no NaN error naming the model: $(cat "$tmp/err")"
    ;;
*) echo "unknown case $case_"; exit 2 ;;
esac
echo "cli.inputs.$case_: $pass passed, $fail failed"
[ $fail -eq 0 ]
