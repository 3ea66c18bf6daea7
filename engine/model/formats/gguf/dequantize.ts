/**
 * ggml tensor data to float32: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K (issue 30, item 3), block by
 * block in ggml's layouts (ggml-common.h `block_q8_0` … `block_q6_K`; dequantize_row_* in ggml-quants.c).
 *
 * Each value is computed in the order and precision of the reference (gguf-py's `gguf.quants.dequantize`, which
 * follows ggml's C): every float32 operation is `Math.fround` of the exact double result, which for one +, − or ×
 * of two float32 values is the correctly rounded float32 result (double has more than 2·24+2 bits), so the output
 * equals the reference bit for bit (tests/unit/model/ggufDequant.test.ts checks it against gguf-py). F16 and BF16
 * (and F32) are copied as bit patterns, NaN payloads included.
 */
import { LITTLE_ENDIAN_HOST } from '../safetensorsDtypes';
import { GgufError, isDequantised, type GgmlType } from './ggufTypes';

/** float32 bit patterns of all 65,536 halves (sign, subnormals, infinities and NaNs kept). */
const F16_BITS = (() => {
  const t = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    if (exp === 0x1f) t[h] = (sign | 0x7f800000 | (man << 13)) >>> 0;
    else if (exp !== 0) t[h] = (sign | ((exp + 112) << 23) | (man << 13)) >>> 0;
    else if (man === 0) t[h] = sign >>> 0;
    else {
      let e = 113;
      while ((man & 0x400) === 0) {
        man <<= 1;
        e--;
      }
      t[h] = (sign | (e << 23) | ((man & 0x3ff) << 13)) >>> 0;
    }
  }
  return t;
})();
/** The same table as numbers, for block scales. */
const F16 = new Float32Array(F16_BITS.buffer);

const f = Math.fround;

function half(b: Uint8Array, o: number): number {
  return F16[b[o]! | (b[o + 1]! << 8)]!;
}

function copyF32(b: Uint8Array, out: Float32Array): void {
  if (LITTLE_ENDIAN_HOST && b.byteOffset % 4 === 0) {
    new Uint32Array(out.buffer, out.byteOffset, out.length).set(new Uint32Array(b.buffer, b.byteOffset, out.length));
    return;
  }
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < out.length; i++) bits[i] = v.getUint32(4 * i, true);
}

function halves(b: Uint8Array, out: Float32Array, bf16: boolean): void {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < out.length; i++) {
    const h = b[2 * i]! | (b[2 * i + 1]! << 8);
    bits[i] = bf16 ? (h << 16) >>> 0 : F16_BITS[h]!;
  }
}

function q8_0(b: Uint8Array, out: Float32Array): void {
  for (let o = 0, y = 0; y < out.length; o += 34, y += 32) {
    const d = half(b, o);
    for (let j = 0; j < 32; j++) out[y + j] = f(((b[o + 2 + j]! << 24) >> 24) * d);
  }
}

function q4_0(b: Uint8Array, out: Float32Array): void {
  for (let o = 0, y = 0; y < out.length; o += 18, y += 32) {
    const d = half(b, o);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j]!;
      out[y + j] = f(d * ((q & 0xf) - 8));
      out[y + j + 16] = f(d * ((q >> 4) - 8));
    }
  }
}

function q4_1(b: Uint8Array, out: Float32Array): void {
  for (let o = 0, y = 0; y < out.length; o += 20, y += 32) {
    const d = half(b, o);
    const m = half(b, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j]!;
      out[y + j] = f(f(d * (q & 0xf)) + m);
      out[y + j + 16] = f(f(d * (q >> 4)) + m);
    }
  }
}

/** The 6-bit scale and min of sub-block j (0–7) of a Q4_K / Q5_K super-block, from its 12 packed bytes at `s`. */
function scaleMin(b: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [b[s + j]! & 63, b[s + j + 4]! & 63];
  const k = j - 4;
  return [(b[s + 8 + k]! & 0x0f) | ((b[s + k]! >> 2) & 0x30), (b[s + 8 + k]! >> 4) | ((b[s + 4 + k]! >> 2) & 0x30)];
}

/** Q4_K (144 bytes / 256) or, with `five`, Q5_K (176 bytes / 256, the fifth bit of each value in 32 bytes of qh). */
function qK45(b: Uint8Array, out: Float32Array, five: boolean): void {
  const blockBytes = five ? 176 : 144;
  for (let o = 0, y = 0; y < out.length; o += blockBytes, y += 256) {
    const d = half(b, o);
    const dmin = half(b, o + 2);
    const qh = o + 16;
    const qs = o + (five ? 48 : 16);
    for (let sb = 0; sb < 8; sb++) {
      const [sc, m] = scaleMin(b, o + 4, sb);
      const d1 = f(d * sc);
      const m1 = f(dmin * m);
      const base = qs + 32 * (sb >> 1);
      const shift = (sb & 1) * 4;
      for (let l = 0; l < 32; l++) {
        let q = (b[base + l]! >> shift) & 0x0f;
        if (five) q |= ((b[qh + l]! >> sb) & 1) << 4;
        out[y + 32 * sb + l] = f(f(d1 * q) - m1);
      }
    }
  }
}

function q6_K(b: Uint8Array, out: Float32Array): void {
  for (let o = 0, y = 0; y < out.length; o += 210, y += 256) {
    const d = half(b, o + 208);
    for (let g = 0; g < 16; g++) {
      const dg = f(d * ((b[o + 192 + g]! << 24) >> 24));
      for (let i = 0; i < 16; i++) {
        const e = 16 * g + i;
        const h = e >> 7;
        const low = (b[o + 64 * h + (e & 63)]! >> (4 * ((e >> 6) & 1))) & 0x0f;
        const high = (b[o + 128 + 32 * h + (e & 31)]! >> (2 * ((e >> 5) & 3))) & 3;
        out[y + e] = f(dg * ((low | (high << 4)) - 32));
      }
    }
  }
}

const KERNELS: Record<string, (b: Uint8Array, out: Float32Array) => void> = {
  F32: copyF32,
  F16: (b, out) => halves(b, out, false),
  BF16: (b, out) => halves(b, out, true),
  Q8_0: q8_0,
  Q4_0: q4_0,
  Q4_1: q4_1,
  Q4_K: (b, out) => qK45(b, out, false),
  Q5_K: (b, out) => qK45(b, out, true),
  Q6_K: q6_K,
};

/**
 * `elements` values of ggml type `type` from `bytes` (exactly their encoded size), as float32. `what` names the
 * tensor in the error for a type that is not dequantised here.
 */
export function dequantize(type: GgmlType, bytes: Uint8Array, elements: number, what = 'tensor'): Float32Array {
  if (!isDequantised(type.name)) {
    throw new GgufError(
      `${what} has tensor type ${type.name}, which is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K); re-quantise the model to one of them`,
    );
  }
  if (elements % type.blockSize !== 0 || bytes.length !== (elements / type.blockSize) * type.blockBytes) {
    throw new GgufError(`${what}: ${bytes.length} bytes do not hold ${elements} values of type ${type.name}`);
  }
  const out = new Float32Array(elements);
  KERNELS[type.name]!(bytes, out);
  return out;
}
