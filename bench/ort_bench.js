#!/usr/bin/env node
// The ONNX Runtime side of `lector bench models`: times session.run of one
// model on one input (an onnx.TensorProto file) with onnxruntime-node (CPU
// execution provider) and prints one JSON line {"ort_ms": median, "runs": N}.
//
//   node ort_bench.js MODEL.onnx INPUT.pb THREADS RUNS [WARMUP]
//
// intraOpNumThreads = THREADS, interOpNumThreads = 1, graphOptimizationLevel
// 'all', sequential execution. Warm-up runs (default 2) are not timed.
// The TensorProto reader is the one of tests/oracle/ort_run.js (float32 only).
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

function readVarint(buf, pos) {
  let result = 0n, shift = 0n;
  for (;;) {
    if (pos.i >= buf.length) throw new Error('truncated varint');
    const b = buf[pos.i++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return result;
    shift += 7n;
  }
}

function decodeFloatTensor(buf) {
  const pos = {i: 0};
  const dims = [], f32 = [];
  let dtype = 0, raw = null;
  while (pos.i < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >> 3, wire = key & 7;
    if (wire === 2) {
      const len = Number(readVarint(buf, pos));
      const bytes = buf.subarray(pos.i, pos.i + len);
      pos.i += len;
      if (field === 1) {
        const p = {i: 0};
        while (p.i < bytes.length) dims.push(BigInt.asIntN(64, readVarint(bytes, p)));
      } else if (field === 4) {
        const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
        for (let k = 0; k + 4 <= bytes.length; k += 4) f32.push(dv.getFloat32(k, true));
      } else if (field === 9) raw = Buffer.from(bytes);
    } else if (wire === 0) {
      const v = BigInt.asIntN(64, readVarint(buf, pos));
      if (field === 1) dims.push(v);
      else if (field === 2) dtype = Number(v);
    } else if (wire === 5) {
      if (field === 4) f32.push(buf.readFloatLE(pos.i));
      pos.i += 4;
    } else if (wire === 1) pos.i += 8;
    else throw new Error('unsupported wire type ' + wire);
  }
  if (dtype !== 1) throw new Error('only float32 inputs are supported');
  let data;
  if (raw) {
    const copy = Buffer.alloc(raw.length);
    raw.copy(copy);
    data = new Float32Array(copy.buffer, copy.byteOffset, raw.length / 4);
  } else data = Float32Array.from(f32);
  return {shape: dims.map(Number), data};
}

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
  const t = decodeFloatTensor(fs.readFileSync(input));
  const feeds = {[sess.inputNames[0]]: new ort.Tensor('float32', t.data, t.shape)};
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
