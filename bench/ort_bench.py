#!/usr/bin/env python3
"""ONNX Runtime (Python package) timing of the rows of `lector bench models`,
for machines without node (the GPU box has onnxruntime 1.30 for Python).
Same settings as bench/ort_bench.js: intra-op threads N, inter-op 1,
graph optimisation 'all', sequential; inputs uniform in [-2.2, 2.7];
warm-up runs excluded; prints one JSON line per row.

    python3 bench/ort_bench.py MODELS_DIR THREADS RUNS
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

ROWS = [
    ("det 1x3x960x960", "ch_PP-OCRv4_det_infer.onnx", (1, 3, 960, 960)),
    ("det 1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", (1, 3, 640, 640)),
    ("rec 6x3x48x320", "ch_PP-OCRv4_rec_infer.onnx", (6, 3, 48, 320)),
    ("cls 6x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (6, 3, 48, 192)),
]


def main():
    models, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(1234)
    for name, file, shape in ROWS:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(f"{models}/{file}", so, providers=["CPUExecutionProvider"])
        x = rng.uniform(-2.2, 2.7, size=shape).astype(np.float32)
        feeds = {sess.get_inputs()[0].name: x}
        for _ in range(2):
            sess.run(None, feeds)
        ms = []
        for _ in range(runs):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            ms.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"name": name, "ort_ms": float(np.median(ms)), "threads": threads}), flush=True)


if __name__ == "__main__":
    main()
