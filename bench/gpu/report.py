#!/usr/bin/env python3
"""bench/gpu/report.py LECTOR.jsonl PEER.jsonl [EAGER.jsonl] - one table: per model, precision and batch multiple,
Lector's ms on the device (input already on the GPU, as the peer times itself; CUDA graphs on; EAGER:
LECTOR_CUDA_GRAPHS=0) and host-to-host ms (lector_model_run: upload and download included), beside the PyTorch
peer's eager and CUDA-graph times from ../shared/peers/torch_onnx.py in the same run, and the throughput ratios
(peer ms / Lector device ms; > 1: Lector is faster)."""
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
eager = {(r["model"], r["batch_multiple"], r["precision"]): r.get("device_ms", r["ms"])
         for r in load(sys.argv[3])} if len(sys.argv) > 3 else {}
print("| model | shape | prec | plan | Lector device ms | eager ms | host-to-host ms | items/s | PyTorch eager ms | PyTorch graph ms | vs eager | vs graph |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in lec:
    p = peer.get(names[r["model"]], {})
    k = "%s_bs%d" % (r["precision"], r["batch_multiple"])
    pe, pg = p.get(k + "_ms"), p.get(k + "_graph_ms")
    d = r.get("device_ms", r["ms"])
    f = lambda v: "%.3f" % v if isinstance(v, (int, float)) else "-"
    ratio = lambda v: "%.2f×" % (v / d) if isinstance(v, (int, float)) and d > 0 else "-"
    print("| %s | %s | %s | %s | %.3f | %s | %.3f | %.0f | %s | %s | %s | %s |" % (
        r["model"], r["shape"], r["precision"], r.get("plan", ""), d,
        f(eager.get((r["model"], r["batch_multiple"], r["precision"]))), r["ms"], r["items_per_s"], f(pe), f(pg),
        ratio(pe), ratio(pg)))
