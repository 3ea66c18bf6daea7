/**
 * The dtypes of the safetensors format as typed arrays (safetensors.ts reads the layout): little-endian bytes to
 * Float32Array (F32, F16, BF16, F64) or Int32Array (I32, I64), each result owning its memory.
 */
import type { SafetensorsDtype } from './safetensors';

export const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A tensor's bytes inside the file: `begin`/`end` are absolute indexes into `bytes`. */
export interface Span {
  bytes: Uint8Array;
  begin: number;
  end: number;
  /** `bytes` is a fresh buffer holding just this tensor, read for it: the result may keep it instead of a copy. */
  owned?: boolean;
}

/** Copies a span into a fresh ArrayBuffer. The result of decoding owns its memory: it does not keep the whole file
 * alive, and it does not change when the caller reuses `bytes`. (Node's Buffer#slice shares memory, hence `set`.) */
function copySpan({ bytes, begin, end, owned }: Span): ArrayBuffer {
  if (
    owned &&
    begin === 0 &&
    bytes.byteOffset === 0 &&
    end === bytes.buffer.byteLength &&
    bytes.buffer instanceof ArrayBuffer
  ) {
    return bytes.buffer;
  }
  const buffer = new ArrayBuffer(end - begin);
  new Uint8Array(buffer).set(bytes.subarray(begin, end));
  return buffer;
}

/** A typed-array-ready (buffer, offset) for a span whose values are only read while converting: the file's own
 * memory where the offset is aligned, else a copy (typed arrays cannot start at an unaligned offset). */
function alignedSpan(span: Span, align: number): { buffer: ArrayBufferLike; offset: number } {
  const offset = span.bytes.byteOffset + span.begin;
  return offset % align === 0 ? { buffer: span.bytes.buffer, offset } : { buffer: copySpan(span), offset: 0 };
}

let f16Table: Float32Array | null = null;

/** Every half-precision value as a float32, built once: one lookup per element beats bit arithmetic. */
function halfToFloatTable(): Float32Array {
  if (f16Table !== null) return f16Table;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) table[h] = sign * mantissa * 2 ** -24;
    else if (exponent === 31) table[h] = mantissa === 0 ? sign * Infinity : NaN;
    else table[h] = sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  f16Table = table;
  return table;
}

function readUint16s(span: Span): Uint16Array {
  const n = (span.end - span.begin) / 2;
  if (LITTLE_ENDIAN_HOST) {
    const { buffer, offset } = alignedSpan(span, 2);
    return new Uint16Array(buffer, offset, n);
  }
  const view = new DataView(span.bytes.buffer, span.bytes.byteOffset + span.begin, span.end - span.begin);
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getUint16(2 * i, true);
  return out;
}

/**
 * A tensor's values from its stored bytes. `outOfRange` makes the error for an I64 value outside int32 (the caller
 * names the file and tensor).
 */
export function convert(
  entry: { dtype: SafetensorsDtype },
  span: Span,
  outOfRange: (detail: string) => Error,
): Float32Array | Int32Array {
  const byteLength = span.end - span.begin;
  const view = new DataView(span.bytes.buffer, span.bytes.byteOffset + span.begin, byteLength);
  switch (entry.dtype) {
    case 'F32': {
      // One memcpy on little-endian hosts; no per-element work.
      if (LITTLE_ENDIAN_HOST) return new Float32Array(copySpan(span));
      const out = new Float32Array(byteLength / 4);
      for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(4 * i, true);
      return out;
    }
    case 'I32': {
      if (LITTLE_ENDIAN_HOST) return new Int32Array(copySpan(span));
      const out = new Int32Array(byteLength / 4);
      for (let i = 0; i < out.length; i++) out[i] = view.getInt32(4 * i, true);
      return out;
    }
    case 'F64': {
      if (LITTLE_ENDIAN_HOST) {
        const { buffer, offset } = alignedSpan(span, 8);
        return new Float32Array(new Float64Array(buffer, offset, byteLength / 8));
      }
      const out = new Float32Array(byteLength / 8);
      for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(8 * i, true);
      return out;
    }
    case 'F16': {
      const table = halfToFloatTable();
      const halves = readUint16s(span);
      const out = new Float32Array(halves.length);
      for (let i = 0; i < halves.length; i++) out[i] = table[halves[i]!]!;
      return out;
    }
    case 'BF16': {
      // bfloat16 is the top half of a float32; writing the bits keeps NaN payloads and signed zeros exact.
      const halves = readUint16s(span);
      const bits = new Uint32Array(halves.length);
      for (let i = 0; i < halves.length; i++) bits[i] = halves[i]! << 16;
      return new Float32Array(bits.buffer);
    }
    case 'I64': {
      const n = byteLength / 8;
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const low = view.getInt32(8 * i, true);
        const high = view.getInt32(8 * i + 4, true);
        // In int32 range exactly when the high word is the sign extension of the low word.
        if (high !== low >> 31) {
          const value = view.getBigInt64(8 * i, true);
          throw outOfRange(
            `I64 element ${i} is ${value}, outside the int32 range this reader converts to; store the tensor as I32 or F32`,
          );
        }
        out[i] = low;
      }
      return out;
    }
  }
}
