#!/usr/bin/env bash
# lector-score --mode text (tools/score/score.c): bags of words per image, CJK characters one word each.
# The expected counts are worked out by hand below, from the definition in score.c's header.
set -euo pipefail
SCORE=${1:?lector-score}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# GT: two boxed lines, one line without a box (mode text takes it), a do-not-care row (skipped),
# and a row of another unit (skipped).
printf 'image_path\tunit\tbox\ttext\tsource\tnote\n' > "$t/gt.tsv"
printf 'img/a.png\tline\t0,0,10,0,10,10,0,10\t合计 627.99\thand\t\n' >> "$t/gt.tsv"
printf 'img/a.png\tline\t0,20,10,20,10,30,0,30\tconspicuously in videos\thand\t\n' >> "$t/gt.tsv"
printf 'img/a.png\tline\t\tHello\thand\t\n' >> "$t/gt.tsv"
printf 'img/a.png\tline\t0,40,10,40,10,50,0,50\t###\thand\t\n' >> "$t/gt.tsv"
printf 'img/a.png\tcount\t\t18\thand\t\n' >> "$t/gt.tsv"
box='[[0,0],[1,0],[1,1],[0,1]]'
printf '{"file":"/data/img/a.png","pages":[{"lines":[{"text":"合计627.99","box":%s},{"text":"conspicuouslyi n videos","box":%s},{"text":"hello","box":%s}]}]}\n' \
  "$box" "$box" "$box" > "$t/res.jsonl"
# GT words: 合 计 627.99 conspicuously in videos Hello (7); result words: 合 计 627.99 conspicuouslyi n
# videos hello (7); in common: 合 计 627.99 videos (4): P = R = F1 = 4/7 = 0.5714.
# --loose folds ASCII case: Hello = hello, 5 in common: 5/7 = 0.7143.
row() { "$SCORE" --gt "$t/gt.tsv" --res "$t/res.jsonl" --mode text --tsv "$@" | cut -f4-5,7-11; }
got=$(row); want=$(printf '7\t7\t4\t0.5714\t0.5714\t0.5714\t-')
[ "$got" = "$want" ] || { echo "FAIL: text mode: got [$got] want [$want]"; exit 1; }
got=$(row --loose); want=$(printf '7\t7\t5\t0.7143\t0.7143\t0.7143\t-')
[ "$got" = "$want" ] || { echo "FAIL: text mode --loose: got [$got] want [$want]"; exit 1; }
# --distance (tests/accuracy/run_suite.sh's similarity): the textbook kitten/sitting = 3, and code
# points, not bytes: 你好世界 against 你好 is 2 edits (6 bytes), Hello world!你好世界 is 16 long
for c in "kitten|sitting|3 7" "你好世界|你好|2 2" "Helloworld！你好世界|Hello world!你好世界|2 16" "|abc|3 3"; do
  IFS='|' read -r a b want <<<"$c"
  got=$("$SCORE" --distance "$a" "$b")
  [ "$got" = "$want" ] || { echo "FAIL: --distance [$a] [$b]: got [$got] want [$want]"; exit 1; }
done
echo "ok: score.text_mode"
