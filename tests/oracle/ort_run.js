#!/usr/bin/env node
// The test oracle: runs an ONNX model with ONNX Runtime (onnxruntime-node,
// CPU execution provider) on inputs stored as onnx.TensorProto files and
// writes each output as OUTDIR/output_N.pb - the same file formats as
// `lector run-model`, so the two can be compared file by file.
//
//   node ort_run.js MODEL.onnx OUTDIR INPUT_0.pb [INPUT_1.pb ...]
//   node ort_run.js --batch JOBS.txt      (one "MODEL OUTDIR IN..." job per line;
//                                          sessions are reused per model)
//   env ORT_THREADS=N sets intra-op threads (default 1).
//
// The TensorProto codec is tensor_pb.js (shared with bench/ort_bench.js).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

const {decodeTensor, encodeTensor} = require('./tensor_pb.js');

const sessions = new Map();
async function session(model) {
  if (!sessions.has(model)) {
    const threads = parseInt(process.env.ORT_THREADS || '1', 10);
    sessions.set(model, await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all'}));
  }
  return sessions.get(model);
}

async function job(model, outdir, inputs) {
  const s = await session(model);
  const feeds = {};
  inputs.forEach((file, i) => {
    const t = decodeTensor(fs.readFileSync(file));
    feeds[s.inputNames[i]] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const res = await s.run(feeds);
  fs.mkdirSync(outdir, {recursive: true});
  s.outputNames.forEach((n, i) => {
    fs.writeFileSync(path.join(outdir, `output_${i}.pb`), encodeTensor(res[n], n));
  });
}

(async () => {
  const argv = process.argv.slice(2);
  try {
    if (argv[0] === '--batch') {
      const lines = fs.readFileSync(argv[1], 'utf8').split('\n').filter((l) => l.trim());
      for (const l of lines) {
        const [m, o, ...ins] = l.trim().split(/\s+/);
        await job(m, o, ins);
      }
    } else if (argv.length >= 2) {
      await job(argv[0], argv[1], argv.slice(2));
    } else {
      console.error('usage: ort_run.js MODEL.onnx OUTDIR INPUT.pb... | --batch JOBS.txt');
      process.exit(2);
    }
  } catch (e) {
    console.error('ort_run: ' + (e && e.message ? e.message : e));
    process.exit(1);
  }
})();
