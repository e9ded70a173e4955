-- wrk script: POST one image to /v1/ocr (LECTOR_IMAGE, default samples/sample.jpg)
-- and print the numbers bench/serve/run.sh records.
local path = os.getenv("LECTOR_IMAGE") or "samples/sample.jpg"
local f = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.path = "/v1/ocr"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "image/jpeg"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_s=%.1f rps=%.2f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f " ..
    "errors_connect=%d errors_read=%d errors_write=%d errors_status=%d errors_timeout=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1e3, latency:percentile(99) / 1e3, latency.max / 1e3,
    e.connect, e.read, e.write, e.status, e.timeout))
end
