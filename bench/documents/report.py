#!/usr/bin/env python3
"""bench/documents/report.py - the tables of bench/documents/run.sh (standard library only: it also runs on the
accelerator machine).

  report.py speed WALLS.tsv PIPELINE.json|- [OUT.json]
      WALLS.tsv: engine <TAB> wall_s <TAB> files <TAB> JSON Lines files (space-separated) of that engine.
      Prints engine, pages read (results without an error; `errors` counts the files without one),
      wall s, pages/s (pages read / wall s), p50/p99 of the per-page time each engine reports
      (timings_ms.total: model loading excluded) and Lector's ratio to each engine; PIPELINE.json is
      `lector bench pipeline --json`'s line (warm: after its warm-up pass).
  report.py same REF.jsonl OTHER.jsonl LABEL
      Lines whose text OTHER gives on the same page as REF (multisets of line texts per page).
  report.py accuracy SCORES.tsv
      The accuracy table from lector-score --tsv rows (set, engine, mode, ...).
"""
import collections
import json
import os
import sys


def load(paths):
    out = []
    for p in paths:
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    return out


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))]


def speed(walls, pipeline, out_json):
    rows = []
    for line in open(walls, encoding="utf-8"):
        c = line.rstrip("\n").split("\t")
        if len(c) < 4:
            continue
        res = load(c[3].split())
        lat = [r.get("timings_ms", {}).get("total", 0) for r in res if not r.get("error")]
        errors = sum(1 for r in res if r.get("error"))
        rows.append(dict(engine=c[0], wall_s=float(c[1]), pages=len(lat), files=int(c[2]),
                         errors=int(c[2]) - len(lat), p50_ms=pct(lat, 0.5), p99_ms=pct(lat, 0.99)))
    if pipeline != "-":
        for p in load([pipeline]):
            rows.append(dict(engine="bench pipeline %s x%d (warm)" % (p["device"].replace(" threads", "t"), p["workers"]),
                             wall_s=p["wall_s"], pages=p["pages"], files=p["images"] * p["rounds"], errors=p["errors"],
                             p50_ms=p["p50_ms"], p99_ms=p["p99_ms"]))
    for r in rows:
        r["pages_per_s"] = r["pages"] / r["wall_s"] if r["wall_s"] > 0 else 0
    ref = next((r for r in rows if r["engine"].startswith("lector")), None)
    print("%-44s %6s %8s %9s %9s %9s %8s %s" % ("engine", "pages", "wall_s", "pages/s", "p50_ms", "p99_ms", "errors",
                                              "lector/engine"))
    for r in rows:
        ratio = ref["pages_per_s"] / r["pages_per_s"] if ref and r["pages_per_s"] > 0 else 0
        r["lector_ratio"] = round(ratio, 3)
        print("%-44s %6d %8.2f %9.3f %9.1f %9.1f %8d %.2f" % (r["engine"], r["pages"], r["wall_s"], r["pages_per_s"],
                                                             r["p50_ms"], r["p99_ms"], r["errors"], ratio))
    if out_json:
        with open(out_json, "w") as f:
            json.dump(rows, f, indent=1)


def pages(path):
    r = []
    for o in load([path]):
        c = collections.Counter()
        for pg in o.get("pages", [])[:1]:
            for l in pg.get("lines", []):
                c[l.get("text", "")] += 1
        r.append((o.get("file"), c))
    return r


def same(a, b, label):
    pa, pb = dict(pages(a)), dict(pages(b))
    tot = sum(sum(c.values()) for c in pa.values())
    hit = sum(sum((c & pb.get(f, collections.Counter())).values()) for f, c in pa.items())
    print("%s: %d reference lines, %d with the same text on the same page (%.2f%%)" % (label, tot, hit,
                                                                                      100.0 * hit / max(tot, 1)))
    shown = 0
    for f, c in pa.items():
        d = pb.get(f, collections.Counter())
        for t in list((c - d).elements())[:2] + list((d - c).elements())[:2]:
            if shown < 12:
                print("  %s: %r" % (f.split("/")[-1] if f else "?", t))
                shown += 1


def accuracy(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8")]
    head, rows = rows[0], rows[1:]
    k = {n: i for i, n in enumerate(head)}
    table = collections.OrderedDict()
    for r in rows:
        if len(r) < len(head):
            continue
        key = (r[k["set"]], r[k["engine"]])
        table.setdefault(key, {})[r[k["mode"]]] = r
    print("| set | engine | images | GT lines | line precision | line recall | line H-mean | CER | CER (loose) |"
          " GT words | word F1 | word F1 (loose) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (s, e), m in table.items():
        ln, ll, tx, tl = m.get("line"), m.get("line/loose"), m.get("text"), m.get("text/loose")
        g = lambda r, c: r[k[c]] if r else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s, e, g(tx or ln, "images"), g(ln, "care_gt"), g(ln, "precision"), g(ln, "recall"), g(ln, "hmean"),
            g(ln, "cer"), g(ll, "cer"), g(tx, "care_gt"), g(tx, "hmean"), g(tl, "hmean")))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "speed":
        speed(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif len(sys.argv) == 5 and sys.argv[1] == "same":
        same(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "accuracy":
        accuracy(sys.argv[2])
    else:
        sys.exit(__doc__)
