#!/usr/bin/env python3
"""Where a first pass's plan compiles go, from a LECTOR_LOG=debug log.

    compile_split.py LOG [LOG...]   (plain or .xz; lines may start with a
                                     timestamp in seconds, as device.sh's
                                     clibar step writes them)

Prints per model: the CUDA backend's compiles split into their parts (the
"cuda: ...: N steps ...; T ms: layout, steps (algorithms), fusion,
constants, chains" lines of cuda_plan.c) and the steps phase by operator,
the runtime's own plan lines
(graph passes and backend, rt/model.c), the other debug lines by count,
and with timestamps the compiles per tenth of the run's wall time.
"""
import collections
import lzma
import re
import statistics
import sys

CUDA = re.compile(r"cuda: (\S+): \d+ steps .*?; ([\d.]+) ms: layout ([\d.]+), steps ([\d.]+) \(algorithms ([\d.]+)\), "
                  r"fusion ([\d.]+), constants ([\d.]+), chains ([\d.]+)")
PLAN = re.compile(r"(\S+\.onnx): plan for (\S+) compiled in ([\d.]+) ms \(graph passes ([\d.]+) ms, backend ([\d.]+) ms\)")
OPS = re.compile(r"cuda: (\S+): steps by operator: (.*)$")
STORE = re.compile(r"cuda: (\S+): shared constants: (\d+) memo hits; locks waited ([\d.]+) ms; hashed ([\d.]+) ms, "
                   r"compared (\d+) KiB in ([\d.]+) ms, uploaded (\d+) KiB in ([\d.]+) ms; cuDNN descriptors "
                   r"([\d.]+) ms, filters ([\d.]+) ms")
STORE_PARTS = ["memo hits", "lock waits ms", "hash ms", "compared KiB", "compare ms", "uploaded KiB", "upload ms",
               "descriptors ms", "filters ms"]
STAMP = re.compile(r"^(\d+\.\d+) (.*)$")
PARTS = ["total", "layout", "steps", "algorithms", "fusion", "constants", "chains"]


def lines(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", errors="replace") as f:
        yield from f


def report(path):
    cu, rt, other, stamps = collections.defaultdict(list), collections.defaultdict(list), collections.Counter(), []
    ops = collections.defaultdict(collections.Counter)
    store = collections.defaultdict(list)
    for raw in lines(path):
        m = STAMP.match(raw.strip())
        t, line = (float(m.group(1)), m.group(2)) if m else (None, raw.strip())
        m = CUDA.search(line)
        if m:
            cu[m.group(1).split("/")[-1]].append([float(x) for x in m.groups()[1:]])
            continue
        m = STORE.search(line)
        if m:
            store[m.group(1).split("/")[-1]].append([float(x) for x in m.groups()[1:]])
            continue
        m = OPS.search(line)
        if m:
            for name, ms in re.findall(r"(\w+) ([\d.]+) ms", m.group(2)):
                ops[m.group(1).split("/")[-1]][name] += float(ms)
            continue
        m = PLAN.search(line)
        if m:
            rt[m.group(1).split("/")[-1]].append([float(m.group(i)) for i in (3, 4, 5)])
            if t is not None:
                stamps.append(t)
            continue
        other[re.sub(r"[\d.]+", "N", line)[:110]] += 1
    print(f"== {path}")
    for k, v in cu.items():
        print(f"cuda compile {k}: {len(v)} plans; sum/median/max ms: " + ", ".join(
            f"{n} {sum(r[i] for r in v):.0f}/{statistics.median(r[i] for r in v):.2f}/{max(r[i] for r in v):.1f}"
            for i, n in enumerate(PARTS)))
    for k, v in store.items():
        print(f"cuda store and descriptors {k}: {len(v)} plans; sums: " +
              ", ".join(f"{n} {sum(r[i] for r in v):.0f}" for i, n in enumerate(STORE_PARTS)))
    for k, v in ops.items():
        print(f"cuda steps by operator {k} (each plan's three slowest, summed): " +
              ", ".join(f"{n} {ms:.0f} ms" for n, ms in v.most_common(6)))
    for k, v in rt.items():
        print(f"rt plan {k}: {len(v)} plans; sum {sum(r[0] for r in v):.0f} ms (graph passes {sum(r[1] for r in v):.0f}, "
              f"backend {sum(r[2] for r in v):.0f}); median {statistics.median(r[0] for r in v):.2f} ms")
    if len(stamps) > 1:
        t0, t1 = min(stamps), max(stamps)
        span = (t1 - t0) or 1e-9
        bins = [0] * 10
        for t in stamps:
            bins[min(9, int((t - t0) / span * 10))] += 1
        print(f"plans compiled per tenth of {span:.2f} s: " + " ".join(map(str, bins)))
    for text, n in other.most_common(20):
        print(f"  {n:5d}  {text}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
