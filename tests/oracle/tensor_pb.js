// tensor_pb.js - onnx.TensorProto files <-> {name, type, dims, data} for the
// test oracle (ort_run.js) and the ONNX Runtime benchmark (bench/ort_bench.js).
// Only the fields Lector writes and reads are handled: dims (1), data_type (2),
// float_data (4), int32_data (5), int64_data (7), name (8), raw_data (9).
// A test tool, not a general protobuf implementation.
'use strict';

const DT = {1: 'float32', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64'};
const DT_ID = Object.fromEntries(Object.entries(DT).map(([k, v]) => [v, +k]));
const ARR = {float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int32: Int32Array,
             int64: BigInt64Array, bool: Uint8Array, float64: Float64Array};

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

function decodeTensor(buf) {
  const pos = {i: 0};
  const dims = [], f32 = [], i64 = [], i32 = [];
  let dtype = 0, raw = null, name = '';
  while (pos.i < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >> 3, wire = key & 7;
    if (wire === 2) {
      const len = Number(readVarint(buf, pos));
      const bytes = buf.subarray(pos.i, pos.i + len);
      pos.i += len;
      if (field === 1 || field === 7 || field === 5) { // packed varints
        const p = {i: 0};
        while (p.i < bytes.length) {
          const v = BigInt.asIntN(64, readVarint(bytes, p));
          (field === 1 ? dims : field === 7 ? i64 : i32).push(v);
        }
      } else if (field === 4) {
        const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
        for (let k = 0; k + 4 <= bytes.length; k += 4) f32.push(dv.getFloat32(k, true));
      } else if (field === 9) raw = Buffer.from(bytes);
      else if (field === 8) name = bytes.toString('utf8');
    } else if (wire === 0) {
      const v = BigInt.asIntN(64, readVarint(buf, pos));
      if (field === 1) dims.push(v);
      else if (field === 2) dtype = Number(v);
      else if (field === 7) i64.push(v);
      else if (field === 5) i32.push(v);
    } else if (wire === 5) {
      if (field === 4) f32.push(buf.readFloatLE(pos.i));
      pos.i += 4;
    } else if (wire === 1) pos.i += 8;
    else throw new Error('unsupported wire type ' + wire);
  }
  const type = DT[dtype];
  if (!type) throw new Error('unsupported data_type ' + dtype);
  const shape = dims.map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  let data;
  if (raw) {
    const A = ARR[type];
    const copy = Buffer.alloc(raw.length);
    raw.copy(copy);
    data = new A(copy.buffer, copy.byteOffset, raw.length / A.BYTES_PER_ELEMENT);
  } else if (type === 'float32') data = Float32Array.from(f32);
  else if (type === 'int64') data = BigInt64Array.from(i64);
  else data = ARR[type].from(i32.map(Number));
  if (data.length !== n) throw new Error(`tensor ${name}: ${data.length} elements, shape needs ${n}`);
  return {name, type, dims: shape, data};
}

function varint(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out);
}

function encodeTensor(t, name) { // t: {type, dims, data} (an ort.Tensor fits)
  const parts = [];
  for (const d of t.dims) parts.push(varint(1 << 3), varint(d));
  parts.push(varint(2 << 3), varint(DT_ID[t.type]));
  const nb = Buffer.from(name, 'utf8');
  parts.push(varint((8 << 3) | 2), varint(nb.length), nb);
  const d = t.data;
  const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  parts.push(varint((9 << 3) | 2), varint(raw.length), raw);
  return Buffer.concat(parts);
}

module.exports = {decodeTensor, encodeTensor};
