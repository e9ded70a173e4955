#!/usr/bin/env bash
# End-to-end tests of `lector` over many inputs (docs/SCALE.md): directories,
# @lists, --output-dir, --resume, --shard, progress, summary.json.
#   test_batch.sh CASE LECTOR MODELS_DIR
# Inputs are small generated images (make_batch_tree.py: a word or two each,
# corrupt files beside them). Oracles: a single unsharded run for the sharded
# ones (byte for byte), the kernel's SIGKILL, a real pseudo-terminal (script),
# FNV-1a written again here in Python for shard membership.
set -u
case=$1 lector=$2 models=$3
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
run() { "$lector" --models "$models" --device cpu --threads 1 "$@"; }
finish() { echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit; }

# shard_of REL N: the shard that owns REL (FNV-1a 64 of its UTF-8 bytes mod N)
cat >"$tmp/shard.py" <<'PY'
def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h
def shard_of(rel, n):
    return fnv1a64(rel) % n
PY

case $case in
shards_kill_resume)
  # 300 inputs: 270 good, 30 corrupt, nested; 4 formats
  "$py" "$here/make_batch_tree.py" "$tmp/in" 270 30 >"$tmp/bad.txt" || { ko "make_batch_tree"; finish; }
  fmts=txt,json,tsv,hocr
  run -q --output-dir "$tmp/ref" -f $fmts "$tmp/in" 2>"$tmp/ref.err"; rc=$?
  [ $rc -eq 1 ] && ok || ko "reference run: exit $rc (expected 1: some inputs are corrupt): $(tail -3 "$tmp/ref.err")"

  # 4 shard processes at once; shard 0 is killed with SIGKILL once it has
  # written a few outputs, then restarted with --resume
  declare -a pids
  for k in 0 1 2 3; do
    # lector itself in the background (not a shell function's subshell), so
    # that the SIGKILL below reaches it
    "$lector" --models "$models" --device cpu --threads 1 -q --output-dir "$tmp/out" -f $fmts --shard $k/4 \
      "$tmp/in" >"$tmp/shard$k.out" 2>"$tmp/shard$k.err" &
    pids[$k]=$!
  done
  cat >"$tmp/count.py" <<PY
import os, sys
sys.path.insert(0, "$tmp")
from shard import shard_of
root, out = "$tmp/in", "$tmp/out"
good = bad = complete = 0
bad_names = set(open("$tmp/bad.txt").read().split("\n")) - {""}
for d, _, files in os.walk(root):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), root)
        if f.endswith(".txt") or shard_of(rel, 4) != 0: continue
        if rel in bad_names: bad += 1; continue
        good += 1
        complete += all(os.path.exists(os.path.join(out, rel + "." + e)) for e in "$fmts".split(","))
print(good, bad, complete)
PY
  killed=0
  for _ in $(seq 1 480); do
    read -r good0 bad0 done0 < <("$py" "$tmp/count.py")
    if [ "$done0" -ge 3 ]; then kill -KILL ${pids[0]}; killed=1; break; fi
    sleep 0.25
  done
  wait ${pids[0]}; rc0=$?
  [ $killed = 1 ] && [ $rc0 -eq 137 ] && ok || ko "shard 0 was not killed mid-run (killed=$killed, exit $rc0)"
  read -r good0 bad0 done0 < <("$py" "$tmp/count.py")
  [ "$done0" -ge 3 ] && [ "$done0" -lt "$good0" ] && ok || ko "shard 0 killed at $done0 of $good0 good inputs: not mid-run"
  [ ! -e "$tmp/out/summary.shard-0-of-4.json" ] && ok || ko "the killed shard wrote its summary"
  # what a kill during a write leaves: a temporary file beside an output not
  # yet written and beside one complete output
  "$py" - "$tmp" <<'PY'
import os, sys
tmp = sys.argv[1]
sys.path.insert(0, tmp)
from shard import shard_of
bad = set(open(tmp + "/bad.txt").read().split("\n")) - {""}
todo = done = None
for d, _, files in sorted(os.walk(tmp + "/in")):
    for f in sorted(files):
        rel = os.path.relpath(os.path.join(d, f), tmp + "/in")
        if f.endswith(".txt") or rel in bad or shard_of(rel, 4): continue
        have = os.path.exists(tmp + "/out/" + rel + ".txt")
        if have and not done: done = rel
        if not have and not todo: todo = rel
assert todo and done, (todo, done)
for rel, ext in ((todo, "txt"), (done, "hocr")):
    p = tmp + "/out/" + rel + "." + ext
    open(os.path.join(os.path.dirname(p), "." + os.path.basename(p) + ".lector-tmp"), "w").write("<half")
PY
  run -q --resume --output-dir "$tmp/out" -f $fmts --shard 0/4 "$tmp/in" >"$tmp/shard0.out" 2>"$tmp/shard0.err"
  rc0=$?
  for k in 1 2 3; do wait ${pids[$k]}; echo $? >"$tmp/rc$k"; done
  [ $rc0 -eq $([ "$bad0" -gt 0 ] && echo 1 || echo 0) ] && ok || ko "resumed shard 0: exit $rc0 with $bad0 bad inputs"

  "$py" - "$tmp" "$fmts" "$done0" <<'PY' && ok || ko "sharded outputs differ from the unsharded run (above)"
import filecmp, json, os, sys
tmp, fmts, done0 = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
sys.path.insert(0, tmp)
from shard import shard_of
bad = set(open(tmp + "/bad.txt").read().split("\n")) - {""}
good = []
for d, _, files in os.walk(tmp + "/in"):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), tmp + "/in")
        if not f.endswith(".txt") and rel not in bad: good.append(rel)
assert len(good) == 270 and len(bad) == 30, (len(good), len(bad))
def tree(root):
    out = set()
    for d, _, files in os.walk(root):
        for f in files: out.add(os.path.relpath(os.path.join(d, f), root))
    return out
want = {g + "." + e for g in good for e in fmts}
ref, out = tree(tmp + "/ref"), tree(tmp + "/out")
assert ref - {"summary.json"} == want, sorted(ref ^ want)[:5]
summaries = {"summary.shard-%d-of-4.json" % k for k in range(4)}
assert out - summaries == want, ("extra or missing in the sharded run", sorted((out - summaries) ^ want)[:5])
assert summaries <= out, "a shard's summary is missing"
assert not [p for p in out if p.endswith(".lector-tmp")], "temporary files left"
diff = [p for p in want if not filecmp.cmp(tmp + "/ref/" + p, tmp + "/out/" + p, shallow=False)]
assert not diff, ("not byte-identical to the unsharded run", diff[:5])
# a page of text was read (the outputs are not empty shells)
assert any(open(tmp + "/out/" + g + ".txt").read().strip() for g in good)
# every bad input in a summary once, with its reason; none of the good ones
def failures(path):
    s = json.load(open(path))
    return s, {f["name"]: f for f in s["failures"]}
rs, rf = failures(tmp + "/ref/summary.json")
assert set(rf) == bad and rs["failed"] == 30 and rs["done"] == 270 and rs["pages"] == 270, rs
seen = {}
for k in range(4):
    s, f = failures(tmp + "/out/summary.shard-%d-of-4.json" % k)
    assert s["shard"]["index"] == k and s["shard"]["count"] == 4
    assert all(shard_of(n, 4) == k for n in f), "a failure recorded by the wrong shard"
    for n, x in f.items():
        assert n not in seen, n
        seen[n] = x
        assert x["file"] == tmp + "/in/" + n and x["file"] in x["error"], x
        assert x["code"] == "LECTOR_ERR_IMAGE", x
    owned_good = sum(1 for g in good if shard_of(g, 4) == k)
    assert s["done"] + s["already_done"] == owned_good and s["failed"] == len(f), (k, s)
    if k == 0:
        # the restart did each remaining input once: what was complete at the kill was skipped
        assert s["already_done"] == done0 and s["done"] == owned_good - done0, (s, done0)
assert set(seen) == bad, sorted(set(seen) ^ bad)
PY
  for k in 1 2 3; do
    r=$(cat "$tmp/rc$k"); [ "$r" -eq 0 ] || [ "$r" -eq 1 ] && ok || ko "shard $k exit $r: $(tail -c 3000 "$tmp/shard$k.err")"
  done
  ;;

progress)
  "$py" "$here/make_batch_tree.py" "$tmp/in" 24 2 >/dev/null || { ko "make_batch_tree"; finish; }
  # on a terminal (a pseudo-terminal from script): the line redrawn in place
  TERM=xterm script -qec "'$lector' --models '$models' --device cpu --threads 1 --output-dir '$tmp/tty' '$tmp/in'" \
    "$tmp/typescript" </dev/null >/dev/null; rc=$?
  [ $rc -eq 1 ] && ok || ko "tty run: exit $rc (2 corrupt inputs: expected 1)"
  "$py" - "$tmp/typescript" <<'PY' && ok || ko "no progress line on the terminal (above)"
import re, sys
t = open(sys.argv[1], "rb").read().decode()
m = re.findall(r"\r\x1b\[Klector: (\d+)/26, (\d+) failed", t)
assert m, t[-600:]
assert any(int(a) < 26 for a, _ in m) and all(int(a) <= 26 for a, _ in m), m
assert re.search(r"lector: 26 input\(s\): 24 done, 2 failed; 24 page\(s\) in [0-9.]+ s", t), t[-600:]
PY
  # piped: plain lines every --progress-interval, no control characters
  TERM=xterm run --output-dir "$tmp/pipe" --progress-interval 0.2 "$tmp/in" 2>&1 | cat >"$tmp/piped"
  "$py" - "$tmp/piped" <<'PY' && ok || ko "piped progress (above)"
import re, sys
t = open(sys.argv[1], "rb").read().decode()
assert "\r" not in t and "\x1b" not in t, repr(t[:300])
assert re.search(r"^lector: \d+/26, \d+ failed", t, re.M), t
assert re.search(r"^lector: 26 input\(s\): 24 done, 2 failed", t, re.M), t
PY
  # -q: no progress lines; the failures and the summary line stay
  run -q --output-dir "$tmp/quiet" --progress-interval 0.01 "$tmp/in" 2>"$tmp/quiet.err"
  [ "$(grep -c '^lector: [0-9]*/26' "$tmp/quiet.err")" -eq 0 ] && [ "$(wc -l <"$tmp/quiet.err")" -eq 3 ] &&
    grep -q '^lector: 26 input(s)' "$tmp/quiet.err" && ok || ko "-q: $(cat "$tmp/quiet.err")"
  ;;

cli)
  "$py" "$here/make_batch_tree.py" "$tmp/in" 8 2 >"$tmp/bad.txt" || { ko "make_batch_tree"; finish; }
  # a directory streams JSON Lines in sorted order, bad inputs as error objects
  run -f json "$tmp/in" >"$tmp/all.jsonl" 2>"$tmp/all.err"; rc=$?
  [ $rc -eq 1 ] && ok || ko "directory run: exit $rc"
  "$py" - "$tmp" <<'PY' && ok || ko "directory stream (above)"
import json, os, sys
tmp = sys.argv[1]
objs = [json.loads(l) for l in open(tmp + "/all.jsonl")]
rels = []
for d, _, files in os.walk(tmp + "/in"):
    for f in files:
        if not f.endswith(".txt"): rels.append(os.path.relpath(os.path.join(d, f), tmp + "/in"))
want = sorted(rels, key=lambda r: r.split("/"))
assert [o["file"] for o in objs] == [tmp + "/in/" + r for r in want], [o["file"] for o in objs]
bad = set(open(tmp + "/bad.txt").read().split("\n")) - {""}
for o in objs:
    rel = os.path.relpath(o["file"], tmp + "/in")
    assert (o["error"] is not None) == (rel in bad), o
    assert rel in bad or o["pages"][0]["lines"], o
PY
  # per-input JSON files: the stream's objects less "timings_ms"; -o adds the stream
  run -q --output-dir "$tmp/pj" -f json -o "$tmp/pj.jsonl" "$tmp/in" 2>/dev/null
  "$py" - "$tmp" <<'PY' && ok || ko "per-input JSON against the stream (above)"
import json, os, sys
tmp = sys.argv[1]
n = 0
for l in open(tmp + "/pj.jsonl"):
    o = json.loads(l)
    if o["error"]: continue
    rel = os.path.relpath(o["file"], tmp + "/in")
    raw = open(tmp + "/pj/" + rel + ".json").read()
    f = json.loads(raw)
    assert "timings_ms" in o and "timings_ms" not in f and raw.endswith("}\n"), raw
    del o["timings_ms"]
    assert f == o, (f, o)
    n += 1
assert n == 8, n
PY
  # @list from standard input, a directory in it expanded; the same results
  first=$(find "$tmp/in" -maxdepth 1 -name 'img*' | sort | head -1)
  printf '%s\n%s/a/b\n' "$first" "$tmp/in" | run -f txt @- >"$tmp/list.txt" 2>"$tmp/list.err"; rc=$?
  n=$(find "$tmp/in/a/b" -name 'img*' | wc -l)
  [ $rc -le 1 ] && [ "$(grep -c . "$tmp/list.txt")" -ge $((n + 1)) ] && ok || ko "@- list: exit $rc, $(cat "$tmp/list.err")"
  # --max-failures: stops, exit 1, the summary says so
  # (stderr kept: an exit 134 under the sanitizers, seen once, left nothing to read)
  run -q --output-dir "$tmp/mf" --max-failures 1 "$tmp/in" 2>"$tmp/mf.err"; rc=$?
  "$py" -c "
import json,sys; s=json.load(open(sys.argv[1]))
assert s['stopped_early'] and s['failed']==1 and s['not_run']>0 and s['inputs']==10, s" "$tmp/mf/summary.json" &&
    [ $rc -eq 1 ] && ok || ko "--max-failures 1: exit $rc, $(tail -c 3000 "$tmp/mf.err")"
  # a corrupt input whose name is not UTF-8: the summary is still JSON (Python's strict decoder)
  mkdir -p "$tmp/bn"; printf 'not an image' >"$tmp/bn/$(printf 'bad\xff\xfe').png"
  run -q --output-dir "$tmp/bno" "$tmp/bn" 2>/dev/null; rc=$?
  "$py" -c "
import json,sys; s=json.loads(open(sys.argv[1], 'rb').read().decode('utf-8'))
assert s['failed']==1 and s['failures'][0]['name']=='bad\ufffd\ufffd.png', s" "$tmp/bno/summary.json" &&
    [ $rc -eq 1 ] && ok || ko "non-UTF-8 name in summary.json: exit $rc, $(cat "$tmp/bno/summary.json")"
  # the environment of an array job picks the shard as --shard does
  shard_files() { "$py" -c "import json,sys; print(' '.join(sorted(json.loads(l)['file'] for l in open(sys.argv[1]))))" "$1"; }
  run -q -f json --shard 1/2 "$tmp/in" >"$tmp/s12.jsonl" 2>"$tmp/s12.err"
  SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=2 run -f json "$tmp/in" >"$tmp/slurm.jsonl" 2>"$tmp/slurm.err"
  JOB_COMPLETION_INDEX=1 LECTOR_SHARD_COUNT=2 run -q -f json "$tmp/in" >"$tmp/k8s.jsonl" 2>"$tmp/k8s.err"
  "$py" - "$tmp" <<'PY' && ok || ko "shard membership (above); stderr: $(tail -c 2000 "$tmp/s12.err" "$tmp/k8s.err")"
import json, os, sys
tmp = sys.argv[1]
sys.path.insert(0, tmp)
from shard import shard_of
files = lambda p: sorted(json.loads(l)["file"] for l in open(p))
want = []
for d, _, fs in os.walk(tmp + "/in"):
    for f in fs:
        rel = os.path.relpath(os.path.join(d, f), tmp + "/in")
        if not f.endswith(".txt") and shard_of(rel, 2) == 1: want.append(tmp + "/in/" + rel)
assert files(tmp + "/s12.jsonl") == sorted(want), (files(tmp + "/s12.jsonl"), sorted(want))
assert files(tmp + "/slurm.jsonl") == sorted(want)
assert files(tmp + "/k8s.jsonl") == sorted(want)
PY
  grep -q "shard 1 of 2 (from SLURM_ARRAY_TASK_ID)" "$tmp/slurm.err" && ok || ko "the shard's source not said: $(cat "$tmp/slurm.err")"
  # two inputs whose outputs would collide: the second fails, the first is written
  cp "$first" "$tmp/x.png"; mkdir -p "$tmp/d"; cp "$first" "$tmp/d/x.png"
  (cd "$tmp/d" && run -q --output-dir "$tmp/dup" ../x.png x.png) 2>"$tmp/dup.err"; rc=$?
  [ $rc -eq 1 ] && [ -s "$tmp/dup/x.png.txt" ] && grep -q "LECTOR_ERR_INVALID_ARGUMENT" "$tmp/dup.err" && ok ||
    ko "colliding outputs: exit $rc, $(cat "$tmp/dup.err")"
  # a symbolic link out of the tree is not followed unless asked
  mkdir -p "$tmp/t2"; cp "$first" "$tmp/t2/in.png"; ln -s "$first" "$tmp/t2/out.png"
  run --output-dir "$tmp/l1" "$tmp/t2" 2>"$tmp/l1.err"
  run -q --follow-symlinks --output-dir "$tmp/l2" "$tmp/t2" 2>/dev/null
  [ -e "$tmp/l1/in.png.txt" ] && [ ! -e "$tmp/l1/out.png.txt" ] && [ -e "$tmp/l2/out.png.txt" ] &&
    grep -q "1 symbolic link(s) leading out" "$tmp/l1.err" && ok || ko "symlink out of the tree: $(cat "$tmp/l1.err")"
  # usage errors: exit 2 before any model loads
  for args in "--shard 4/4" "--shard x" "--resume" "-f txt,json" "--max-failures -1" "- @-"; do
    # shellcheck disable=SC2086
    "$lector" --models /nonexistent $args "$tmp/in" </dev/null >/dev/null 2>"$tmp/u.err"; rc=$?
    [ $rc -eq 2 ] && ok || ko "'$args': exit $rc (expected 2): $(cat "$tmp/u.err")"
  done
  JOB_COMPLETION_INDEX=0 "$lector" --models /nonexistent "$tmp/in" >/dev/null 2>"$tmp/u.err"; rc=$?
  [ $rc -eq 2 ] && grep -q LECTOR_SHARD_COUNT "$tmp/u.err" && ok || ko "JOB_COMPLETION_INDEX alone: exit $rc"
  ;;
slurm_script)
  # deploy/slurm/lector-array.sbatch as Slurm would run task 1 of --array=0-1,
  # with a stand-in srun that runs its command
  "$py" "$here/make_batch_tree.py" "$tmp/in" 6 2 >/dev/null || { ko "make_batch_tree"; finish; }
  mkdir -p "$tmp/bin"; printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/srun"; chmod +x "$tmp/bin/srun"
  (cd "$tmp" && PATH="$tmp/bin:$PATH" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=2 \
    SLURM_CPUS_PER_TASK=1 LECTOR="$lector" LECTOR_MODELS="$models" IN="$tmp/in" OUT="$tmp/out" \
    bash "$here/../../deploy/slurm/lector-array.sbatch" >"$tmp/slurm.log" 2>&1); rc=$?
  [ $rc -eq 0 ] && ok || ko "the sbatch script: exit $rc: $(tail -3 "$tmp/slurm.log")"
  "$py" - "$tmp" <<'PY' && ok || ko "the sbatch script's shard (above)"
import json, os, sys
tmp = sys.argv[1]
sys.path.insert(0, tmp)
from shard import shard_of
s = json.load(open(tmp + "/out/summary.shard-1-of-2.json"))
assert s["shard"] == {"index": 1, "count": 2, "from": "SLURM_ARRAY_TASK_ID"}, s
mine = [os.path.relpath(os.path.join(d, f), tmp + "/in") for d, _, fs in os.walk(tmp + "/in") for f in fs
        if not f.endswith(".txt")]
mine = [r for r in mine if shard_of(r, 2) == 1]
assert s["inputs"] == len(mine) and s["done"] + s["failed"] == len(mine), (s, mine)
for r in mine:
    if not any(f["name"] == r for f in s["failures"]):
        assert os.path.exists(tmp + "/out/" + r + ".txt") and os.path.exists(tmp + "/out/" + r + ".json"), r
PY
  ;;
*) echo "unknown case $case"; exit 2 ;;
esac
finish
