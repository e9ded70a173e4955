#!/usr/bin/env bash
# Soak of `lector serve` under varied traffic (issue 21, deliverable 7; not a
# test): wrk at 64 connections for DURATION posting 300 distinct page sizes
# with 6% corrupt and 4% over-limit bodies (soak_images.py, soak.lua).
# Reported: status counts and latency of the answered requests (from the
# server's access log, -v), the kernel's peak RSS (VmHWM) against the
# memory limit, the plan caches at the end.
#   bench/serve/soak.sh [BUILD_DIR] [DURATION] [EXTRA SERVE ARGS...]
#   e.g. bench/serve/soak.sh build 10m --memory-limit 2G
#   GPU: bench/serve/soak.sh build 10m --device cuda --gpu-mem-limit 8G
# SOAK_WORKERS (default 2): the server's workers; MODELS (default models/): the models.
# needs wrk (Debian package wrk).
set -eu
build=${1:-build} duration=${2:-10m}
shift 2 || true
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
python3 bench/serve/soak_images.py "$tmp/img"
"$build/lector" serve --listen 127.0.0.1:0 --models "${MODELS:-models}" --workers "${SOAK_WORKERS:-2}" --threads 1 -v "$@" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q 'ready in' "$tmp/log" && break; sleep 0.1; done
port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$tmp/log" | grep -o '[0-9]*$')
grep 'memory limit' "$tmp/log"
# the engine's GPU memory (with --device cuda) sampled every 5 s, from
# another loopback address: wrk's 64 connections fill 127.0.0.1's share
# (--max-connections-per-ip 64)
( while kill -0 $pid 2>/dev/null; do
      curl -s --interface 127.0.0.2 "http://127.0.0.1:$port/metrics" | awk '$1 == "lector_serve_engine_gpu_memory_bytes" {print $2}'
      sleep 5
  done >"$tmp/gpu" ) &
SOAK_DIR=$tmp/img wrk -t 2 -c 64 -d "$duration" --timeout 120s -s bench/serve/soak.lua "http://127.0.0.1:$port" \
    >"$tmp/wrk" 2>&1 || { echo "soak: wrk failed (status $?):" >&2; cat "$tmp/wrk" >&2; exit 1; }
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics"
gpu_peak=$(sort -g "$tmp/gpu" | tail -1)
[ -n "$gpu_peak" ] && echo "GPU memory through the engine: peak $(awk -v b="$gpu_peak" 'BEGIN {printf "%.0f", b / 1048576}') MiB over $(grep -c . "$tmp/gpu") samples (lector_serve_engine_gpu_memory_bytes, every 5 s; cap $(awk '$1 == "lector_serve_engine_gpu_memory_limit_bytes" {printf "%.0f", $2 / 1048576}' "$tmp/metrics") MiB)"
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
kill -TERM $pid; wait $pid || true
python3 - "$tmp/log" "$tmp/metrics" "$hwm" <<'PY'
import re, sys
log, metrics, hwm = sys.argv[1], sys.argv[2], int(sys.argv[3])
codes, ms = {}, []
for line in open(log, errors="replace"):
    m = re.search(r'"POST /v1/ocr" (\d+) \d+ (\d+)$', line)
    if m:
        codes[m[1]] = codes.get(m[1], 0) + 1
        if m[1] == "200": ms.append(int(m[2]))
ms.sort()
pct = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))] if ms else 0
lim = re.search(r"memory limit (\d+) MiB", open(log).read())
m = dict(l.split()[:2] for l in open(metrics) if l and l[0] != "#" and len(l.split()) >= 2)
print("statuses:", " ".join(f"{k}={v}" for k, v in sorted(codes.items())))
print(f"answered 200: {len(ms)}, p50 {pct(0.5)} ms, p99 {pct(0.99)} ms, max {ms[-1] if ms else 0} ms")
print(f"peak RSS (VmHWM) {hwm // 1024} MiB, memory limit {lim[1] if lim else '?'} MiB; plan caches at the end "
      f"{float(m.get('lector_serve_plan_cache_bytes', 0)) / 2**20:.0f} MiB")
PY
grep -E 'Requests/sec|Socket errors' "$tmp/wrk" || true
