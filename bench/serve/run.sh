#!/usr/bin/env bash
# Load benchmark of `lector serve` (not a test): wrk (Debian package wrk).
#   bench/serve/run.sh [BUILD_DIR]        run from the repository root
# Environment: DURATION (60s), CONNS (64), WORKERS (online CPUs), THREADS (1),
#   RSS_REQUESTS (10000), RSS_IMAGE (samples/sample.jpg), RSS_CONNS (8).
# 1. wrk for DURATION at CONNS connections posting samples/sample.jpg:
#    requests/s, p50/p99, errors (non-2xx count as errors_status).
# 2. resident memory (VmRSS) of the server after phase 1, then after
#    RSS_REQUESTS more requests (of RSS_IMAGE), and the change in percent.
set -eu
build=${1:-build}
lector=$build/lector
DURATION=${DURATION:-60s} CONNS=${CONNS:-64} THREADS=${THREADS:-1}
RSS_REQUESTS=${RSS_REQUESTS:-10000} RSS_CONNS=${RSS_CONNS:-8}
WORKERS=${WORKERS:-$(nproc)}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$lector" serve --listen 127.0.0.1:0 --models models --threads "$THREADS" --workers "$WORKERS" \
    --queue $((CONNS * 2)) --timeout-ms 300000 >"$tmp/log" 2>&1 &
pid=$!
until grep -q 'ready in' "$tmp/log"; do sleep 0.1; kill -0 "$pid" || { cat "$tmp/log"; exit 1; }; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/log" | grep -o '[0-9]*$')
url=http://127.0.0.1:$port/v1/ocr
rss() { awk '/^VmRSS/ {print $2}' /proc/"$pid"/status; }
echo "server: $(grep 'ready in' "$tmp/log")"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rss_start_kib=$(rss)"
LECTOR_IMAGE=samples/sample.jpg wrk -t 2 -c "$CONNS" -d "$DURATION" --timeout 300s -s bench/serve/post.lua "$url" |
    tee "$tmp/wrk1" | grep RESULT
rss0=$(rss)
echo "rss_after_wrk_kib=$rss0"
img=${RSS_IMAGE:-samples/sample.jpg}
echo "rss phase: $RSS_REQUESTS requests of $(basename "$img") ($(stat -c %s "$img") bytes), $RSS_CONNS connections"
t0=$(date +%s.%N)
# wrk counts the responses it got; run 30 s slices until RSS_REQUESTS are done
done_n=0
while [ "$done_n" -lt "$RSS_REQUESTS" ]; do
    LECTOR_IMAGE=$img wrk -t 1 -c "$RSS_CONNS" -d 30s --timeout 300s -s bench/serve/post.lua "$url" >"$tmp/wrk2"
    n=$(grep -o 'RESULT requests=[0-9]*' "$tmp/wrk2" | grep -o '[0-9]*$')
    errs=$(grep -o 'errors_[a-z]*=[0-9]*' "$tmp/wrk2" | awk -F= '{s += $2} END {print s}')
    [ "$errs" = 0 ] || { echo "errors during the RSS phase: $(cat "$tmp/wrk2")"; }
    done_n=$((done_n + n))
done
rss1=$(rss)
echo "rss phase: $done_n requests in $(echo "$(date +%s.%N) - $t0" | bc) s"
echo "rss_before_kib=$rss0 rss_after_kib=$rss1 change_pct=$(echo "scale=2; ($rss1 - $rss0) * 100 / $rss0" | bc)"
kill -TERM "$pid"
wait "$pid" && echo "server exit 0" || echo "server exit $?"
grep 'stopped:' "$tmp/log"
