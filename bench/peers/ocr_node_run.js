#!/usr/bin/env node
// Runs the @gutenye/ocr-node peer (ONNX Runtime, PP-OCRv4) on a list of images and prints
// JSON Lines in the shape of `lector --format json`:
//   {"file","pages":[{"width","height","lines":[{"text","score","box":[[x,y]x4]}]}],
//    "timings_ms":{"total"},"error"}
//
// Usage: node bench/peers/ocr_node_run.js [--models DIR] [--threads N] [--list FILE] [--warmup N] IMAGE...
//   --models DIR   directory holding ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx and
//                  ppocr_keys_v1.txt (default: ../../models relative to this file = Lector's models)
//   --threads N    ONNX Runtime intra-op threads (default 2); inter-op is 1, sequential execution
//   --list FILE    read image paths from FILE (one per line) in addition to the arguments
//   --warmup N     run the first image N times before timing (default 1; 0 = none)
//
// Coordinates: the peer letterboxes the image into a canvas whose sides are the next multiples of
// 32 (sharp resize, fit 'contain', centred) and returns boxes in that canvas.  This runner maps
// them back to original-image pixels (inverse of sharp's contain geometry) so that scoring
// against ground truth is fair.  Text, score and box order are the peer's own.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, 'node_modules', 'x.js'));

function usage(msg) {
  if (msg) process.stderr.write(`ocr_node_run: ${msg}\n`);
  process.stderr.write('usage: node ocr_node_run.js [--models DIR] [--threads N] [--list FILE] [--warmup N] IMAGE...\n');
  process.exit(2);
}

const args = process.argv.slice(2);
let modelsDir = path.resolve(here, '..', '..', 'models');
let threads = 2;
let warmup = 1;
const files = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--models') modelsDir = args[++i];
  else if (a === '--threads') threads = parseInt(args[++i], 10);
  else if (a === '--warmup') warmup = parseInt(args[++i], 10);
  else if (a === '--list') {
    for (const l of fs.readFileSync(args[++i], 'utf8').split('\n')) if (l.trim()) files.push(l.trim());
  } else if (a === '-h' || a === '--help') usage();
  else if (a.startsWith('--')) usage(`unknown option ${a}`);
  else files.push(a);
}
if (!files.length) usage('no images');
if (!(threads > 0)) usage('bad --threads');

let Ocr, sharp;
try {
  Ocr = (await import(require.resolve('@gutenye/ocr-node'))).default;
  sharp = (await import(require.resolve('sharp'))).default;
} catch (e) {
  process.stderr.write(`ocr_node_run: cannot load @gutenye/ocr-node (run scripts/fetch_peers.sh): ${e.message}\n`);
  process.exit(3);
}

const models = {
  detectionPath: path.join(modelsDir, 'ch_PP-OCRv4_det_infer.onnx'),
  recognitionPath: path.join(modelsDir, 'ch_PP-OCRv4_rec_infer.onnx'),
  dictionaryPath: path.join(modelsDir, 'ppocr_keys_v1.txt'),
};
for (const p of Object.values(models)) {
  if (!fs.existsSync(p)) { process.stderr.write(`ocr_node_run: missing model file ${p}\n`); process.exit(3); }
}
const onnxOptions = {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  executionProviders: ['cpu'],
};
const ocr = await Ocr.create({ models, onnxOptions });

// sharp's resize({width,height,fit:'contain'}) geometry (libvips: scale so the image fits, round
// the scaled size, centre it with floor((W - w) / 2) padding).
function canvasMap(w, h) {
  const W = Math.max(Math.ceil(w / 32) * 32, 32);
  const H = Math.max(Math.ceil(h / 32) * 32, 32);
  const s = Math.min(W / w, H / h);
  const sw = Math.round(w * s), sh = Math.round(h * s);
  const left = Math.floor((W - sw) / 2), top = Math.floor((H - sh) / 2);
  return { sx: sw / w, sy: sh / h, left, top };
}

async function runOne(file) {
  const t0 = performance.now();
  const lines = await ocr.detect(file);
  const t1 = performance.now();
  const meta = await sharp(file).metadata();
  const m = canvasMap(meta.width, meta.height);
  const out = [];
  for (const l of lines) {
    if (!l.box) continue;
    const box = l.box.map(([x, y]) => [
      Math.min(Math.max((x - m.left) / m.sx, 0), meta.width),
      Math.min(Math.max((y - m.top) / m.sy, 0), meta.height),
    ].map((v) => Math.round(v * 100) / 100));
    out.push({ text: l.text, score: l.mean, box });
  }
  return { pages: [{ width: meta.width, height: meta.height, lines: out }], ms: t1 - t0 };
}

if (warmup > 0) {
  try { for (let i = 0; i < warmup; i++) await ocr.detect(files[0]); } catch (e) { /* reported below */ }
}
let failed = 0;
for (const file of files) {
  let rec;
  try {
    const r = await runOne(file);
    rec = { file, pages: r.pages, timings_ms: { total: Math.round(r.ms * 1000) / 1000 }, error: null };
  } catch (e) {
    failed++;
    rec = { file, pages: [], timings_ms: {}, error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(rec) + '\n');
}
process.exit(failed ? 1 : 0);
