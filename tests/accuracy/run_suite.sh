#!/usr/bin/env bash
# Reproduce the expected strings of RapidOCR's and PaddleOCR's own suites with build/lector.
#
# usage: run_suite.sh LECTOR MODELS_DIR DATA_DIR [CASE_ID...]
#   CASE_ID = <set>:<row> as listed in cases.tsv (the row's first case), or <set>:<row>:<profile>
#   for a row checked again under another profile (default: all cases)
# exit: 0 all reproduced, 1 some not reproduced, 77 data, models or binary absent (ctest SKIPPED)
#
# Each case runs `lector --format txt` on one image with the settings of the suite that asserted
# the string (profile below) and compares, as the gt.tsv 'unit' column says:
#   first_line / line (single-crop rows): line 1 of the output; line_i: line i+1; count: number of
#   lines; empty: no lines; cls_label 180: the first line of --format json has "rotated":true;
#   page: every line, joined by newlines; word: the output line nearest to the word (by edit
#   distance) stands for it.
# The compare column: exact, lower (case folded), or sim80: CnOCR's own rule,
# 1 - Levenshtein(got, expected) / len(expected) >= 0.8, in characters.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LECTOR=${1:?lector binary}
MODELS=${2:?models dir}
DATA=${3:?data dir}
shift 3
if [ ! -x "$LECTOR" ]; then echo "SKIP: $LECTOR not built"; exit 77; fi
if [ ! -x "$(dirname "$LECTOR")/lector-score" ]; then echo "SKIP: lector-score not built beside $LECTOR"; exit 77; fi
if [ ! -d "$DATA/rapidocr_tests" ] || [ ! -d "$DATA/paddleocr_doc_imgs" ]; then
  echo "SKIP: $DATA/rapidocr_tests or paddleocr_doc_imgs absent"; exit 77
fi
for f in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt; do
  [ -f "$MODELS/$f" ] || { echo "SKIP: $MODELS/$f absent (scripts/fetch_models.sh)"; exit 77; }
done

# RapidOCR @7b2d368 python/rapidocr/config.yaml (tests_src_7b2d368/config.yaml): det limit 736 min,
# thresh .3, box_thresh .5, unclip 1.6, use_dilation true, score_mode fast; cls on, thresh .9;
# rec batch 6, text_score (drop) .5; Global.min_height 30, width_height_ratio 8 (the letterbox).
RAPID="--det-mean 0.5,0.5,0.5 --det-std 0.5,0.5,0.5 --det-limit-side-len 736 --det-limit-type min --det-db-thresh 0.3 --det-db-box-thresh 0.5
       --det-db-unclip-ratio 1.6 --use-dilation --det-db-score-mode fast --cls-thresh 0.9
       --cls-batch-num 6 --rec-batch-num 6 --drop-score 0.5 --det-letterbox-min-height 30 --det-letterbox-ratio 8"
# PaddleOCR 2.x (paddleocr < 3.0) defaults = Lector's defaults.
profile_opts() {
  case $1 in
    rapid)       echo "$RAPID --use-angle-cls" ;;
    rapid_nocls) echo "$RAPID" ;;
    rapid_det)   echo "$RAPID --use-angle-cls --drop-score 0" ;;
    rapid_rec)   echo "$RAPID --no-det" ;;                 # RapidOCR use_det=False, use_cls=False
    rapid_clsrec) echo "$RAPID --no-det --use-angle-cls" ;; # use_det=False (cls + rec)
    paddle_rec)  echo "--no-det" ;;                        # tools/infer/predict_rec.py
    paddle)      echo "" ;;
    paddle_cls)  echo "--use-angle-cls" ;;
    margin10)    echo "--rec-crop-margin 0.1" ;;                 # each line cut with a margin (lector_params.rec_crop_margin)
    *) echo "bad profile $1" >&2; return 1 ;;
  esac
}

unescape() { printf '%s' "$1" | sed -e 's/\\t/\t/g' -e 's/\\n/\n/g' -e 's/\\\\/\\/g'; }
lower() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]'; }
# Levenshtein distance in code points (lector-score, beside the lector binary)
SCORE=$(dirname "$LECTOR")/lector-score
lev() { "$SCORE" --distance "$1" "$2" | cut -d' ' -f1; }

THREADS=${ACC_THREADS:-1}   # results do not depend on the thread count
declare -A cache_out cache_rc first_seen
want=" $* "
pass=0 fail=0
failures=()
while IFS=$'\t' read -r set row profile compare what; do
  [[ -z "$set" || "$set" == \#* ]] && continue
  id="$set:$row"
  [ $# -gt 0 ] && [[ "$want" != *" $id "* ]] && [[ "$want" != *" $id:$profile "* ]] && continue
  # "set:row" alone names the row's first case (its profile's other cases are "set:row:profile")
  [ $# -gt 0 ] && [[ "$want" != *" $id:$profile "* ]] && [ -n "${first_seen[$id]:-}" ] && continue
  first_seen[$id]=1
  gtrow=$(sed -n "${row}p" "$DATA/$set/gt.tsv")
  # (read would merge empty TAB-separated fields: cut keeps them)
  img=$(printf '%s' "$gtrow" | cut -f1); unit=$(printf '%s' "$gtrow" | cut -f2)
  # a 'line' row whose note says "line K of N" (a multi-line image, top to bottom) is output line K
  note=$(printf '%s' "$gtrow" | cut -f6)
  [ "$unit" = line ] && [[ "$note" =~ ^line\ ([0-9]+)\ of\ [0-9]+ ]] && unit=line_${BASH_REMATCH[1]}
  text=$(unescape "$(printf '%s' "$gtrow" | cut -f4)")
  image="$DATA/$set/$img"
  opts=$(profile_opts "$profile") || exit 2
  key="$profile|$image"
  if [ -z "${cache_out[$key]+x}" ]; then
    # shellcheck disable=SC2086
    cache_out[$key]=$("$LECTOR" -q --models "$MODELS" --threads "$THREADS" $opts --format txt "$image" 2>/tmp/lector_acc_err.$$)
    cache_rc[$key]=$?
  fi
  out=${cache_out[$key]}
  rc=${cache_rc[$key]}
  out=$(printf '%s' "$out" | tr -d '\f')
  mapfile -t lines < <(printf '%s\n' "$out" | sed '/^$/d')
  n=${#lines[@]}
  got=""
  ok=0
  case $unit in
    first_line|line) got=${lines[0]:-}; expect=$text ;;
    line_*) i=${unit#line_}; got=${lines[$i]:-}; expect=$text ;;
    count) got=$n; expect=$text ;;
    page) got=$(printf '%s\n' "${lines[@]}"); got=${got%$'\n'}; expect=$text ;;
    word)
      got=""; best=-1
      for l in "${lines[@]}"; do
        d=$(lev "$l" "$text")
        if [ $best -lt 0 ] || [ "$d" -lt $best ]; then best=$d; got=$l; fi
      done
      expect=$text ;;
    empty) got=$n; expect=0 ;;
    cls_label)
      # shellcheck disable=SC2086
      js=$("$LECTOR" -q --models "$MODELS" --threads "$THREADS" $opts --format json "$image" 2>/dev/null)
      if printf '%s' "$js" | grep -q '"rotated":true'; then got=180; else got=0; fi
      expect=$text ;;
    *) echo "bad unit $unit in $id" >&2; exit 2 ;;
  esac
  if [ "$compare" = lower ]; then [ "$(lower "$got")" = "$(lower "$expect")" ] && ok=1
  elif [ "$compare" = sim80 ]; then
    read -r d len < <("$SCORE" --distance "$got" "$expect")
    [ "$len" -gt 0 ] && [ $((5 * d)) -le "$len" ] && ok=1   # 1 - d / len >= 0.8
  else [ "$got" = "$expect" ] && ok=1; fi
  [ $rc -ne 0 ] && ok=0
  if [ $ok = 1 ]; then
    pass=$((pass + 1)); printf 'ok    %-24s %-10s %s\n' "$id" "$unit" "$expect"
  else
    fail=$((fail + 1)); failures+=("$id")
    printf 'FAIL  %-24s %-10s expected [%s] got [%s] (rc %d; %s)\n' "$id" "$unit" "$expect" "$got" $rc "$what"
    [ -s /tmp/lector_acc_err.$$ ] && sed 's/^/      stderr: /' /tmp/lector_acc_err.$$ | head -3
    if [ "$unit" != count ] && [ "$unit" != empty ]; then
      printf '      output (%d lines):\n' "$n"; printf '        %s\n' "${lines[@]:0:20}"
    fi
  fi
done < "$HERE/cases.tsv"
rm -f /tmp/lector_acc_err.$$
echo "reproduced $pass, not reproduced $fail${failures[*]:+ (${failures[*]})}"
[ $fail -eq 0 ]
