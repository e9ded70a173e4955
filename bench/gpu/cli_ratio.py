#!/usr/bin/env python3
"""The CLI against bench pipeline on the same pages (issue 19: within 80%), one line.

    cli_ratio.py BENCH_JSON CLI_JSONL WALL_S TAG

BENCH_JSON: the last line of `lector bench pipeline --json` (or anything else when it failed);
CLI_JSONL: the CLI's `--format json` output; WALL_S: the CLI's process time, start to exit.
Prints bench pipeline's pages/s with its warm-up and compiles, the CLI's results, errors and
pages/s, their ratio, the plans the CLI had compiled after each quarter of its pages, and the
first failed pages' messages. Used by bench/gpu/device.sh (clibar, archive).
"""
import json
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1])
    bench, cli, wall, tag = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    bp = json.loads(bench) if bench.startswith("{") else {}
    pages = [json.loads(line) for line in open(cli, encoding="utf-8") if line.strip()]
    failed = [p for p in pages if p.get("error")]
    pps = bp.get("pages_per_s", 0) or 0
    cli_pps = len(pages) / wall if wall > 0 else 0
    plans = [(p.get("timings_ms") or {}).get("plans_compiled") for p in pages]
    quarters = [plans[max(0, len(plans) * q // 4 - 1)] for q in (1, 2, 3, 4)] if plans else []
    print(f"{tag}: bench pipeline {pps:.1f} pages/s (p99 {bp.get('p99_ms', 0):.0f} ms, errors {bp.get('errors', '?')}, "
          f"warm-up {bp.get('warmup_ms', '?')} ms, {bp.get('compiled_warmup')}, then {bp.get('compiled_run')}); "
          f"CLI {len(pages)} results ({len(failed)} errors) in {wall:.2f} s = {cli_pps:.1f} pages/s, ratio "
          f"{cli_pps / pps if pps else 0:.2f}; CLI plans compiled after each quarter: {quarters}")
    for p in failed[:3]:
        print(f"  failed: {p.get('file')}: {p.get('error')}")


if __name__ == "__main__":
    main()
