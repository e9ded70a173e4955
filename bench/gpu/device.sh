#!/usr/bin/env bash
# bench/gpu/device.sh STEP... - runs on the accelerator machine from the
# repository root, on what bench/gpu/stage.sh put in .device/. Steps:
#   smoke   lector --device cuda and cpu on samples/sample.jpg
#   nodes   test_backend_ops: every operator (ONNX's node tests) and fused pattern on the CUDA backend
#           against the reference backend: fp32 NCHW, fp32 NHWC, the chain interpreter, and fp16
#   check   every GPU step against the reference kernels (LECTOR_CUDA_CHECK=1), fp32 and fp16
#   fuse    the fused depthwise epilogues (LECTOR_CUDA_DWFUSE) leave the output bytes as they were
#   parity  the three models, CUDA vs the CPU backend, on real images (<= 1e-3; fp16 <= 5e-2)
#   e2e     end-to-end texts, GPU (fp32, fp16) vs CPU, on the staged ICDAR2015 / SROIE images (E2E: the GPU runs' settings;
#           E2E_ALL: flags for every run, the CPU's too, e.g. "--rec-crop-margin 0.1")
#   robust  fault injection, a tiny memory cap, 16 threads, cuDNN's choices and the shipped kernels between
#           processes (algo_cache.sh, shipped_kernels.sh), an engine of 16 callers (test_cuda_engine callers),
#           device memory over READS (10,000) reads of six page sizes
#   bench   per-model latency/throughput beside the PyTorch peer; pipeline pages/s
#   serve   lector serve --device cuda with an injected CUDA failure: every request answered (the
#           breaker sends reads to the CPU engine), breaker counters, GPU memory over SERVE_N requests
#   shapes  random input shapes of the three models on the CUDA module against the reference backend,
#           and what it compiles for shapes seen before (test_shapes, ctest rt.shapes.cuda)
#   docs    document pages (SROIE receipts, PaddleOCR's document images; DOCS=DIR for others, here and in
#           every step that reads them): bench pipeline fp32 and --fp16 at 16 workers (pages/s, p50/p99, plans and kernels compiled in
#           the warm-up and after it), the CLI over the same pages, the cold start to the first result,
#           and the ICDAR2015 pipeline figure fp32 and --fp16 at 16 workers; DOCS_ARGS (e.g. "--rec-width-bucket 64")
#           go to bench pipeline and the CLI
#   scale   the document pages through bench pipeline fp32 at 1, 4 and 16 workers, and at 16 without
#           CUDA graphs (LECTOR_CUDA_GRAPHS=0): where the pages/s stop growing with workers
#   graphs  the CLI over the document pages listed twice (a line width's second read replays its plan's
#           own CUDA graph) with graphs on and off (LECTOR_CUDA_GRAPHS=0), fp32 and --fp16: with 1 worker
#           (batches formed in one order) the same bytes; with 16 (lines of several pages meet in batches
#           in the order they arrive, and a batch's row count can move a score in its 6th digit, graphs
#           or not) the same texts and boxes, scores within 1e-4
#   prof    where the time of 16 workers goes (document pages, fp32): GPU busy (nvidia-smi samples every
#           50 ms), the process's CPU time against wall time (LECTOR_CUDA_SYNC=block, so waiting for the
#           GPU costs none), model runs per page and lines per rec run, at 1 and 16 workers; with nsys
#           installed, the kernel trace of 16 workers: kernels a second, GPU busy, kernels in flight
#   wait    the driver's GPU batching rule (LECTOR_GPU_BATCH_WAIT): a partial batch waiting for the tasks
#           that may add to it, or running when a worker is free; document pages at 4 and 16 workers, fp32
#           and --fp16
#   soak    bench/serve/soak.sh on this machine's 16 cores, two servers at once for SOAK_TIME (default
#           9m30s: a call may take 10 minutes): --device cpu (SOAK_WORKERS=6, --memory-limit 2G) and
#           --device cuda (4 workers, --gpu-mem-limit 8G --memory-limit 16G), each with its own wrk
#           (64 connections, 2 threads); wrk from .device/wrk (stage.sh --wrk)
#   masks   width masks on the GPU: test_width_masks on cuda (lines of several widths in one batch, each as
#           alone), then the document pages through bench pipeline at 16 workers, fp32 and --fp16, with
#           --rec-width-bucket 0 (each line at its own width), 32, 64 and 128 (rec runs per page, pages/s),
#           and the CLI's texts with bucket 64 against bucket 0 (1 worker)
#   cold    the cold start: process start to the first byte of the first page's text (the CLI writes
#           and flushes each result as it is done) and to the process's exit, one receipt, 6 runs each
#           fp32, --fp16 and --device cpu (the kernel cache empty for the first), each with the models
#           loaded one after another (LECTOR_PARALLEL_LOAD=0) and side by side (the default), in turns (or
#           the settings COLD_ENV names, e.g. "LECTOR_GPU_WARMUP=0 LECTOR_GPU_WARMUP=1");
#           then one run of each with LECTOR_LOG=debug, timestamped,
#           for where the time goes (model loading, cuDNN's algorithm choice, NVRTC's compiles); COLD_LOG=1
#           logs every timed run and keeps the logs of those over 1.3 s (cold_slow_N.log); on the GPU a run
#           with LECTOR_CUDA_PROFILE=1 lists the plans' first-run steps of 2 ms or more (what a start waits for)
#   coldlibs a new machine's first process, approximated on a warm one: before each run the pages of the libraries
#           (the bundle's, the system's CUDA, cuDNN, cuBLAS, NVRTC and driver libraries) and of the models are dropped
#           from the page cache (posix_fadvise DONTNEED: what a new machine reads from its disk), the kernel cache
#           empty; process start to the first result of one receipt and to its exit, fp32 and --fp16, in turns
#           (COLDLIBS_TURNS, default 3) with each setting of COLDLIBS_ENV (default: as built, and the shipped kernels
#           without their file NVRTC, keyed by the machine's NVRTC, so that NVRTC is loaded as before 2026-12-07);
#           then who loads NVRTC in each (LD_DEBUG=files)
#   nvrtc   the NVRTC programs of a cold start with an empty kernel cache (--fp16, fp32, --fp16 again; each
#           loaded one after another, side by side, with LECTOR_CUDA_DW_UNROLL=0 and LECTOR_CUDA_SYNC=block),
#           their sources kept in nvrtc.tar.xz and named by compile time (LECTOR_CUDA_NVRTC_DUMP)
#   firstpass where a first pass over document pages goes (the CLI reads every page size and line width
#           for the first time there): each plan's compile split into its parts (LECTOR_LOG=debug) at 16
#           and 1 workers, bench pipeline with 1 and 2 rounds with CUDA graphs on and off, the CLI over the
#           pages listed 8 times with graphs on and off; then det in fp32 NHWC against NCHW (bench gpu and
#           the pages in turns, its texts against the CPU's) and the steps of rec fp32 and det by time
#   fp16cost what holds --fp16 back on document pages: bench pipeline with and without the fp32 recheck
#           and --fp16-det (the runs of the fp32 recogniser each time); then the GPU time per operator
#           over the pages' real shapes, fp32 and --fp16 (LECTOR_CUDA_PROFILE=1, one worker)
#   clibar  the CLI against bench pipeline on the document pages (issue 19: within 80%), with each line at its
#           own width and with --rec-width-bucket 64, in turns (CLIBAR_TURNS, default 2): bench pipeline
#           --rounds N after its warm-up, then the CLI over the pages listed N times (its first pass compiles
#           every page size and width), N in CLIBAR_REPS (default "8 32"), buckets in CLIBAR_Q (default
#           "0 64"); failed pages' messages kept in $out/clibar_*.err. First a first pass's compiles split
#           by compile_split.py (LECTOR_LOG=debug: fp32, --fp16, fp32 with bucket 64); last the CLI's time
#           outside the pages (engine creation, teardown) over the pages listed 32 times
#   archive the CLI against bench pipeline on an archive of distinct pages (issue 19: within 80%): ARCHIVE_PAGES
#           (default 1000) pages made by bench/documents/variants.py from the staged document pages (SROIE,
#           PaddleOCR's, and the generated ones of stage.sh --docs), each JPEG scaled and cropped so that every
#           page size is new; bench pipeline --rounds 1 over them (after its warm-up pass over the same pages),
#           then the CLI over them once, fp32 and --fp16, in turns (ARCHIVE_TURNS, default 2), and the CLI's
#           plans compiled after each quarter of the archive; buckets in ARCHIVE_Q (default 0); the CLI once more
#           with each setting of ARCHIVE_CLI_ENV (e.g. LECTOR_CUDA_GRAPHS=0) against the same figure; then a debug
#           log of the CLI's run (fp32; ARCHIVE_DEBUG="fp32 --fp16" for both) split by compile_split.py;
#           ARCHIVE_PROFILE=1 adds the CLI with LECTOR_CUDA_PROFILE=1 (plans' first runs against later ones);
#           ARCHIVE_CURVE=1 the CLI's results per tenth of its time (a slow start against a slow first pass)
#   envab   the models alone (lector bench gpu --only rec/det, batches 8 and 32, fp32 and --fp16) with each setting
#           of AB_ENV (e.g. "LECTOR_X=1 LECTOR_CUDA_DW_ROWS=0"; LECTOR_X=1 is none) in turns, AB_TURNS times
#           (default 3): what a setting does to the run time, the device medians side by side
#   firstruns what plans' first runs wait for over distinct pages: the CLI over the archive's first FIRSTRUNS_PAGES
#           (300) with LECTOR_CUDA_PROFILE=1, fp32 and --fp16, with each setting of FIRSTRUNS_ENV (default: as it
#           is, CUDA_MODULE_LOADING=EAGER): first-run steps of 2 ms or more by operator and kind
#   exit    where the CLI's time after its last result goes: the CLI over the archive, fp32 and --fp16, as it is
#           and with each setting of EXIT_ENV (default LECTOR_CUDA_GRAPHS=0): the last result's time and the
#           process's end after it (the driver's teardown of the process's GPU memory, pinned pages and graphs)
#   fp16rules which half-precision lines are read again in fp32, over the archive (make_archive): the CLI in
#           fp32 once (its texts are the CPU's), then for each rule of FP16_RULES (";"-separated flags, default
#           the score rule alone (the default before 2026-12-06), as it is (the margin), both, none) the CLI --fp16 (its lines against
#           fp32's) and bench pipeline --fp16 --rounds 1 in turns (FP16_TURNS, default 2: pages/s and the
#           fp32 recogniser's runs)
#   kernels the kernels shipped with the CUDA module (scripts/kernels.py): every kernel the CLI compiles over the
#           archive (make_archive; fp32, --fp16, --fp16 --fp16-det) with an empty kernel cache, as a manifest;
#           those built for this GPU with the machine's NVRTC and shipped (LECTOR_CUDA_KERNELS_SHIPPED), how
#           many NVRTC still compiles over pages not recorded (ICDAR2015, samples/) and the cold start with an
#           empty cache, shipped and not, in turns; then the manifest of everything compiled,
#           $out/kernels.manifest (src/backend/cuda/kernels.manifest)
#   issue19 everything issue 19 asks of the GPU: nodes check parity shapes docs
# Logs go to /tmp/device-logs, and with OUT set into one file, $OUT/device-logs.tar.xz, when the
# script ends or is stopped by SIGTERM (`timeout`): the device tool brings back at most 8 files of
# $OUT. Give the call's limit a margin over `timeout`'s, since SIGKILL leaves no archive.
set -uo pipefail
dev=.device
B=/tmp/lector
out=/tmp/device-logs
rm -rf "$out"
mkdir -p "$B" "$out"
if [ -n "${OUT:-}" ]; then
  trap 'tar -C "$out" -cJf "$OUT/device-logs.tar.xz" . 2>/dev/null' EXIT
  trap 'exit 143' TERM
fi
[ -x "$B/bin/lector" ] || tar -C "$B" --strip-components=1 -xJf "$dev"/lector-*.tar.xz
export LD_LIBRARY_PATH=$B/lib            # the test programs (bin/lector has its RUNPATH)
export LECTOR_CUDA_MODULE=$B/lib/liblector-cuda.so
L=$B/bin/lector
images() { find "$dev/data/$1" -name '*.jpg' | sort; }
# the archive of ARCHIVE_PAGES (1000) distinct pages in /tmp/archive (list.txt): the staged document pages, each
# JPEG scaled and cropped by bench/documents/variants.py so that every page size is new
make_archive() {
  { images sroie_subset; find "$dev/data/paddleocr_doc_imgs/imgs" -name '*.jpg'
    [ -d "$dev/data/documents" ] && images documents; } | sort >/tmp/archive_src.txt
  python3 bench/documents/variants.py --out /tmp/archive --count "${ARCHIVE_PAGES:-1000}" \
      --lib "$B/lib/libturbojpeg.so.0" $(cat /tmp/archive_src.txt) || { echo "archive: variants failed"; return 1; }
  echo "archive: $(wc -l </tmp/archive/list.txt) pages from $(wc -l </tmp/archive_src.txt) sources, $(du -sh /tmp/archive | cut -f1)"
}
# each line of stdin with the time it arrived (seconds, the last 4 digits): a log's timeline without a
# fork a line, which held up the threads writing a debug log
stamp() { python3 -u -c 'import sys, time
for l in sys.stdin: sys.stdout.write("%.3f %s" % (time.time() % 1e4, l))'; }
# the document pages into /tmp/docs.txt: DOCS=DIR's images, or the staged SROIE receipts and PaddleOCR's documents
doc_pages() {
  { if [ -n "${DOCS:-}" ]; then find "$DOCS" -type f \( -name '*.jpg' -o -name '*.png' \) | sort
    else images sroie_subset; find "$dev/data/paddleocr_doc_imgs/imgs" -type f | sort; fi; } >/tmp/docs.txt
}
set -- $(printf '%s\n' "$@" | sed 's/^issue19$/nodes check parity shapes docs/')
for step in "$@"; do
  echo "=== $step"
  case $step in
    smoke)
      nvidia-smi -L
      $L --device cuda samples/sample.jpg 2>&1 | head -20
      LECTOR_LOG=debug $L --device cuda --format json samples/sample.jpg 2>&1 | grep -i "host\|cuda" | head -20
      ;;
    exit)
      make_archive || continue
      for f in "" --fp16; do for e in LECTOR_X=1 ${EXIT_ENV:-LECTOR_CUDA_GRAPHS=0}; do
        t0=$(python3 -c 'import time; print(time.time())')
        # the reader stamps the last result when the CLI's stdout closes, which its _exit does first
        env "$e" $L --models "$B/models" --device cuda --workers 16 $f --format json @/tmp/archive/list.txt \
            2>/dev/null | python3 -c 'import sys, time
n = 0
for line in sys.stdin:
    n += 1
    last = time.time()
print(n, last, time.time())' >/tmp/exit_last.txt
        t2=$(python3 -c 'import time; print(time.time())')
        read -r n last eof </tmp/exit_last.txt
        echo "exit ${f:-fp32} $e: $n results, the last at $(awk "BEGIN {printf \"%.2f\", $last - $t0}") s," \
            "stdout closed $(awk "BEGIN {printf \"%.3f\", $eof - $last}") s later, the process ended" \
            "$(awk "BEGIN {printf \"%.3f\", $t2 - $last}") s after the last result"
      done; done
      ;;
    nodes)     # fp32 NCHW (compiled chains), fp32 NHWC (the layout code), the interpreter; fp16 (patterns).
               # NCHW is forced: the default for a node case's small images (<= 64 px high) is NHWC
      mkdir -p /tmp/node && tar -C /tmp/node -xJf "$dev/node.tar.xz"
      for cfg in "LECTOR_CUDA_NHWC=0" "LECTOR_CUDA_NHWC=1" "LECTOR_CUDA_NVRTC=0" "fp16"; do
        args="--patterns $dev/patterns.txt --node /tmp/node $dev/cases.txt" e=$cfg
        case $cfg in fp16) e=LECTOR_X=1 args="--patterns $dev/patterns.txt --fp16" ;; esac
        log="$out/nodes_${cfg//=/}.log"
        env "$e" "$dev/bin/test_backend_ops" test -b cuda $args >"$log" 2>&1
        echo "nodes [$cfg] rc=$?: $(grep -c '^ok ' "$log") ok"; grep -v "^ok " "$log" | head -25
      done
      "$dev/bin/test_backend_ops" perf -b cuda --runs 20 --patterns "$dev/patterns.txt" >"$out/ops_perf.log" 2>&1; head -60 "$out/ops_perf.log"
      ;;
    envab)
      for turn in $(seq ${AB_TURNS:-3}); do for m in rec det; do for f in "" --fp16; do for e in ${AB_ENV:-LECTOR_X=1}; do
        echo "-- $m ${f:-fp32} $e (turn $turn)"
        env "$e" $L bench gpu --models "$B/models" --only $m --batches 8,32 --runs 20 $f 2>&1 | grep -v "^lector: debug" | tail -4
      done; done; done; done
      ;;
    check)     # every step against the reference kernels (cuda_check.c), fp32 and fp16
      for f in "" --fp16; do
        LECTOR_CUDA_CHECK=1 "$dev/bin/test_cuda_engine" same $f --models "$B/models" samples/sample.jpg \
            >"$out/check$f.log" 2>&1
        echo "check [${f:-fp32}] rc=$?"; grep -E "FAIL|cuda-check|passed|same" "$out/check$f.log" | head -12
      done
      ;;
    fuse)      # the depthwise convolutions' fused epilogues change no bit. Model outputs (run-model, fp16,
               # random inputs) and texts, boxes and scores (ICDAR2015, fp32 and fp16), as the same bytes:
               # fused; unfused with the same memory plan (DWFUSE_LIFETIMES=1); unfused, the plan without
               # the longer lifetimes (chains split elsewhere: may differ in fp16); fused again (determinism);
               # the depthwise kernels' loop over the taps instead of the unrolled ones (DW_UNROLL=0)
      python3 - /tmp/fuse_in <<'PY'
import os, random, struct, sys
def tensor(path, dims):   # onnx.TensorProto: dims (1), data_type FLOAT (2), raw_data (9)
    def varint(v):
        b = b""
        while True:
            c = v & 0x7F; v >>= 7
            b += bytes([c | (0x80 if v else 0)])
            if not v: return b
    n = 1
    for d in dims: n *= d
    raw = struct.pack("<%df" % n, *[random.uniform(-1, 1) for _ in range(n)])
    with open(path, "wb") as f:
        f.write(b"".join(b"\x08" + varint(d) for d in dims) + b"\x10\x01" + b"\x4a" + varint(len(raw)) + raw)
random.seed(7); os.makedirs(sys.argv[1], exist_ok=True)
tensor(sys.argv[1] + "/det.pb", [2, 3, 640, 640]); tensor(sys.argv[1] + "/rec.pb", [16, 3, 48, 320])
tensor(sys.argv[1] + "/cls.pb", [16, 3, 48, 192])
PY
      LECTOR_LOG=debug $L --device cuda --fp16 samples/sample.jpg 2>&1 | grep "compiled by NVRTC" | head -3
      for m in det:ch_PP-OCRv4_det_infer rec:ch_PP-OCRv4_rec_infer cls:ch_ppocr_mobile_v2.0_cls_infer; do
        k=0; for e in LECTOR_X=1 "LECTOR_CUDA_DWFUSE=0 LECTOR_CUDA_DWFUSE_LIFETIMES=1" LECTOR_CUDA_DWFUSE=0 LECTOR_X=1 \
            LECTOR_CUDA_DW_UNROLL=0; do
          env $e $L run-model "$B/models/${m#*:}.onnx" --backend cuda --fp16 --input /tmp/fuse_in/${m%%:*}.pb --out /tmp/fuse_out$k >/dev/null 2>&1
          k=$((k+1)); done
        r="${m%%:*} fp16:"; for k in 1 2 3 4; do
          if cmp -s /tmp/fuse_out0/output_0.pb /tmp/fuse_out$k/output_0.pb; then r="$r same"; else r="$r DIFFER"; fi; done
        echo "$r (fused vs: unfused same plan, unfused old plan, fused again, taps not unrolled)"
      done
      images icdar2015_test | head -${FUSE_N:-40} >/tmp/list.txt
      for f in "" --fp16 "--fp16 --fp16-det"; do
        $L --device cuda $f --format tsv $(cat /tmp/list.txt) >"$out/fuse_on.tsv" 2>/dev/null
        LECTOR_CUDA_DWFUSE=0 LECTOR_CUDA_DWFUSE_LIFETIMES=1 $L --device cuda $f --format tsv $(cat /tmp/list.txt) >"$out/fuse_off.tsv" 2>/dev/null
        if cmp -s "$out/fuse_on.tsv" "$out/fuse_off.tsv"; then echo "fuse [${f:-fp32}]: identical, $(wc -l <"$out/fuse_on.tsv") rows"
        else echo "fuse [${f:-fp32}]: DIFFER"; diff "$out/fuse_on.tsv" "$out/fuse_off.tsv" | head -6; fi
      done
      ;;
    parity)
      "$dev/bin/test_parity" --backend cuda --tol 1e-3 --models "$B/models" --data "$dev/data" \
          --oracle lector:cpu --work /tmp/parity >"$out/parity.log" 2>&1
      echo "rc=$?"; grep -v "^parity:   " "$out/parity.log" | tail -12
      "$dev/bin/test_parity" --fp16 --backend cuda --tol 0.2 --max-path-mismatch 0.1 --models "$B/models" \
          --data "$dev/data" --oracle lector:cpu --work /tmp/parity16 >"$out/parity_fp16.log" 2>&1
      echo "fp16 rc=$?"; grep -v "^parity:   " "$out/parity_fp16.log" | tail -12
      ;;
    e2e)       # texts, GPU (fp32, then fp16) vs CPU
      for s in icdar2015_test sroie_subset; do
        images $s >/tmp/list.txt
        # E2E_ALL: flags for every run of the step, the CPU's included (e.g. "--rec-crop-margin 0.1")
        $L --device cpu ${E2E_ALL:-} --format tsv $(cat /tmp/list.txt) >"$out/e2e_$s.cpu.tsv" 2>"$out/e2e_$s.cpu.err"
        $L --device cpu ${E2E_ALL:-} --cls --format tsv $(cat /tmp/list.txt) >"$out/e2e_$s.cpu_cls.tsv" 2>"$out/e2e_$s.cpu_cls.err"
        # [ENV=VALUE ...] [flags], ';' between them; --cls compares with the CPU's --cls run
        IFS=";" read -ra cfgs <<<"${E2E:-;--cls;--fp16;--fp16 --fp16-margin 0;--fp16-det;LECTOR_GPU_PREPROCESS=0}"
        for f in "${cfgs[@]}"; do tag=$(echo "$f" | tr -c 'A-Za-z0-9-' '_')
        envs=$(printf '%s\n' $f | grep '=' | tr '\n' ' '); flags=$(printf '%s\n' $f | grep -v '=' | tr '\n' ' ')
        ref=$out/e2e_$s.cpu.tsv; case " $flags " in *" --cls "*) ref=$out/e2e_$s.cpu_cls.tsv ;; esac
        env LECTOR_X=1 $envs $L --device cuda ${E2E_ALL:-} $flags --format tsv $(cat /tmp/list.txt) >"$out/e2e_$s.cuda$tag.tsv" 2>"$out/e2e_$s.cuda$tag.err"
        python3 - "$ref" "$out/e2e_$s.cuda$tag.tsv" "$s${f:+ $f}" <<'PY'
import collections, sys
def pages(p):   # per page: the multiset of line texts (a moved box reorders lines, it does not change them)
    r = []
    for l in open(p, encoding="utf-8"):
        c = l.rstrip("\n").split("\t")
        if c[0] == "1": r.append(collections.Counter())
        elif c[0] == "4": r[-1][c[11] if len(c) > 11 else ""] += 1
    return r
a, b = pages(sys.argv[1]), pages(sys.argv[2])
tot = sum(sum(x.values()) for x in a)
same = sum(sum((x & y).values()) for x, y in zip(a, b))
print("%s: cpu %d lines, cuda %d lines, %d with the CPU's text on the same page (%.2f%%)" % (sys.argv[3], tot,
      sum(sum(y.values()) for y in b), same, 100.0 * same / max(tot, 1)))
for i, (x, y) in enumerate(zip(a, b)):
    for t in x - y: print("  page %d cpu  %r" % (i, t))
    for t in y - x: print("  page %d cuda %r" % (i, t))
PY
        done
      done
      ;;
    robust)
      imgs="samples/sample.jpg $(images icdar2015_test | head -3) $(images sroie_subset | head -2)"   # sroie 016: a degenerate box
      T="$dev/bin/test_cuda_engine"
      for m in same inputs batch threads oom; do $T $m --models "$B/models" $imgs 2>&1 | tail -4; done
      LECTOR_GPU_PREPROCESS=0 $T same --models "$B/models" $imgs 2>&1 | tail -2
      $T threads --fp16 --models "$B/models" $imgs 2>&1 | tail -3
      LECTOR_CUDA_FAIL=launch:400 $T fault --models "$B/models" $imgs 2>&1 | tail -3
      LECTOR_CUDA_FAIL=alloc:4 $T fault --models "$B/models" $imgs 2>&1 | tail -3   # fault turns the warm-up off
      bash tests/cuda/algo_cache.sh "$T" --models "$B/models" $imgs 2>&1 | tail -3   # cuDNN's choices between processes
      bash tests/cuda/shipped_kernels.sh . "$T" --models "$B/models" $imgs 2>&1 | tail -3   # the kernels shipped compiled
      $T callers --models "$B/models" $imgs 2>&1 | tail -2   # as lector serve makes its engine: workers 1, callers 16
      # the pages in turns: six sizes (issue 19: flat over 10,000 reads of varied sizes)
      $T memory --reads "${READS:-10000}" --models "$B/models" $imgs 2>&1 | tail -4
      ;;
    bench)
      PY=/opt/torch/.venv/bin/python3; [ -x $PY ] || PY=python3
      nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
      for f in "" --fp16; do
        $L bench gpu --models "$B/models" --json --runs 20 $f >>"$out/bench_lector.jsonl" 2>>"$out/bench_lector.err"
        LECTOR_CUDA_GRAPHS=0 $L bench gpu --models "$B/models" --json --runs 10 $f >>"$out/bench_lector_eager.jsonl" 2>&1
      done
      $PY "$dev/torch_onnx.py" "$B/models" >"$out/bench_peer.jsonl" 2>"$out/bench_peer.err"
      for f in "" --fp16; do   # the same run again: the spread
        $L bench gpu --models "$B/models" --json --runs 20 $f >>"$out/bench_lector2.jsonl" 2>&1
      done
      python3 bench/gpu/report.py "$out/bench_lector.jsonl" "$out/bench_peer.jsonl" "$out/bench_lector_eager.jsonl"
      python3 bench/gpu/report.py "$out/bench_lector2.jsonl" "$out/bench_peer.jsonl" | tail -n +3
      tail -n 3 "$out/bench_peer.err" "$out/bench_lector.err"
      ;;
    pipeline)  # PIPE="workers batch flags;..." overrides the configurations
      images icdar2015_test >/tmp/list.txt
      IFS=';' read -ra cfgs <<<"${PIPE:-1 1 ;16 1 ;16 1 --fp16;32 1 --fp16;8 8 --fp16;16 4 --fp16;16 8 --fp16-det}"
      for cfg in "${cfgs[@]}"; do read -r nw nb fl <<<"$cfg"   # workers, files per lector_read_batch (det batched too)
        $L bench pipeline --models "$B/models" --device cuda --workers $nw --batch $nb $fl --rounds ${ROUNDS:-3} --json \
            $(cat /tmp/list.txt) | tee -a "$out/pipeline.jsonl"
      done
      $L bench pipeline --models "$B/models" --device cpu --workers 16 --threads 1 --rounds 1 --json $(cat /tmp/list.txt) | tee -a "$out/pipeline.jsonl"
      ;;
    profile)   # where the time goes, per operator (eager, events around each step), fp16 at batch 32
      for m in det rec cls; do
        LECTOR_CUDA_PROFILE=1 $L bench gpu --fp16 --only $m --models "$B/models" --batches 32 --runs 3 2>&1 | grep -v "^  .* 0\.[0-4]%$" | head -24
      done
      for e in ${PROFILE_ENVS:-LECTOR_CUDA_DW=0 LECTOR_CUDA_CONV_SEARCH=1}; do
        echo "--- fp16 with $e"; env $e $L bench gpu --fp16 --models "$B/models" --batches 1,32 --runs 10 2>&1 | tail -6
      done
      echo "--- fp32 NHWC"; LECTOR_CUDA_NHWC=1 $L bench gpu --models "$B/models" --batches 1,32 --runs 10 2>&1 | tail -6
      ;;
    asan)      # the pipeline under AddressSanitizer: .device/asan.tar.xz (lector + module built with
               # -fsanitize=address, libasan; bench/gpu/stage.sh --asan DIR); ASAN_FLAGS: the pipeline's flags
      mkdir -p /tmp/asan && tar -C /tmp -xJf "$dev/asan.tar.xz"
      images icdar2015_test >/tmp/list.txt
      ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:halt_on_error=1 LD_LIBRARY_PATH=/tmp/asan:$B/lib \
        LECTOR_CUDA_MODULE=/tmp/asan/liblector-cuda.so /tmp/asan/lector bench pipeline --models "$B/models" \
        --device cuda --workers ${WORKERS:-16} --rounds ${ROUNDS:-2} ${ASAN_FLAGS:-} $(cat /tmp/list.txt) \
        >"$out/asan.log" 2>&1
      echo "asan rc=$?"; grep -v "^lector bench pipeline: .*: " "$out/asan.log" | head -80
      ;;
    serve)
      LECTOR_CUDA_FAIL=launch:${FAIL_AT:-300} $L serve --allow-test-controls --device cuda --listen 127.0.0.1:0 --workers 4 \
          --breaker-cooldown-ms 2000 >"$out/serve.log" 2>&1 &
      spid=$!
      until grep -q 'ready in' "$out/serve.log"; do sleep 0.2; kill -0 $spid 2>/dev/null || break; done
      port=$(grep -o 'http://127.0.0.1:[0-9]*' "$out/serve.log" | grep -o '[0-9]*$')
      gmem() { curl -s "localhost:$port/metrics" | awk '/^lector_serve_engine_gpu_memory_bytes/ {print $2}'; }
      post() { curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: image/jpeg' --data-binary @samples/sample.jpg \
               "localhost:$port/v1/ocr"; }
      rss() { awk '/^VmRSS/ {print $2}' /proc/$spid/status; }
      burst() { seq "$1" | xargs -P 8 -I{} sh -c "curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: image/jpeg' \
          --data-binary @samples/sample.jpg localhost:$port/v1/ocr"; }
      for i in $(seq 20); do post; done >"$out/codes1.txt"
      g0=$(gmem)
      burst "${SERVE_WARM:-2000}" >"$out/codes2.txt"      # warm: the micro-batches' shapes get their plans
      m0=$(gmem); r0=$(rss); t0=$(date +%s.%N)
      n=${SERVE_N:-10000}
      burst "$n" >"$out/codes3.txt"
      m1=$(gmem); r1=$(rss); t1=$(date +%s.%N)
      echo "responses: $(sort "$out/codes1.txt" "$out/codes2.txt" "$out/codes3.txt" | uniq -c | tr '\n' ' ')"
      echo "GPU memory through the engine: $g0 bytes after 20 requests, $m0 after ${SERVE_WARM:-2000} more, $m1 after $n more"
      python3 -c "import sys; m0,m1,r0,r1,t0,t1=map(float,sys.argv[1:]); t=t1-t0; print('soak: %d requests in %.1f s (%.0f/s); GPU memory %+.2f%%, RSS %d -> %d KiB (%+.2f%%)' % ($n, t, $n/t, 100*(m1-m0)/m0, r0, r1, 100*(r1-r0)/r0))" \
          "$m0" "$m1" "$r0" "$r1" "$t0" "$t1"
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv
      curl -s "localhost:$port/metrics" | grep -E "^lector_serve_(breaker|device_info)|fallback|primary_errors"
      grep -c "reading on the CPU engine" "$out/serve.log"
      kill -TERM $spid; wait $spid; echo "serve exit $?"
      ;;
    shapes)
      "$dev/bin/test_shapes" "$B/models" cuda 1e-3 >"$out/shapes.log" 2>&1
      echo "shapes rc=$?"; tail -8 "$out/shapes.log"
      ;;
    masks)
      "$dev/bin/test_width_masks" "$B/models" samples/sample.jpg cuda 2>&1 | tail -12
      doc_pages
      for f in "" --fp16; do
        for q in 0 32 64 128; do
          echo "--- ${f:-fp32}, --rec-width-bucket $q"
          $L bench pipeline --models "$B/models" --device cuda --workers 16 $f --rec-width-bucket $q \
              --rounds ${ROUNDS:-3} $(cat /tmp/docs.txt) >"$out/masks_pipeline${f}_$q.log" 2>&1
          tail -2 "$out/masks_pipeline${f}_$q.log"
          grep "^lector bench pipeline:" "$out/masks_pipeline${f}_$q.log" | sort | uniq -c | head -5   # failed pages
        done
      done
      for f in "" --fp16; do
        for q in 0 64; do
          $L --models "$B/models" --device cuda --workers 1 $f --rec-width-bucket $q --format json -q \
              $(cat /tmp/docs.txt) >"$out/masks_cli${f}_$q.jsonl"
        done
        python3 - "$out/masks_cli${f}_0.jsonl" "$out/masks_cli${f}_64.jsonl" "${f:-fp32}" <<'PY'
import json, sys
def load(path):
    return [(l["text"], l["score"]) for line in open(path) if line.strip()
            for p in json.loads(line)["pages"] for l in p["lines"]]
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"CLI on cuda ({sys.argv[3]}), bucket 64 against 0: {len(a)} and {len(b)} lines, "
      f"{sum(x[0] != y[0] for x, y in zip(a, b))} texts and "
      f"{sum(abs(x[1] - y[1]) > 1e-4 for x, y in zip(a, b))} scores (> 1e-4) differ")
PY
      done
      ;;
    cold)
      first=$(images sroie_subset | head -1)
      kc=/tmp/kcache
      for f in "--device cuda" "--device cuda --fp16" "--device cpu"; do
        for cache in empty kept kept kept kept kept; do   # the models loaded one after another and side by side (the default), in turns
          [ $cache = empty ] && rm -rf "$kc"
          for e in ${COLD_ENV:-LECTOR_PARALLEL_LOAD=0 LECTOR_PARALLEL_LOAD=1}; do
            # COLD_LOG=1: every run logged (debug, timestamped) and the log of one over 1.3 s kept, for the outliers
            t0=$(date +%s.%N)
            if [ -n "${COLD_LOG:-}" ]; then
              env $e LECTOR_LOG=debug $L $f --gpu-kernel-cache "$kc" "$first" 2> >(stamp >/tmp/cold_run.log)
            else
              env $e $L $f --gpu-kernel-cache "$kc" "$first" 2>/dev/null
            fi | { head -c1 >/dev/null; date +%s.%N >/tmp/t_first; cat >/dev/null; }
            t1=$(date +%s.%N)
            tf=$(awk "BEGIN {printf \"%.2f\", $(cat /tmp/t_first) - $t0}")
            echo "cold $f, kernel cache $cache, $e: first result $tf s, exit $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}") s"
            if [ -n "${COLD_LOG:-}" ] && awk "BEGIN {exit !($tf > 1.3)}"; then
              sleep 0.2; n=$((${n_slow:-0} + 1)); n_slow=$n
              printf 't0 %.3f\n' "$(awk "BEGIN {print $t0 % 1e4}")" | cat - /tmp/cold_run.log >"$out/cold_slow_$n.log"
              echo "  (slow: its debug log in cold_slow_$n.log)"
            fi
          done
        done
        for cache in empty kept; do
          [ $cache = empty ] && rm -rf "$kc"
          LECTOR_LOG=debug $L $f --gpu-kernel-cache "$kc" "$first" 2>&1 >/dev/null | stamp \
              >"$out/cold_${f//[ -]/_}_$cache.log"
          echo "--- $f, kernel cache $cache (debug log, first and last lines; NVRTC, cuDNN, model loading)"
          head -3 "$out/cold_${f//[ -]/_}_$cache.log"
          grep -i "nvrtc\|kernel cache\|algorithm\|loaded\|compiled\|plan" "$out/cold_${f//[ -]/_}_$cache.log" | head -30
          tail -3 "$out/cold_${f//[ -]/_}_$cache.log"
        done
        # what the plans' first runs wait for (the kernel cache kept): their steps of 2 ms or more
        [ "$f" = "--device cpu" ] || {
          echo "--- $f, kernel cache kept, LECTOR_CUDA_PROFILE=1: the plans' first-run steps of 2 ms or more"
          LECTOR_CUDA_PROFILE=1 LECTOR_LOG=debug $L $f --gpu-kernel-cache "$kc" "$first" 2>&1 >/dev/null |
              grep "a plan's first run" | sed 's/.*onnx: //' | sort -t' ' -k10,10 -rn | head -25
        }
      done
      # the same bytes whether a plan's kernels were compiled or loaded from the cache
      rm -rf "$kc"
      for f in "" --fp16; do
        images sroie_subset | head -8 >/tmp/kc_list.txt
        $L --device cuda --workers 1 $f --gpu-kernel-cache "$kc" --format json -q $(cat /tmp/kc_list.txt) >/tmp/kc_a.json 2>/dev/null
        $L --device cuda --workers 1 $f --gpu-kernel-cache "$kc" --format json -q $(cat /tmp/kc_list.txt) >/tmp/kc_b.json 2>/dev/null
        $L --device cuda --workers 1 $f --gpu-kernel-cache "" --format json -q $(cat /tmp/kc_list.txt) >/tmp/kc_c.json 2>/dev/null
        strip() { sed 's/"timings_ms":{[^}]*}//g' "$1"; }
        if cmp -s <(strip /tmp/kc_a.json) <(strip /tmp/kc_b.json) && cmp -s <(strip /tmp/kc_a.json) <(strip /tmp/kc_c.json); then
          echo "kernel cache ${f:-fp32}: same results compiled, loaded and without the cache ($(wc -c </tmp/kc_a.json) bytes)"
        else
          echo "kernel cache ${f:-fp32}: RESULTS DIFFER"; diff <(strip /tmp/kc_a.json) <(strip /tmp/kc_b.json) | head -5
        fi
      done
      ls -la "$kc" | head; du -sh "$kc"
      ;;
    docs)
      doc_pages
      echo "$(wc -l </tmp/docs.txt) document pages"
      first=$(head -1 /tmp/docs.txt)
      t0=$(date +%s.%N); $L --device cuda --format json "$first" >/dev/null 2>&1; t1=$(date +%s.%N)
      echo "cold start: process start to the first page's result $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}") s (fp32)"
      t0=$(date +%s.%N); $L --device cuda --fp16 --format json "$first" >/dev/null 2>&1; t1=$(date +%s.%N)
      echo "cold start: process start to the first page's result $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}") s (--fp16)"
      for f in "" --fp16; do
        $L bench pipeline --models "$B/models" --device cuda --workers 16 $f ${DOCS_ARGS:-} --rounds ${ROUNDS:-5} --json \
            $(cat /tmp/docs.txt) | tee -a "$out/docs_pipeline.jsonl"
        t0=$(date +%s.%N)
        $L --models "$B/models" --device cuda --workers 16 $f ${DOCS_ARGS:-} --format json -q $(cat /tmp/docs.txt) \
            >"$out/docs_cli$f.jsonl"
        t1=$(date +%s.%N)
        echo "cli ${f:-fp32}: $(wc -l <"$out/docs_cli$f.jsonl") pages in $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}") s (model loading and every compile included)"
      done
      images icdar2015_test >/tmp/list.txt
      for f in "" --fp16; do
        $L bench pipeline --models "$B/models" --device cuda --workers 16 $f --rounds ${ROUNDS:-3} --json \
            $(cat /tmp/list.txt) | tee -a "$out/icdar_pipeline.jsonl"
      done
      ;;
    scale)
      doc_pages
      for cfg in 1 4 16 16:nographs; do
        w=${cfg%%:*} e=LECTOR_X=1
        [ "$cfg" = "$w" ] || e=LECTOR_CUDA_GRAPHS=0
        echo "workers $cfg: $(env "$e" $L bench pipeline --models "$B/models" --device cuda --workers "$w" \
            --rounds ${ROUNDS:-3} $(cat /tmp/docs.txt) 2>&1 | tail -1)"
      done
      ;;
    graphs)
      doc_pages
      for f in "" --fp16; do
        for w in 1 16; do
          for g in 8 0; do
            LECTOR_CUDA_GRAPHS=$g $L --models "$B/models" --device cuda --workers $w $f --format json -q \
                $(cat /tmp/docs.txt /tmp/docs.txt) >"$out/graphs$f-w$w-$g.jsonl" 2>"$out/graphs$f-w$w-$g.err"
          done
          python3 - "$out/graphs$f-w$w-8.jsonl" "$out/graphs$f-w$w-0.jsonl" $w "${f:-fp32}" <<'PY'
import json, sys
def pages(path):
    return [(d["file"], d["pages"]) for d in map(json.loads, open(path))]
a, b, workers = pages(sys.argv[1]), pages(sys.argv[2]), int(sys.argv[3])
lines = sum(len(p["lines"]) for _, ps in a for p in ps)
def same(x, y):
    if workers == 1: return x == y
    if x[0] != y[0] or len(x[1]) != len(y[1]): return False
    for p, q in zip(x[1], y[1]):
        if len(p["lines"]) != len(q["lines"]): return False
        for u, v in zip(p["lines"], q["lines"]):
            if u["text"] != v["text"] or u["box"] != v["box"] or abs(u["score"] - v["score"]) > 1e-4: return False
    return True
diff = sum(1 for x, y in zip(a, b) if not same(x, y))
rule = "the same bytes" if workers == 1 else "the same texts and boxes, scores within 1e-4"
print(f"graphs {sys.argv[4]}, {workers} workers: {len(a)} pages, {lines} lines; on vs off, {rule}: {diff} pages differ"
      + ("" if len(a) == len(b) and not diff else "  FAIL"))
PY
        done
      done
      ;;
    wait)
      doc_pages
      for f in "" --fp16; do
        for w in 4 16; do
          for bw in 1 0 1 0; do
            echo "${f:-fp32} workers $w LECTOR_GPU_BATCH_WAIT=$bw: $(LECTOR_GPU_BATCH_WAIT=$bw $L bench pipeline \
                --models "$B/models" --device cuda --workers $w $f --rounds ${ROUNDS:-5} $(cat /tmp/docs.txt) 2>&1 |
                tail -2 | tr '\n' ' ' | sed 's/compiled in warm-up.*errors//')"
          done
        done
      done
      ;;
    soak)
      # wrk with its own libraries only: the shell commands its script runs (ls) get the system's
      mkdir -p /tmp/wrkbin
      printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$PWD/$dev/wrk" "$PWD/$dev/wrk/wrk" >/tmp/wrkbin/wrk
      chmod +x /tmp/wrkbin/wrk
      for d in cpu cuda; do
        if [ $d = cpu ]; then set -- --memory-limit 2G; n=6; else set -- --device cuda --gpu-mem-limit 8G --memory-limit 16G; n=4; fi
        env -u LD_LIBRARY_PATH PATH=/tmp/wrkbin:$PATH MODELS=$B/models SOAK_WORKERS=$n \
            bench/serve/soak.sh "$B/bin" "${SOAK_TIME:-9m30s}" "$@" >"$out/soak-$d.log" 2>&1 &
      done
      wait
      for d in cpu cuda; do echo "--- $d"; cat "$out/soak-$d.log"; done
      ;;
    prof)
      doc_pages
      for w in 1 16; do
        nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 \
            >"$out/smi-w$w.csv" 2>/dev/null &
        smi=$!
        LECTOR_CUDA_SYNC=block python3 - "$w" "$L" "$B/models" $(cat /tmp/docs.txt) <<'PY'
import os, resource, subprocess, sys, time
w, lector, models, pages = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
t0 = time.time()
r = subprocess.run([lector, "bench", "pipeline", "--models", models, "--device", "cuda", "--workers", w,
                    "--rounds", "5"] + pages, capture_output=True, text=True)
wall = time.time() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.stdout.strip()); print(r.stderr.strip()[-400:])
print(f"workers {w}: process wall {wall:.2f} s, CPU user {u.ru_utime:.2f} s + sys {u.ru_stime:.2f} s = "
      f"{(u.ru_utime + u.ru_stime) / wall:.2f} cores busy on average (warm-up included)")
PY
        kill $smi 2>/dev/null; wait $smi 2>/dev/null
        python3 - "$out/smi-w$w.csv" <<'PY'
import sys, statistics
rows = [list(map(float, l.split(","))) for l in open(sys.argv[1]) if l.count(",") == 2 and "N/A" not in l]
busy = [r[0] for r in rows if r[0] > 0]
if rows:
    print(f"nvidia-smi: {len(rows)} samples, utilization.gpu median {statistics.median(r[0] for r in rows):.0f}% "
          f"(of samples with work: median {statistics.median(busy) if busy else 0:.0f}%, max {max(busy) if busy else 0:.0f}%), "
          f"SM clock median {statistics.median(r[1] for r in rows):.0f} MHz, power median {statistics.median(r[2] for r in rows):.0f} W")
PY
      done
      nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
      echo "nsys: ${nsys:-not installed}"; ls -d /usr/local/cuda*/extras/CUPTI/lib64 2>/dev/null
      if [ -n "$nsys" ]; then
        "$nsys" profile -t cuda -o /tmp/prof -f true $L bench pipeline --models "$B/models" --device cuda \
            --workers 16 --rounds 3 $(cat /tmp/docs.txt) >"$out/nsys.log" 2>&1
        "$nsys" stats -q -r cuda_gpu_kern_sum,cuda_api_sum -f csv -o /tmp/prof /tmp/prof.nsys-rep >/dev/null 2>&1
        "$nsys" stats -q -r cuda_gpu_trace -f csv -o /tmp/prof /tmp/prof.nsys-rep >/dev/null 2>&1
        ls /tmp/prof_* 2>/dev/null; head -25 /tmp/prof_cuda_gpu_kern_sum.csv 2>/dev/null | cut -c1-220
        head -20 /tmp/prof_cuda_api_sum.csv 2>/dev/null | cut -c1-200
        python3 - /tmp/prof_cuda_gpu_trace.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
k = [r for r in rows if r.get("Name") and "[CUDA mem" not in r["Name"]]
ev = sorted((int(r["Start (ns)"]), int(r["Start (ns)"]) + int(r["Duration (ns)"])) for r in k)
if ev:
    span = ev[-1][1] - ev[0][0]; busy = 0; end = ev[0][0]
    for s, e in ev:
        if e > end: busy += e - max(s, end); end = e
    tot = sum(e - s for s, e in ev)
    d = sorted(e - s for s, e in ev)
    print(f"trace: {len(ev)} kernels in {span/1e9:.2f} s = {len(ev)/(span/1e9):.0f} a second; GPU busy {100*busy/span:.0f}%; "
          f"kernels in flight on average while busy {tot/busy:.2f}; kernel duration median {d[len(d)//2]/1e3:.1f} us, "
          f"p90 {d[int(len(d)*.9)]/1e3:.1f} us")
    m = [r for r in rows if "[CUDA mem" in r.get("Name", "")]
    print(f"memcpy/memset: {len(m)}, {sum(int(r['Duration (ns)']) for r in m)/1e9:.3f} s")
PY
      fi
      ;;
    firstpass)
      doc_pages
      for i in 1 2 3 4 5 6 7 8; do cat /tmp/docs.txt; done >/tmp/docs8.txt
      $L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 1 --json $(cat /tmp/docs.txt) >/dev/null 2>&1  # NVRTC's cache filled
      for w in 16 1; do
        echo "--- LECTOR_LOG=debug bench pipeline fp32, $w workers, 1 round"
        LECTOR_LOG=debug $L bench pipeline --models "$B/models" --device cuda --workers $w --rounds 1 --json \
            $(cat /tmp/docs.txt) 2>"$out/firstpass-w$w.log" | cut -c1-400
        python3 "$(dirname "$0")/compile_split.py" "$out/firstpass-w$w.log"
      done
      # a process's first use of each cuBLAS/cuDNN kernel loads it (CUDA's lazy loading): eager loading
      # moves that into the start-up, which says how much of the warm-up pass it is
      echo "--- bench pipeline, CUDA_MODULE_LOADING=EAGER, 1 round: $(CUDA_MODULE_LOADING=EAGER $L bench pipeline \
          --models "$B/models" --device cuda --workers 16 --rounds 1 --json $(cat /tmp/docs.txt) 2>&1 | tail -1 | cut -c1-330)"
      for g in "" 0; do for r in 1 2; do
        echo "--- bench pipeline, graphs ${g:-on}, $r round(s): $(env ${g:+LECTOR_CUDA_GRAPHS=$g} $L bench pipeline \
            --models "$B/models" --device cuda --workers 16 --rounds $r --json $(cat /tmp/docs.txt) 2>&1 | tail -1 | cut -c1-330)"
      done; done
      for g in "" 0 "" 0; do
        t0=$(date +%s.%N)
        env ${g:+LECTOR_CUDA_GRAPHS=$g} $L --models "$B/models" --device cuda --workers 16 --format json @/tmp/docs8.txt \
            >/dev/null 2>/tmp/cli.err
        echo "CLI x8, graphs ${g:-on}: $(tail -1 /tmp/cli.err); process wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
      done
      for e in LECTOR_X=1 LECTOR_CUDA_NHWC=1; do
        env $e $L bench gpu --only det --models "$B/models" --batches 1,8 --runs 10 2>&1 | tail -2 | sed "s/^/$e /"
      done
      for e in LECTOR_X=1 LECTOR_CUDA_NHWC=1 LECTOR_X=1 LECTOR_CUDA_NHWC=1; do
        echo "pages, $e: $(env $e $L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 8 --json \
            $(cat /tmp/docs.txt) 2>&1 | tail -1 | cut -c1-300)"
      done
      E2E="LECTOR_CUDA_NHWC=1" bash "$0" e2e
      for m in "rec 8" "det 1"; do read -r model nb <<<"$m"
        echo "--- $model fp32, batches $nb: the 40 slowest steps of the second run, each as its own graph (LECTOR_CUDA_PROFILE=3)"
        LECTOR_CUDA_PROFILE=3 $L bench gpu --only $model --models "$B/models" --batches $nb --runs 3 2>&1 | grep "^cuda step" |
            sort -k6 -n -r | head -40
      done
      ;;
    clibar)
      doc_pages
      for i in 1 2 3 4 5 6 7 8; do cat /tmp/docs.txt; done >/tmp/docs8.txt
      $L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 1 $(cat /tmp/docs.txt) >/dev/null 2>&1
      for c in fp32_q0 fp16_q0 fp32_q64; do   # a first pass's compiles, timestamped (analysed off the machine)
        f=; [ "${c%_*}" = fp16 ] && f=--fp16
        LECTOR_LOG=debug $L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 1 --json $f \
            --rec-width-bucket "${c#*_q}" $(cat /tmp/docs.txt) 2>&1 | stamp | xz >"$out/clibar_debug_$c.log.xz"
      done
      python3 "$(dirname "$0")/compile_split.py" "$out"/clibar_debug_*.log.xz
      for turn in $(seq ${CLIBAR_TURNS:-2}); do for reps in ${CLIBAR_REPS:-8 32}; do
        for i in $(seq $reps); do cat /tmp/docs.txt; done >/tmp/docsN.txt
        for q in ${CLIBAR_Q:-0 64}; do for f in "" --fp16; do
        tag=${f:-fp32}_q${q}_x${reps}_$turn
        bp=$($L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds $reps $f --rec-width-bucket $q \
            --json $(cat /tmp/docs.txt) 2>"$out/clibar_bench_$tag.err" | tail -1)
        t0=$(date +%s.%N)
        $L --models "$B/models" --device cuda --workers 16 $f --rec-width-bucket $q --format json @/tmp/docsN.txt \
            >/tmp/clibar_cli.jsonl 2>"$out/clibar_cli_$tag.err"
        t1=$(date +%s.%N)
        python3 "$(dirname "$0")/cli_ratio.py" "$bp" /tmp/clibar_cli.jsonl "$(awk "BEGIN {print $t1 - $t0}")" "$tag"
        grep -h "lector" "$out/clibar_bench_$tag.err" "$out/clibar_cli_$tag.err" | grep -v "^lector: [0-9]* pages" | sort | uniq -c | head -3
        tail -1 "$out/clibar_cli_$tag.err"
      done; done; done; done
      for q in 0 64; do   # the CLI's first pass without CUDA graphs (each plan's own arena and graph cost)
        t0=$(date +%s.%N)
        LECTOR_CUDA_GRAPHS=0 $L --models "$B/models" --device cuda --workers 16 --rec-width-bucket $q --format json \
            @/tmp/docs8.txt >/dev/null 2>/tmp/cli.err
        echo "CLI x8 fp32 q$q, graphs off: $(tail -1 /tmp/cli.err); process wall $(awk "BEGIN {print $(date +%s.%N) - $t0}") s"
      done
      for i in $(seq 32); do cat /tmp/docs.txt; done >/tmp/docsN.txt
      for f in "" --fp16; do   # the CLI's time outside the pages: engine creation, reading, the engine's teardown
        t0=$(date +%s.%N)
        LECTOR_LOG=debug $L --models "$B/models" --device cuda --workers 16 $f --format json @/tmp/docsN.txt \
            >/dev/null 2>/tmp/cli.err
        echo "CLI x32 ${f:-fp32}: $(grep 'cli: engine' /tmp/cli.err | cut -d: -f3-); $(grep "input(s)" /tmp/cli.err | tail -1 | cut -d: -f2-);" \
            "process wall $(awk "BEGIN {print $(date +%s.%N) - $t0}") s"
      done
      ;;
    fp16rules)
      make_archive || continue
      $L --models "$B/models" --device cuda --workers 16 --format json @/tmp/archive/list.txt \
          >/tmp/rules_fp32.jsonl 2>"$out/fp16rules_fp32.err"
      IFS=";" read -ra rules <<<"${FP16_RULES:---fp16-recheck 0.9 --fp16-margin 0;;--fp16-recheck 0.9;--fp16-margin 0}"
      for turn in $(seq ${FP16_TURNS:-2}); do for r in "${rules[@]}"; do
        tag=$(echo "fp16 $r" | tr -c 'A-Za-z0-9-' '_')
        if [ "$turn" = 1 ]; then
          $L --models "$B/models" --device cuda --workers 16 --fp16 $r --format json @/tmp/archive/list.txt \
              >/tmp/rules_fp16.jsonl 2>"$out/fp16rules_cli_$tag.err"
          python3 - /tmp/rules_fp32.jsonl /tmp/rules_fp16.jsonl "--fp16 $r" <<'PY'
import json, sys
def lines(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        out[r.get("file")] = [(l["text"], l["box"]) for pg in r.get("pages", []) for l in pg.get("lines", [])]
    return out
a, b = lines(sys.argv[1]), lines(sys.argv[2])
tot = sum(len(v) for v in a.values())
same = sum(len(set(map(str, a[f])) & set(map(str, b.get(f, [])))) for f in a)
print(f"{sys.argv[3]}: {same} of {tot} fp32 lines read the same ({100.0 * same / max(tot, 1):.2f}%), "
      f"{sum(len(v) for v in b.values())} lines in all")
PY
        fi
        $L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 1 --fp16 $r \
            --json $(cat /tmp/archive/list.txt) 2>"$out/fp16rules_bench_$tag.err" | tail -1 | python3 -c '
import json, sys
b = json.loads(sys.stdin.read() or "{}")
print("  turn %s, bench pipeline --fp16 %s: %.1f pages/s, p99 %.0f ms, %s lines, runs %s" % (sys.argv[1], sys.argv[2],
      b.get("pages_per_s", 0), b.get("p99_ms", 0), b.get("lines"), b.get("runs")))' "$turn" "$r"
      done; done
      ;;
    archive)
      make_archive || continue
      for turn in $(seq ${ARCHIVE_TURNS:-2}); do for q in ${ARCHIVE_Q:-0}; do for f in "" --fp16; do
        tag=${f:-fp32}_q${q}_$turn
        bp=$($L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 1 $f --rec-width-bucket $q \
            --json $(cat /tmp/archive/list.txt) 2>"$out/archive_bench_$tag.err" | tail -1)
        for e in "" ${ARCHIVE_CLI_ENV:-}; do   # as it is, then with each setting (e.g. LECTOR_CUDA_GRAPHS=0)
          err="$out/archive_cli_$tag${e:+_$e}.err"
          t0=$(date +%s.%N)
          env ${e:+"$e"} $L --models "$B/models" --device cuda --workers 16 $f --rec-width-bucket $q --format json \
              @/tmp/archive/list.txt >/tmp/archive_cli.jsonl 2>"$err"
          t1=$(date +%s.%N)
          python3 "$(dirname "$0")/cli_ratio.py" "$bp" /tmp/archive_cli.jsonl "$(awk "BEGIN {print $t1 - $t0}")" "$tag${e:+ $e}"
          tail -1 "$err"
          # a setting's texts against the CLI's as it is (fp32: the same; --fp16: a batch's rows can move a line)
          if [ -z "$e" ]; then cp /tmp/archive_cli.jsonl /tmp/archive_cli_base.jsonl
          else python3 - /tmp/archive_cli_base.jsonl /tmp/archive_cli.jsonl <<'PY'
import json, sys
def texts(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        out[r.get("file")] = [l["text"] for pg in r.get("pages", []) for l in pg.get("lines", [])]
    return out
a, b = texts(sys.argv[1]), texts(sys.argv[2])
lines = sum(len(v) for v in a.values())
same = sum(x == y for f in a for x, y in zip(a[f], b.get(f, [])))
print(f"  texts against the CLI as it is: {sum(a[f] != b.get(f) for f in a)} of {len(a)} pages differ; {same} of {lines} lines the same")
PY
          fi
        done
      done; done; done
      # ARCHIVE_CURVE=1: the CLI once more, fp32 and --fp16, each result stamped as it arrives (the CLI writes
      # and flushes each in input order): pages done in each tenth of the process's time, so that a slow start
      # and a slow first pass can be told apart
      [ -n "${ARCHIVE_CURVE:-}" ] && for f in "" --fp16; do
        t0=$(python3 -c 'import time; print(time.time() % 1e4)')
        $L --models "$B/models" --device cuda --workers 16 $f --format json @/tmp/archive/list.txt 2>/dev/null \
            | stamp >/tmp/archive_curve.txt
        python3 - "$t0" "${f:-fp32}" /tmp/archive_curve.txt <<'PY'
import sys
t0, tag = float(sys.argv[1]), sys.argv[2]
ts = [float(line.split(" ", 1)[0]) - t0 for line in open(sys.argv[3], encoding="utf-8") if line.strip()]
if ts:
    end = ts[-1]
    tenths = [0] * 10
    for t in ts:
        tenths[min(9, int(10 * t / end))] += 1
    print(f"curve {tag}: {len(ts)} results in {end:.2f} s after the start; first at {ts[0]:.2f} s; per tenth: {tenths}")
PY
      done
      # ARCHIVE_PROFILE=1: the CLI over the archive with LECTOR_CUDA_PROFILE=1 (fp32): the steps' time in the
      # plans' first runs against their later runs (each step synchronised, so slower than the runs above)
      [ -n "${ARCHIVE_PROFILE:-}" ] && {
        echo "-- LECTOR_CUDA_PROFILE=1, fp32"
        LECTOR_CUDA_PROFILE=1 LECTOR_CLI_FREE_ENGINE=1 $L --models "$B/models" --device cuda --workers 16 --format json @/tmp/archive/list.txt \
            2>&1 >/dev/null | grep -v "^ *[a-zA-Z0-9]* *[a-z0-9-]* *[0-9]* steps *[0-9.]* ms *0\.[0-4]%" | tail -60
      }
      # where the CLI's compiles on distinct pages go: each plan's compile split (each line at its own width),
      # fp32 or as ARCHIVE_DEBUG says (e.g. "fp32 --fp16")
      for f in ${ARCHIVE_DEBUG:-fp32}; do
        LECTOR_LOG=debug $L --models "$B/models" --device cuda --workers 16 ${f#fp32} --format json @/tmp/archive/list.txt \
            2>&1 >/dev/null | stamp | xz >"$out/archive_debug_${f}_q0.log.xz"
        echo "-- debug split, $f"
        python3 "$(dirname "$0")/compile_split.py" "$out/archive_debug_${f}_q0.log.xz" | grep -v "^ *[0-9]* *lector: debug"
      done
      ;;
    kernels)
      [ -s /tmp/archive/list.txt ] || make_archive || continue
      # NVRTC's compiles in a debug log: kernels compiled, from the cache, shipped (cuda_nvrtc.c's line)
      nv_sum() { python3 -c 'import re, sys
t = [0, 0, 0]
for l in sys.stdin:
    m = re.search(r"\((\d+) from the kernel cache, (\d+) shipped, (\d+) compiled by NVRTC\)", l)
    if m: t = [a + int(b) for a, b in zip(t, m.groups())]
print("%d from the kernel cache, %d shipped, %d compiled by NVRTC" % tuple(t))'; }
      rm -rf /tmp/kc_rec /tmp/kc_held /tmp/kshipped
      for f in "" --fp16 "--fp16 --fp16-det"; do
        echo "record ${f:-fp32} over the archive: $(LECTOR_CUDA_KERNELS_SHIPPED= LECTOR_LOG=debug $L --models "$B/models" \
            --device cuda --workers 16 $f --gpu-kernel-cache /tmp/kc_rec --format json @/tmp/archive/list.txt 2>&1 >/dev/null | nv_sum)"
      done
      python3 scripts/kernels.py extract /tmp/kc_rec -o /tmp/kernels_archive.manifest
      t0=$(date +%s.%N)
      python3 scripts/kernels.py build /tmp/kernels_archive.manifest --arch "$(nvidia-smi --query-gpu=compute_cap \
          --format=csv,noheader | head -1 | tr -d .)" -o /tmp/kshipped || continue
      echo "built in $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}") s: $(ls /tmp/kshipped | wc -l) files, $(du -sh /tmp/kshipped | cut -f1)"
      { images icdar2015_test; find samples -name '*.jpg' -o -name '*.png' | sort; } >/tmp/held.txt
      for f in "" --fp16 "--fp16 --fp16-det"; do for w in 16 1; do
        echo "held-out pages ($(wc -l </tmp/held.txt)), ${f:-fp32}, $w workers, shipped: $(LECTOR_CUDA_KERNELS_SHIPPED=/tmp/kshipped \
            LECTOR_LOG=debug $L --models "$B/models" --device cuda --workers $w $f --gpu-kernel-cache /tmp/kc_held_$w \
            --format json @/tmp/held.txt 2>&1 >/dev/null | nv_sum)"
      done; done
      first=$(images sroie_subset | head -1)
      for i in 1 2 3; do for f in "--fp16" ""; do for sh in /tmp/kshipped ""; do
        rm -rf /tmp/kc_cold; t0=$(date +%s.%N)
        LECTOR_CUDA_KERNELS_SHIPPED=$sh $L --device cuda $f --gpu-kernel-cache /tmp/kc_cold "$first" 2>/dev/null \
            | { head -c1 >/dev/null; date +%s.%N >/tmp/t_first; cat >/dev/null; }
        echo "cold ${f:-fp32}, cache empty, shipped ${sh:-none}: first result $(awk "BEGIN {printf \"%.2f\", $(cat /tmp/t_first) - $t0}") s"
      done; done; done
      # the same results from shipped kernels as from compiled ones
      images sroie_subset | head -8 >/tmp/ks_list.txt
      for f in "" --fp16; do
        LECTOR_CUDA_KERNELS_SHIPPED= $L --device cuda --workers 1 $f --gpu-kernel-cache "" --format json -q @/tmp/ks_list.txt >/tmp/ks_a.json 2>/dev/null
        LECTOR_CUDA_KERNELS_SHIPPED=/tmp/kshipped $L --device cuda --workers 1 $f --gpu-kernel-cache "" --format json -q @/tmp/ks_list.txt >/tmp/ks_b.json 2>/dev/null
        strip() { sed 's/"timings_ms":{[^}]*}//g' "$1"; }
        if cmp -s <(strip /tmp/ks_a.json) <(strip /tmp/ks_b.json); then echo "shipped ${f:-fp32}: same results as compiled ($(wc -c </tmp/ks_a.json) bytes)"
        else echo "shipped ${f:-fp32}: RESULTS DIFFER"; fi
      done
      python3 scripts/kernels.py extract /tmp/kc_rec /tmp/kc_held_16 /tmp/kc_held_1 -o "$out/kernels.manifest"
      [ -n "${OUT:-}" ] && cp "$out/kernels.manifest" "$OUT/"
      ;;
    coldlibs)
      first=$(images sroie_subset | head -1)
      rm -rf /tmp/shipped_nover && cp -r "$B/lib/lector-kernels" /tmp/shipped_nover && rm -f /tmp/shipped_nover/NVRTC
      find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /usr/lib64 -name 'lib*.so*' \( -name 'libcudnn*' -o \
          -name 'libcublas*' -o -name 'libnvrtc*' -o -name 'libcudart*' -o -name 'libcuda.so*' -o -name 'libnvidia*' \) \
          2>/dev/null | sort -u >/tmp/coldlibs.txt
      find "$B/lib" "$B/models" -type f >>/tmp/coldlibs.txt
      echo "coldlibs: $(wc -l </tmp/coldlibs.txt) files, $(xargs du -chL </tmp/coldlibs.txt 2>/dev/null | tail -1 | cut -f1)"
      evict() { python3 -c 'import os, sys
for p in open(sys.argv[1]).read().split():
    try:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    except OSError:
        pass' /tmp/coldlibs.txt; }
      nv=$(grep -m1 'libnvrtc.so' /tmp/coldlibs.txt)
      command -v fincore >/dev/null && { echo "before:"; fincore "$nv"; evict; echo "evicted:"; fincore "$nv"; }
      kc=/tmp/kcache_coldlibs
      for turn in $(seq "${COLDLIBS_TURNS:-3}"); do
        for f in "--device cuda" "--device cuda --fp16"; do
          for e in ${COLDLIBS_ENV:-LECTOR_X=1 LECTOR_CUDA_KERNELS_SHIPPED=/tmp/shipped_nover}; do
            rm -rf "$kc"; evict; sync
            t0=$(date +%s.%N)
            env $e $L $f --gpu-kernel-cache "$kc" "$first" 2>/dev/null |
                { head -c1 >/dev/null; date +%s.%N >/tmp/t_first; cat >/dev/null; }
            t1=$(date +%s.%N)
            echo "coldlibs turn $turn $f $e: first result $(awk "BEGIN {printf \"%.2f\", $(cat /tmp/t_first) - $t0}") s," \
                "exit $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}") s"
          done
        done
      done
      for e in ${COLDLIBS_ENV:-LECTOR_X=1 LECTOR_CUDA_KERNELS_SHIPPED=/tmp/shipped_nover}; do
        rm -rf "$kc"; evict
        env $e LD_DEBUG=files $L --device cuda --fp16 --gpu-kernel-cache "$kc" "$first" 2>"$out/coldlibs_ld_${e%%=*}.log" >/dev/null
        echo "--- $e: NVRTC in the loader's log: $(grep -c 'file=.*libnvrtc' "$out/coldlibs_ld_${e%%=*}.log") lines"
        grep 'file=.*libnvrtc' "$out/coldlibs_ld_${e%%=*}.log" | sed 's/^ *[0-9]*: *//' | sort -u | head -4
        rm -rf "$kc"; evict
        env $e LECTOR_LOG=debug $L --device cuda --fp16 --gpu-kernel-cache "$kc" "$first" 2>&1 >/dev/null | stamp \
            >"$out/coldlibs_debug_${e%%=*}.log"
        grep -i "nvrtc\|shipped" "$out/coldlibs_debug_${e%%=*}.log" | head -6
      done
      ;;
    nvrtc)
      # which NVRTC programs are slow to compile: the cold start's first page with an empty kernel cache,
      # fp32 and --fp16, models loaded one after another, side by side, and without the unrolled depthwise
      # kernels (LECTOR_CUDA_DW_UNROLL=0) and with blocking waits for the GPU (LECTOR_CUDA_SYNC=block: no
      # thread spinning beside NVRTC), each program's source kept
      # (LECTOR_CUDA_NVRTC_DUMP; named by compile time) in nvrtc.tar.xz
      first=$(images sroie_subset | head -1)
      mkdir -p /tmp/nvrtc
      for f in "--fp16" "" "--fp16"; do
        for e in LECTOR_PARALLEL_LOAD=0 LECTOR_PARALLEL_LOAD=1 LECTOR_CUDA_DW_UNROLL=0 LECTOR_CUDA_SYNC=block; do
          rm -rf /tmp/kc_nvrtc; n_nv=$((${n_nv:-0} + 1)); d=/tmp/nvrtc/${f:-fp32}_${e//[^A-Z0-9]/}_$n_nv; mkdir -p "$d"
          t0=$(date +%s.%N)
          env $e LECTOR_CUDA_NVRTC_DUMP="$d" $L --device cuda $f --gpu-kernel-cache /tmp/kc_nvrtc "$first" >/dev/null 2>&1
          echo "nvrtc ${f:-fp32} $e: $(awk "BEGIN {printf \"%.2f\", $(date +%s.%N) - $t0}") s; $(ls "$d" | tr '\n' ' ')"
        done
      done
      tar -C /tmp -cJf "$out/nvrtc.tar.xz" nvrtc
      ;;
    fp16cost)
      doc_pages
      for f in "--fp16" "--fp16 --fp16-margin 0" "--fp16 --fp16-det" "--fp16 --fp16-det --fp16-margin 0" "--fp16" ""; do
        echo "--- ${f:-fp32}: $($L bench pipeline --models "$B/models" --device cuda --workers 16 --rounds 8 $f --json \
            $(cat /tmp/docs.txt) 2>&1 | tail -1 | cut -c1-400)"
      done
      for f in "" "--fp16"; do   # every step of the document pages' real shapes timed (one worker, so one at a time)
        echo "--- ${f:-fp32}: GPU time per operator over the pages (LECTOR_CUDA_PROFILE=1, 1 worker, 1 round)"
        LECTOR_CUDA_PROFILE=1 $L bench pipeline --models "$B/models" --device cuda --workers 1 --rounds 1 $f \
            $(cat /tmp/docs.txt) 2>&1 | grep -v "^  .* 0\.[0-9]%$" | tail -28
      done
      ;;
    firstruns)
      [ -s /tmp/archive/list.txt ] || make_archive || continue
      head -n "${FIRSTRUNS_PAGES:-300}" /tmp/archive/list.txt >/tmp/fr_list.txt
      for f in "" --fp16; do for e in ${FIRSTRUNS_ENV:-LECTOR_X=1 CUDA_MODULE_LOADING=EAGER}; do
        t0=$(date +%s.%N)
        env $e LECTOR_CUDA_PROFILE=1 LECTOR_LOG=debug $L --models "$B/models" --device cuda --workers 16 $f --format json \
            @/tmp/fr_list.txt 2>&1 >/dev/null | grep "a plan's first run" >/tmp/fr.txt
        echo "-- first runs, ${f:-fp32}, $e: process $(awk "BEGIN {printf \"%.2f\", $(date +%s.%N) - $t0}") s;" \
             "steps of 2 ms or more by operator and kind: count, ms summed, count of 20 ms or more"
        sed 's/.*a plan.s first run: step [0-9]* //; s/ took / /; s/ ms, .*//' /tmp/fr.txt |
            awk '{k = $1 " " $2; n[k]++; s[k] += $3; if ($3 >= 20) b[k]++}
                 END {for (k in n) printf "  %-28s %6d %9.1f %6d\n", k, n[k], s[k], b[k]}' | sort -k4 -rn | head -12
        sort -t' ' -k10,10 -rn /tmp/fr.txt | head -4 | sed 's/.*onnx: //'
      done; done
      ;;
    *) echo "unknown step $step" ;;
  esac
done
