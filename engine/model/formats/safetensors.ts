/**
 * Reader and writer for the Hugging Face safetensors format, the layout of every checkpoint (docs/architecture.md "Run folder").
 *
 * Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
 *   {"__metadata__": {string: string}, name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
 * padded with spaces to a multiple of 8, then the data buffer; offsets are relative to the buffer's start and the
 * tensors tile it exactly (no holes, no overlaps). All numbers are little-endian.
 *
 * Written by hand because no kept npm library exists (the `safetensors` package is a 0.0.1 stub). The writer follows
 * the Rust reference implementation (which the Python library calls) byte for byte: compact JSON, `__metadata__` first
 * (its keys sorted; the reference leaves their order to a hash map), then tensors ordered by descending dtype alignment
 * rank and then by name in code point order, laid out in that same order. For the two dtypes written here that means
 * every F32 tensor (by name) before every I32 tensor (by name).
 *
 * Reading a file never trusts its size: it is opened without blocking (a FIFO would wait for a writer forever),
 * refused unless it is a regular file (`/dev/zero` never ends), and only the 8-byte length and the header are read
 * before every tensor's offsets are checked against the file's size; then each tensor is read at its offset. A bad
 * header is refused after reading a few bytes, whatever the file's size, and files past 2 GiB need no single buffer.
 */
import { constants } from 'node:fs';
import { open, writeFile, type FileHandle } from 'node:fs/promises';
import { UserError } from '../../base/userError';
import { compareCodePoints } from '../tokenizers/codePointOrder';
import { LITTLE_ENDIAN_HOST, convert } from './safetensorsDtypes';
import { jsonParseProblem } from '../../base/boundedText';

/** What the reader understands. Narrow and wide floats become Float32Array, I64 becomes Int32Array. */
export const SAFETENSORS_READ_DTYPES = ['F32', 'F16', 'BF16', 'F64', 'I32', 'I64'] as const;
export type SafetensorsDtype = (typeof SAFETENSORS_READ_DTYPES)[number];

const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2, F64: 8, I32: 4, I64: 8 };

/** The reference implementation's cap; a larger N means a corrupt or foreign file, not a big checkpoint. */
export const MAX_HEADER_BYTES = 100_000_000;

export interface TensorData {
  shape: number[];
  data: Float32Array | Int32Array;
}

export interface DecodedTensor extends TensorData {
  /** The dtype stored in the file, before conversion to `data`'s type. */
  dtype: SafetensorsDtype;
}

export interface DecodedSafetensors {
  tensors: Record<string, DecodedTensor>;
  metadata: Record<string, string>;
}

/** A file (or tensor set) that cannot be read or written; names the source and, where one is at fault, the tensor. */
export class SafetensorsError extends UserError {
  constructor(
    readonly source: string,
    readonly tensor: string | null,
    detail: string,
  ) {
    super(`${source}: ${tensor === null ? '' : `tensor '${tensor}': `}${detail}`);
  }
}

const METADATA_KEY = '__metadata__';

function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** A value quoted in an error, bounded: a crafted header may nest arrays 100,000 deep or hold megabytes. */
function brief(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = Array.isArray(value) ? '[…]' : typeof value === 'object' && value !== null ? '{…}' : String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function isDimension(d: unknown): d is number {
  return typeof d === 'number' && Number.isSafeInteger(d) && d >= 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Writing

function dtypeOf(data: unknown): 'F32' | 'I32' | null {
  if (data instanceof Float32Array) return 'F32';
  if (data instanceof Int32Array) return 'I32';
  return null;
}

/** Little-endian bytes of a 4-byte typed array, without a copy on little-endian hosts. */
function littleEndianBytes(data: Float32Array | Int32Array): Uint8Array {
  if (LITTLE_ENDIAN_HOST) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8Array(data.byteLength);
  const view = new DataView(out.buffer);
  if (data instanceof Float32Array) for (let i = 0; i < data.length; i++) view.setFloat32(4 * i, data[i]!, true);
  else for (let i = 0; i < data.length; i++) view.setInt32(4 * i, data[i]!, true);
  return out;
}

export function encodeSafetensors(tensors: Record<string, TensorData>, metadata?: Record<string, string>): Uint8Array {
  const source = 'encodeSafetensors';
  // The header is written as text, entry by entry: a JS object would move integer-like names ("0") to the front.
  const entries: string[] = [];
  if (metadata !== undefined) {
    const pairs: string[] = [];
    for (const key of Object.keys(metadata).sort(compareCodePoints)) {
      const value: unknown = metadata[key];
      if (typeof value !== 'string') {
        throw new SafetensorsError(
          source,
          null,
          `metadata '${key}' is ${typeof value}; safetensors metadata values must be strings (JSON.stringify it first)`,
        );
      }
      pairs.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    }
    entries.push(`${JSON.stringify(METADATA_KEY)}:{${pairs.join(',')}}`);
  }
  // The reference's Dtype enum ranks F32 above I32 (its order is by alignment, descending); other array types are
  // rejected below, whatever their place.
  const rank = (name: string): number => (dtypeOf(tensors[name]!.data) === 'F32' ? 0 : 1);
  const names = Object.keys(tensors).sort((a, b) => rank(a) - rank(b) || compareCodePoints(a, b));
  const parts: Uint8Array[] = [];
  let offset = 0;
  for (const name of names) {
    if (name === METADATA_KEY) {
      throw new SafetensorsError(source, name, `'${METADATA_KEY}' is reserved for metadata; rename the tensor`);
    }
    const { shape, data } = tensors[name]!;
    const dtype = dtypeOf(data);
    if (dtype === null) throw new SafetensorsError(source, name, 'data must be a Float32Array or an Int32Array');
    if (!Array.isArray(shape) || !shape.every(isDimension)) {
      throw new SafetensorsError(
        source,
        name,
        `shape ${JSON.stringify(shape)} must be an array of non-negative integers`,
      );
    }
    if (elementCount(shape) !== data.length) {
      throw new SafetensorsError(
        source,
        name,
        `shape [${shape.join(', ')}] holds ${elementCount(shape)} elements but data has ${data.length}`,
      );
    }
    const info = { dtype, shape: [...shape], data_offsets: [offset, offset + data.byteLength] };
    entries.push(`${JSON.stringify(name)}:${JSON.stringify(info)}`);
    parts.push(littleEndianBytes(data));
    offset += data.byteLength;
  }
  const json = new TextEncoder().encode(`{${entries.join(',')}}`);
  const headerLength = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLength);
  let at = 8 + headerLength;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading

interface Entry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

/** The header's length from the first 8 bytes of a `fileLength`-byte file, checked against the limit and the size. */
function headerLengthOf(prefix: Uint8Array, fileLength: number, source: string): number {
  if (fileLength < 8 || prefix.length < 8) {
    throw new SafetensorsError(
      source,
      null,
      `file is ${fileLength} bytes, shorter than the 8-byte header length; it is truncated or not a safetensors file`,
    );
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw new SafetensorsError(
      source,
      null,
      `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit; the file is corrupt or not a safetensors file`,
    );
  }
  const headerLength = Number(n);
  if (8 + headerLength > fileLength) {
    throw new SafetensorsError(
      source,
      null,
      `header length ${headerLength} runs past the end of the ${fileLength}-byte file; it is truncated or not a safetensors file`,
    );
  }
  return headerLength;
}

function parseHeader(
  bytes: Uint8Array,
  source: string,
): { entries: Entry[]; metadata: Record<string, string>; dataStart: number } {
  const headerLength = headerLengthOf(bytes, bytes.length, source);
  return { ...parseHeaderJson(bytes.subarray(8, 8 + headerLength), source), dataStart: 8 + headerLength };
}

function parseHeaderJson(header: Uint8Array, source: string): { entries: Entry[]; metadata: Record<string, string> } {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(header);
  } catch {
    throw new SafetensorsError(
      source,
      null,
      'header is not valid UTF-8; the file is corrupt or not a safetensors file',
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new SafetensorsError(
      source,
      null,
      `header is not valid JSON (${jsonParseProblem(err)}); the file is corrupt or not a safetensors file`,
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new SafetensorsError(
      source,
      null,
      'header must be a JSON object mapping tensor names to {dtype, shape, data_offsets}',
    );
  }
  const metadata: Array<[string, string]> = [];
  const entries: Entry[] = [];
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === METADATA_KEY) {
      if (raw === null) continue;
      if (typeof raw !== 'object' || Array.isArray(raw)) {
        throw new SafetensorsError(source, null, `'${METADATA_KEY}' must be an object of string values`);
      }
      for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof value !== 'string') {
          throw new SafetensorsError(
            source,
            null,
            `'${METADATA_KEY}.${key.length > 80 ? `${key.slice(0, 80)}…` : key}' is ${brief(value)}; metadata values must be strings`,
          );
        }
        metadata.push([key, value]);
      }
      continue;
    }
    entries.push(parseEntry(name, raw, source));
  }
  return { entries, metadata: Object.fromEntries(metadata) };
}

function parseEntry(name: string, raw: unknown, source: string): Entry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SafetensorsError(source, name, 'entry must be an object {dtype, shape, data_offsets}');
  }
  const { dtype, shape, data_offsets: offsets } = raw as Record<string, unknown>;
  if (typeof dtype !== 'string' || !(SAFETENSORS_READ_DTYPES as readonly string[]).includes(dtype)) {
    throw new SafetensorsError(
      source,
      name,
      `dtype ${brief(dtype)} is not supported; this reader handles ${SAFETENSORS_READ_DTYPES.join(', ')} (convert the checkpoint, e.g. with torch, to one of them)`,
    );
  }
  if (!Array.isArray(shape) || !shape.every(isDimension)) {
    throw new SafetensorsError(source, name, `shape ${brief(shape)} must be an array of non-negative integers`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isDimension) || offsets[0]! > offsets[1]!) {
    throw new SafetensorsError(
      source,
      name,
      `data_offsets ${brief(offsets)} must be [begin, end] with 0 <= begin <= end`,
    );
  }
  const entry: Entry = {
    name,
    dtype: dtype as SafetensorsDtype,
    shape: shape,
    begin: offsets[0] as number,
    end: offsets[1] as number,
  };
  const expected = elementCount(entry.shape) * DTYPE_BYTES[entry.dtype];
  if (!Number.isSafeInteger(expected) || entry.end - entry.begin !== expected) {
    throw new SafetensorsError(
      source,
      name,
      `data_offsets [${entry.begin}, ${entry.end}] span ${entry.end - entry.begin} bytes but ${entry.dtype} shape [${entry.shape.join(', ')}] needs ${expected}`,
    );
  }
  return entry;
}

/** Tiling check in file order: each tensor must start where the previous one ended, the last end at the buffer's end. */
function checkTiling(entries: readonly Entry[], dataLength: number, source: string): void {
  const byOffset = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  let previous: string | null = null;
  for (const entry of byOffset) {
    if (entry.end > dataLength) {
      throw new SafetensorsError(
        source,
        entry.name,
        `data_offsets end ${entry.end} is past the end of the ${dataLength}-byte data buffer; the file is truncated`,
      );
    }
    if (entry.begin < cursor) {
      throw new SafetensorsError(
        source,
        entry.name,
        `data_offsets [${entry.begin}, ${entry.end}] overlap tensor '${previous}', which ends at ${cursor}`,
      );
    }
    if (entry.begin > cursor) {
      throw new SafetensorsError(
        source,
        entry.name,
        `data_offsets begin ${entry.begin} leaves a hole of ${entry.begin - cursor} bytes after ${previous === null ? 'the header' : `tensor '${previous}'`}`,
      );
    }
    cursor = entry.end;
    previous = entry.name;
  }
  if (cursor !== dataLength) {
    throw new SafetensorsError(
      source,
      null,
      `tensors cover ${cursor} bytes but the data buffer holds ${dataLength}; the file has trailing bytes or a missing tensor`,
    );
  }
}

/** Decodes a whole safetensors file. `source` (the path, ideally) is named in every error. */
export function decodeSafetensors(bytes: Uint8Array, source = '(safetensors bytes)'): DecodedSafetensors {
  const { entries, metadata, dataStart } = parseHeader(bytes, source);
  checkTiling(entries, bytes.length - dataStart, source);
  // fromEntries defines own properties, so even a tensor named "__proto__" is kept as data.
  const tensors: Record<string, DecodedTensor> = Object.fromEntries(
    entries.map((entry) => {
      const span = { bytes, begin: dataStart + entry.begin, end: dataStart + entry.end };
      return [
        entry.name,
        {
          dtype: entry.dtype,
          shape: entry.shape,
          data: convert(entry, span, (detail) => new SafetensorsError(source, entry.name, detail)),
        },
      ];
    }),
  );
  return { tensors, metadata };
}

/** Largest single read: fs refuses reads of 2 GiB or more, so bigger tensors are read in parts. */
const READ_CHUNK = 1 << 30;

/** Exactly `length` bytes at `position` into a fresh buffer; a file that ends early is reported as truncated. */
async function readAt(fh: FileHandle, position: number, length: number, source: string): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(out, done, Math.min(READ_CHUNK, length - done), position + done);
    if (bytesRead === 0) {
      throw new SafetensorsError(
        source,
        null,
        `the file ended at byte ${position + done} while reading bytes ${position}–${position + length}; it shrank while being read, or is truncated`,
      );
    }
    done += bytesRead;
  }
  return out;
}

/**
 * Reads a safetensors file: the 8-byte length, the header, then each tensor at its offset. Only regular files are
 * read; the header and every offset are checked against the file's size before any tensor data is read.
 */
export async function readSafetensorsFile(path: string): Promise<DecodedSafetensors> {
  // O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise; it is refused below anyway.
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const { entries, metadata, dataStart } = await readCheckedHeader(fh, path);
    const tensors: Record<string, DecodedTensor> = {};
    for (const entry of entries) {
      const bytes = await readAt(fh, dataStart + entry.begin, entry.end - entry.begin, path);
      const data = convert(
        entry,
        { bytes, begin: 0, end: bytes.length, owned: true },
        (detail) => new SafetensorsError(path, entry.name, detail),
      );
      // Defined, not assigned: a tensor named "__proto__" is kept as data.
      Object.defineProperty(tensors, entry.name, {
        value: { dtype: entry.dtype, shape: entry.shape, data },
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return { tensors, metadata };
  } finally {
    await fh.close();
  }
}

/**
 * A safetensors file's tensor names, dtypes and shapes, from its header alone (checked as readSafetensorsFile checks
 * it, offsets and tiling included): what a sharded checkpoint's loader needs to check every shard before reading one.
 */
export async function readSafetensorsHeader(path: string): Promise<{
  tensors: Array<{ name: string; dtype: SafetensorsDtype; shape: number[] }>;
  metadata: Record<string, string>;
}> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const { entries, metadata } = await readCheckedHeader(fh, path);
    return { tensors: entries.map(({ name, dtype, shape }) => ({ name, dtype, shape })), metadata };
  } finally {
    await fh.close();
  }
}

async function readCheckedHeader(
  fh: FileHandle,
  path: string,
): Promise<{ entries: Entry[]; metadata: Record<string, string>; dataStart: number }> {
  const st = await fh.stat();
  if (!st.isFile()) {
    const kind = st.isDirectory()
      ? 'a folder'
      : st.isFIFO()
        ? 'a FIFO (named pipe)'
        : st.isCharacterDevice() || st.isBlockDevice()
          ? 'a device'
          : st.isSocket()
            ? 'a socket'
            : 'not a regular file';
    throw new SafetensorsError(path, null, `is ${kind}, expected a regular safetensors file`);
  }
  const size = st.size;
  const prefix = size >= 8 ? await readAt(fh, 0, 8, path) : new Uint8Array(0);
  const headerLength = headerLengthOf(prefix, size, path);
  const { entries, metadata } = parseHeaderJson(await readAt(fh, 8, headerLength, path), path);
  const dataStart = 8 + headerLength;
  checkTiling(entries, size - dataStart, path);
  return { entries, metadata, dataStart };
}

/** Plain write; callers that need atomicity (checkpoints) write to a temporary name and rename. */
export async function writeSafetensorsFile(
  path: string,
  tensors: Record<string, TensorData>,
  metadata?: Record<string, string>,
): Promise<void> {
  await writeFile(path, encodeSafetensors(tensors, metadata));
}
