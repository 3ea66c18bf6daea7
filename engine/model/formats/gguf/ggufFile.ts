/**
 * An open GGUF file: its checked header (ggufHeader.ts) and its tensors read one at a time with positioned reads at
 * their offsets and dequantised to float32 (dequantize.ts), so the file is never in memory whole: a tensor's bytes
 * live only while it is converted. Opened like safetensors files are (safetensors.ts): without blocking, and refused
 * unless it is a regular file (a FIFO or /dev/zero never ends).
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dequantize } from './dequantize';
import { readGgufHeader } from './ggufHeader';
import { GgufError, type GgufHeader, type GgufTensorInfo, type GgufValue } from './ggufTypes';

/** Largest single read: fs refuses reads of 2 GiB or more. */
const READ_CHUNK = 1 << 30;
/** A Float32Array of more values than this is past what V8 allocates in one piece (and 8 GiB of one tensor). */
const MAX_TENSOR_VALUES = 2 ** 31 - 1;

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file (a device?)';
}

export class GgufFile {
  private readonly byName: Map<string, GgufTensorInfo>;

  private constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    readonly header: GgufHeader,
  ) {
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /** Opens and checks `path`; every error is a GgufError naming it. Close it when done. */
  static async open(path: string): Promise<GgufFile> {
    let fh: FileHandle;
    try {
      fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      throw new GgufError(`${path}: cannot open it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new GgufError(`${path}: is ${kindOf(st)}, expected a .gguf file`);
      return new GgufFile(fh, path, readGgufHeader(fh.fd, st.size, path));
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  get metadata(): Map<string, GgufValue> {
    return this.header.metadata;
  }

  get tensors(): readonly GgufTensorInfo[] {
    return this.header.tensors;
  }

  tensor(name: string): GgufTensorInfo | undefined {
    return this.byName.get(name);
  }

  /** The raw bytes of one tensor, read at its offset. */
  async readBytes(info: GgufTensorInfo): Promise<Uint8Array> {
    const out = new Uint8Array(info.bytes);
    let done = 0;
    while (done < info.bytes) {
      const { bytesRead } = await this.fh.read(out, done, Math.min(READ_CHUNK, info.bytes - done), info.offset + done);
      if (bytesRead === 0) {
        throw new GgufError(
          `${this.path}: tensor '${info.name}': the file ended at byte ${info.offset + done}; it shrank while being read`,
        );
      }
      done += bytesRead;
    }
    return out;
  }

  /** One tensor as float32, in ggml's order (row-major with dims reversed: HF's shape is `[...info.dims].reverse()`). */
  async readFloat32(name: string): Promise<Float32Array> {
    const info = this.byName.get(name);
    if (!info) throw new GgufError(`${this.path}: has no tensor '${name}'`);
    if (info.elements > MAX_TENSOR_VALUES) {
      throw new GgufError(
        `${this.path}: tensor '${name}' has ${info.elements} values, more than the ${MAX_TENSOR_VALUES} one float32 array holds`,
      );
    }
    return dequantize(info.type, await this.readBytes(info), info.elements, `${this.path}: tensor '${name}'`);
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

/** Runs `use` on the opened file and closes it, whatever happens. */
export async function withGgufFile<T>(path: string, use: (file: GgufFile) => Promise<T>): Promise<T> {
  const file = await GgufFile.open(path);
  try {
    return await use(file);
  } finally {
    await file.close();
  }
}
