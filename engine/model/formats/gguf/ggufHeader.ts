/**
 * The GGUF v2/v3 header reader: magic, version, counts, metadata (key, type, value) and tensor infos, read by hand
 * with strict bounds (issue 30, item 3; layout: the GGUF specification in ggml's repository and its gguf.cpp).
 *
 * Why not the kept library @huggingface/gguf (0.4.6, a dependency): it bounds counts and string lengths, but its local
 * reader pads every read past the end of the file with zeros and slices strings without checking their length. Tried
 * on the real SmolLM2 GGUF cut at 1,000,000 bytes (inside the metadata), it "parsed" all 272 tensor infos (the last
 * one named '' with no dims at offset 0) and a 9-character chat template, and threw nothing (2026-12-04); a string that
 * crosses its 2 MB read chunk comes back cut short the same way. A loader must refuse such files, so this reader
 * checks every read against the file's size and names what was being read.
 *
 * Bounds, each checked before anything is allocated: counts against the bytes left in the file (a tensor info takes at
 * least 24 bytes, a key-value pair 13, an array item its width), counts against fixed caps, strings against a cap and
 * the file's end, the whole header against MAX_HEADER_BYTES, and shapes against 2^53 values. The header is read with
 * positioned synchronous reads in 1 MiB windows (it is small and bounded; tensor data is read elsewhere, one tensor at
 * a time). Everything is little-endian: big-endian GGUF is refused.
 */
import { readSync } from 'node:fs';
import {
  GGML_TYPES,
  GGUF_VALUE,
  GgufError,
  SCALAR_BYTES,
  brief,
  type GgufHeader,
  type GgufItems,
  type GgufTensorInfo,
  type GgufValue,
} from './ggufTypes';

/** Caps far above any real model (Qwen's 152k-token header is ~8 MB; a 1T-parameter MoE has < 10^5 tensors). */
export const GGUF_LIMITS = {
  headerBytes: 256 * 2 ** 20,
  stringBytes: 32 * 2 ** 20,
  keyBytes: 65_535,
  /** gguf.cpp refuses names of GGML_MAX_NAME (64) bytes or more. */
  nameBytes: 63,
  kvCount: 65_536,
  tensorCount: 1 << 20,
  /** Items of all arrays together: Gemma's 262k vocabulary with scores and types is under a million. */
  arrayItems: 1 << 23,
  maxDims: 4,
  maxAlignment: 1 << 20,
} as const;

const WINDOW = 1 << 20;
const DEFAULT_ALIGNMENT = 32;
const MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8;
const MIN_KV_BYTES = 8 + 4 + 1;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenientUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** Sequential little-endian reads over a file descriptor, each checked against the file's size and the header cap. */
class HeaderCursor {
  pos = 0;
  private buf = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  private bufStart = 0;
  arrayItems = 0;

  constructor(
    private readonly fd: number,
    readonly size: number,
    readonly source: string,
  ) {}

  fail(detail: string): never {
    throw new GgufError(`${this.source}: ${detail}`);
  }

  /** Index in the window of bytes [pos, pos + n), reading them if needed; `what` names them if the file ends first. */
  private need(n: number, what: string): number {
    const end = this.pos + n;
    if (end > this.size) {
      this.fail(
        `the file ends at byte ${this.size} inside ${what} (bytes ${this.pos}–${end}); it is truncated or not a GGUF file`,
      );
    }
    if (end > GGUF_LIMITS.headerBytes) {
      this.fail(`the header runs past ${GGUF_LIMITS.headerBytes} bytes at ${what}; the file is corrupt`);
    }
    if (this.pos < this.bufStart || end > this.bufStart + this.buf.length) {
      const length = Math.min(Math.max(n, WINDOW), this.size - this.pos);
      const buf = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const got = readSync(this.fd, buf, done, length - done, this.pos + done);
        if (got === 0) {
          this.fail(`the file ended at byte ${this.pos + done} while reading ${what}; it shrank while read`);
        }
        done += got;
      }
      this.buf = buf;
      this.view = new DataView(buf.buffer);
      this.bufStart = this.pos;
    }
    const at = this.pos - this.bufStart;
    this.pos = end;
    return at;
  }

  bytes(n: number, what: string): Uint8Array {
    const at = this.need(n, what);
    return this.buf.subarray(at, at + n);
  }
  u32(what: string): number {
    return this.view.getUint32(this.need(4, what), true);
  }
  u64(what: string): bigint {
    return this.view.getBigUint64(this.need(8, what), true);
  }
  /** A u64 count or size, refused above `max` (before it can be used to allocate anything). */
  count(what: string, max: number): number {
    const n = this.u64(what);
    if (n > BigInt(max)) this.fail(`${what} is ${n}, more than ${max}; the file is corrupt or crafted`);
    return Number(n);
  }
  scalar(type: number, what: string): number | bigint | boolean {
    const v = this.view;
    const at = this.need(SCALAR_BYTES[type]!, what);
    switch (type) {
      case GGUF_VALUE.UINT8:
        return v.getUint8(at);
      case GGUF_VALUE.INT8:
        return v.getInt8(at);
      case GGUF_VALUE.UINT16:
        return v.getUint16(at, true);
      case GGUF_VALUE.INT16:
        return v.getInt16(at, true);
      case GGUF_VALUE.UINT32:
        return v.getUint32(at, true);
      case GGUF_VALUE.INT32:
        return v.getInt32(at, true);
      case GGUF_VALUE.FLOAT32:
        return v.getFloat32(at, true);
      case GGUF_VALUE.BOOL:
        return v.getUint8(at) !== 0;
      case GGUF_VALUE.UINT64:
        return v.getBigUint64(at, true);
      case GGUF_VALUE.INT64:
        return v.getBigInt64(at, true);
      default:
        return v.getFloat64(at, true);
    }
  }
  /** A length-prefixed string; `strict` refuses invalid UTF-8 (keys, names), else it is replaced (values). */
  string(what: string, max: number, strict: boolean): string {
    const n = this.u64(`the length of ${what}`);
    if (n > BigInt(max)) this.fail(`${what} claims ${n} bytes, more than the ${max}-byte limit; the file is corrupt`);
    const raw = this.bytes(Number(n), what);
    if (!strict) return lenientUtf8.decode(raw);
    try {
      return utf8.decode(raw);
    } catch {
      return this.fail(`${what} is not valid UTF-8; the file is corrupt`);
    }
  }
  /** Refuses `count` items of at least `minBytes` each that cannot fit in the rest of the file. */
  fits(count: number, minBytes: number, what: string): void {
    if (count * minBytes > this.size - this.pos) {
      this.fail(
        `${what} is ${count}, but ${count} of them need at least ${count * minBytes} bytes and only ${this.size - this.pos} are left; the file is truncated or crafted`,
      );
    }
  }
}

const TYPED: Partial<Record<number, new (n: number) => GgufItems>> = {
  [GGUF_VALUE.UINT8]: Uint8Array,
  [GGUF_VALUE.INT8]: Int8Array,
  [GGUF_VALUE.UINT16]: Uint16Array,
  [GGUF_VALUE.INT16]: Int16Array,
  [GGUF_VALUE.UINT32]: Uint32Array,
  [GGUF_VALUE.INT32]: Int32Array,
  [GGUF_VALUE.FLOAT32]: Float32Array,
  [GGUF_VALUE.FLOAT64]: Float64Array,
  [GGUF_VALUE.UINT64]: BigUint64Array,
  [GGUF_VALUE.INT64]: BigInt64Array,
};

function readArray(cur: HeaderCursor, key: string): GgufValue {
  const what = `metadata '${key}'`;
  const itemType = cur.u32(`the item type of ${what}`);
  if (itemType === GGUF_VALUE.ARRAY) cur.fail(`${what} is an array of arrays, which GGUF readers do not support`);
  if (itemType !== GGUF_VALUE.STRING && SCALAR_BYTES[itemType] === undefined) {
    cur.fail(`${what} is an array of unknown value type ${itemType}`);
  }
  const n = cur.count(`the item count of ${what}`, GGUF_LIMITS.arrayItems);
  cur.fits(n, itemType === GGUF_VALUE.STRING ? 8 : SCALAR_BYTES[itemType]!, `the item count of ${what}`);
  cur.arrayItems += n;
  if (cur.arrayItems > GGUF_LIMITS.arrayItems) {
    cur.fail(
      `the metadata arrays hold more than ${GGUF_LIMITS.arrayItems} items in all at ${what}; the file is crafted`,
    );
  }
  if (itemType === GGUF_VALUE.STRING) {
    const items: string[] = [];
    for (let i = 0; i < n; i++) items.push(cur.string(`item ${i} of ${what}`, GGUF_LIMITS.stringBytes, false));
    return { itemType, items };
  }
  if (itemType === GGUF_VALUE.BOOL) {
    const items: boolean[] = [];
    for (let i = 0; i < n; i++) items.push(cur.scalar(itemType, what) as boolean);
    return { itemType, items };
  }
  const items = new TYPED[itemType]!(n);
  for (let i = 0; i < n; i++) (items as unknown as Array<number | bigint>)[i] = cur.scalar(itemType, what) as number;
  return { itemType, items };
}

function readValue(cur: HeaderCursor, key: string): GgufValue {
  const type = cur.u32(`the value type of metadata '${key}'`);
  if (type === GGUF_VALUE.STRING) return cur.string(`metadata '${key}'`, GGUF_LIMITS.stringBytes, false);
  if (type === GGUF_VALUE.ARRAY) return readArray(cur, key);
  if (SCALAR_BYTES[type] === undefined) cur.fail(`metadata '${key}' has unknown value type ${type}`);
  return cur.scalar(type, `metadata '${key}'`);
}

function readPreamble(cur: HeaderCursor): { version: number; tensorCount: number; kvCount: number } {
  if (cur.size < 4) cur.fail(`is ${cur.size} bytes, too short for a GGUF file (it is truncated or not GGUF)`);
  const magic = cur.bytes(4, 'the magic number');
  if (String.fromCharCode(...magic) !== 'GGUF') {
    const hex = [...magic].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    cur.fail(`is not a GGUF file: it starts with bytes ${hex}, not 'GGUF'`);
  }
  const version = cur.u32('the version');
  if (version !== 0 && (version & 0xffff) === 0) cur.fail('is a big-endian GGUF file, which is not supported');
  if (version !== 2 && version !== 3) {
    cur.fail(`has GGUF version ${version}; versions 2 and 3 are supported (re-convert it with a current llama.cpp)`);
  }
  const tensorCount = cur.count('the tensor count', GGUF_LIMITS.tensorCount);
  const kvCount = cur.count('the metadata count', GGUF_LIMITS.kvCount);
  cur.fits(kvCount, MIN_KV_BYTES, 'the metadata count');
  cur.fits(tensorCount, MIN_TENSOR_INFO_BYTES, 'the tensor count');
  return { version, tensorCount, kvCount };
}

interface RawTensorInfo {
  name: string;
  dims: number[];
  typeId: number;
  offset: bigint;
}

function readTensorInfo(cur: HeaderCursor, index: number): RawTensorInfo {
  const name = cur.string(`the name of tensor ${index}`, GGUF_LIMITS.nameBytes, true);
  const what = `tensor '${name}'`;
  const nDims = cur.u32(`the dimension count of ${what}`);
  if (nDims > GGUF_LIMITS.maxDims) {
    cur.fail(`${what} has ${nDims} dimensions; ggml allows at most ${GGUF_LIMITS.maxDims}`);
  }
  const dims: number[] = [];
  let product = 1n;
  for (let d = 0; d < nDims; d++) {
    const dim = cur.u64(`dimension ${d} of ${what}`);
    product *= dim;
    if (product > BigInt(Number.MAX_SAFE_INTEGER)) {
      cur.fail(`${what}: its shape's product overflows (dimension ${d} is ${dim}); the file is corrupt or crafted`);
    }
    dims.push(Number(dim));
  }
  const typeId = cur.u32(`the type of ${what}`);
  const offset = cur.u64(`the data offset of ${what}`);
  return { name, dims, typeId, offset };
}

function alignmentOf(cur: HeaderCursor, metadata: Map<string, GgufValue>): number {
  const a = metadata.get('general.alignment');
  if (a === undefined) return DEFAULT_ALIGNMENT;
  if (typeof a !== 'number' || !Number.isInteger(a) || a < 1 || a > GGUF_LIMITS.maxAlignment || (a & (a - 1)) !== 0) {
    cur.fail(`metadata 'general.alignment' must be a power of two up to ${GGUF_LIMITS.maxAlignment}, got ${brief(a)}`);
  }
  return a;
}

/** Sizes each tensor from its type and shape and checks its span lies in the file, aligned, overlapping no other. */
function placeTensors(cur: HeaderCursor, raw: RawTensorInfo[], dataStart: number, alignment: number): GgufTensorInfo[] {
  const out: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (const r of raw) {
    const what = `tensor '${r.name}'`;
    if (names.has(r.name)) cur.fail(`${what} appears twice`);
    names.add(r.name);
    const type = GGML_TYPES.get(r.typeId);
    if (!type) cur.fail(`${what} has unknown ggml tensor type ${r.typeId}`);
    const elements = r.dims.reduce((a, b) => a * b, 1);
    const rowLength = r.dims[0] ?? 1;
    if (rowLength % type.blockSize !== 0) {
      cur.fail(`${what}: its row length ${rowLength} is not a multiple of ${type.name}'s block of ${type.blockSize}`);
    }
    const bytes = (elements / type.blockSize) * type.blockBytes;
    if (r.offset % BigInt(alignment) !== 0n) {
      cur.fail(`${what}: its data offset ${r.offset} is not a multiple of the alignment ${alignment}`);
    }
    const end = BigInt(dataStart) + r.offset + BigInt(bytes);
    if (end > BigInt(cur.size)) {
      cur.fail(
        `${what}: its data (offset ${r.offset}, ${bytes} bytes) runs past the end of the ${cur.size}-byte file; it is truncated or corrupt`,
      );
    }
    out.push({ name: r.name, dims: r.dims, type, elements, offset: dataStart + Number(r.offset), bytes });
  }
  const byOffset = [...out].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1]!;
    const t = byOffset[i]!;
    if (t.offset < prev.offset + prev.bytes) {
      cur.fail(`tensor '${t.name}': its data overlaps tensor '${prev.name}'s; the file is corrupt`);
    }
  }
  return out;
}

/** Reads and checks the header of the GGUF file open at `fd` (`size` bytes); `source` names it in every error. */
export function readGgufHeader(fd: number, size: number, source: string): GgufHeader {
  const cur = new HeaderCursor(fd, size, source);
  const { version, tensorCount, kvCount } = readPreamble(cur);
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = cur.string(`the key of metadata entry ${i}`, GGUF_LIMITS.keyBytes, true);
    if (metadata.has(key)) cur.fail(`metadata '${key}' appears twice`);
    metadata.set(key, readValue(cur, key));
  }
  const raw: RawTensorInfo[] = [];
  for (let i = 0; i < tensorCount; i++) raw.push(readTensorInfo(cur, i));
  const alignment = alignmentOf(cur, metadata);
  const dataStart = Math.ceil(cur.pos / alignment) * alignment;
  const tensors = placeTensors(cur, raw, dataStart, alignment);
  return { version, metadata, tensors, alignment, dataStart, fileSize: size };
}
