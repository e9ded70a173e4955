#!/usr/bin/env node
// The ONNX Runtime side of `lector bench models`: times session.run of one
// model on one input (an onnx.TensorProto file) with onnxruntime-node (CPU
// execution provider) and prints one JSON line {"ort_ms": median, "runs": N}.
//
//   node ort_bench.js MODEL.onnx INPUT.pb THREADS RUNS [WARMUP]
//
// intraOpNumThreads = THREADS, interOpNumThreads = 1, graphOptimizationLevel
// 'all', sequential execution. Warm-up runs (default 2) are not timed.
// The TensorProto reader is tests/oracle/tensor_pb.js.
'use strict';
const fs = require('fs');
const path = require('path');

function findOrt() {
  const cands = [process.env.LECTOR_ORT_NODE_MODULES,
                 path.join(__dirname, '..', 'tests', 'oracle', 'node_modules'),
                 path.join(__dirname, 'peers', 'node_modules')].filter(Boolean);
  for (const c of cands) {
    const p = path.join(c, 'onnxruntime-node');
    if (fs.existsSync(p)) return require(p);
  }
  throw new Error('onnxruntime-node not found (install it into tests/oracle/node_modules)');
}

const {decodeTensor} = require(path.join(__dirname, '..', 'tests', 'oracle', 'tensor_pb.js'));

async function main() {
  const [model, input, threads = '1', runs = '10', warmup = '2'] = process.argv.slice(2);
  if (!model || !input) {
    console.error('usage: ort_bench.js MODEL.onnx INPUT.pb THREADS RUNS [WARMUP]');
    process.exit(2);
  }
  const ort = findOrt();
  const sess = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: +threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const t = decodeTensor(fs.readFileSync(input));
  const feeds = {[sess.inputNames[0]]: new ort.Tensor(t.type, t.data, t.dims)};
  for (let i = 0; i < +warmup; i++) await sess.run(feeds);
  const ms = [], cpu = [];
  for (let i = 0; i < +runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  const median = (v) => {
    v.sort((a, b) => a - b);
    const n = v.length;
    return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  // cpu_ms: process CPU time per run (user + system), for noisy machines
  console.log(JSON.stringify({ort_ms: median(ms), ort_cpu_ms: median(cpu), runs: ms.length}));
}

main().catch((e) => {
  console.error('ort_bench: ' + e.message);
  process.exit(1);
});
