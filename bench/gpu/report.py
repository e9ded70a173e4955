#!/usr/bin/env python3
"""bench/gpu/report.py LECTOR.jsonl PEER.jsonl [EAGER.jsonl] - one table: per model and batch multiple,
Lector's ms per call (graphs on; EAGER: LECTOR_CUDA_GRAPHS=0) beside the PyTorch peer's (eager and CUDA-graph
replay, ../shared/peers/torch_onnx.py) from the same run, and throughput ratios (peer ms / Lector ms)."""
import json, sys
names = {"det": "ch_PP-OCRv4_det_infer", "rec": "ch_PP-OCRv4_rec_infer", "cls": "ch_ppocr_mobile_v2.0_cls_infer"}
def load(p):
    out = []
    for l in open(p):
        l = l.strip()
        if l.startswith("{"): out.append(json.loads(l))
    return out
lec = load(sys.argv[1])
peer = {}
for d in load(sys.argv[2]): peer.update(d)
eager = {(r["model"], r["batch_multiple"], r["precision"]): r["ms"] for r in load(sys.argv[3])} if len(sys.argv) > 3 else {}
print("| model | shape | prec | Lector ms | Lector eager ms | items/s | PyTorch eager ms | PyTorch graph ms | vs eager | vs graph |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in lec:
    p = peer.get(names[r["model"]], {})
    k = "%s_bs%d" % (r["precision"], r["batch_multiple"])
    pe, pg = p.get(k + "_ms"), p.get(k + "_graph_ms")
    f = lambda v: "%.3f" % v if isinstance(v, (int, float)) else "-"
    ratio = lambda v: "%.2f×" % (v / r["ms"]) if isinstance(v, (int, float)) else "-"
    print("| %s | %s | %s | %.3f | %s | %.0f | %s | %s | %s | %s |" % (r["model"], r["shape"], r["precision"], r["ms"],
          f(eager.get((r["model"], r["batch_multiple"], r["precision"]))), r["items_per_s"], f(pe), f(pg), ratio(pe), ratio(pg)))
