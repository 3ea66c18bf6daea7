/**
 * Truncated and crafted GGUF files (issue 30, "Bad input"): each is refused by GgufFile.open or readFloat32 with one
 * GgufError line naming the file and what is wrong, after reading a few bytes: the claimed sizes (a tensor count of
 * 2^40, a metadata string of 2 GiB, a shape of 2^96 values) are checked against the file before anything is allocated,
 * which the external-memory check below would catch.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GgufFile } from '../../../engine/model/formats/gguf/ggufFile';
import { planGgufToHf } from '../../../engine/model/formats/gguf/ggufToHf';
import { GgufError } from '../../../engine/model/formats/gguf/ggufTypes';
import { FIXTURES, GgufBytes, tempDir } from '../../fixtures/gguf/ggufKit';

let tmp: { dir: string; remove: () => void };
beforeAll(() => {
  tmp = tempDir('gguf-bad-');
});
afterAll(() => tmp.remove());

let counter = 0;
function file(bytes: Uint8Array): string {
  const p = path.join(tmp.dir, `f${++counter}.gguf`);
  fs.writeFileSync(p, bytes);
  return p;
}

/** One F32 tensor of `dims` (data zeros) after `kvs` metadata, laid out as a writer would. */
function oneTensor(opts: { dims?: Array<number | bigint>; type?: number; offset?: number | bigint; data?: number }) {
  const b = new GgufBytes().preamble(1, 1).kvString('general.architecture', 'llama');
  b.tensorInfo('t', opts.dims ?? [8], opts.type ?? 0, opts.offset ?? 0).align();
  return b.raw(new Uint8Array(opts.data ?? 32)).bytes();
}

/** Refused with one GgufError line that names the file and matches `pattern`; external memory stays small. */
async function refused(p: string, pattern: RegExp, read?: string): Promise<void> {
  const before = process.memoryUsage().arrayBuffers;
  let error: unknown;
  try {
    const f = await GgufFile.open(p);
    try {
      if (read) await f.readFloat32(read);
      else planGgufToHf(f);
    } finally {
      await f.close();
    }
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(GgufError);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  expect(message.length).toBeLessThan(300);
  expect(message.startsWith(`${p}: `)).toBe(true);
  expect(message).toMatch(pattern);
  expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 2 ** 20);
}

describe('bad GGUF input: one line each, bounded', () => {
  it('a truncated file, cut inside the metadata, the tensor infos or the data', async () => {
    const whole = fs.readFileSync(path.join(FIXTURES, 'tiny-llama.gguf'));
    for (const cut of [2, 20, 300, 1500, 3000]) {
      await refused(file(whole.subarray(0, cut)), /truncated/);
    }
    await refused(
      file(whole.subarray(0, whole.length - 100)),
      /runs past the end of the \d+-byte file; it is truncated/,
    );
  });

  it('tensor data offsets past the end of the file', async () => {
    await refused(
      file(oneTensor({ offset: 1024 })),
      /tensor 't': its data \(offset 1024, 32 bytes\) runs past the end/,
    );
    await refused(file(oneTensor({ offset: 2n ** 63n })), /runs past the end/);
  });

  it('a tensor count of 2^40', async () => {
    await refused(file(new GgufBytes().preamble(2n ** 40n, 0).bytes()), /the tensor count is 1099511627776, more than/);
  });

  it('a metadata count that is huge, or more than the file can hold', async () => {
    await refused(file(new GgufBytes().preamble(0, 2n ** 62n).bytes()), /the metadata count is \d+, more than 65536/);
    await refused(
      file(new GgufBytes().preamble(0, 60_000).bytes()),
      /the metadata count is 60000, but .* only 0 are left/,
    );
  });

  it('an unknown tensor type', async () => {
    await refused(file(oneTensor({ type: 99 })), /tensor 't' has unknown ggml tensor type 99/);
  });

  it('a metadata string, key, name or array claiming gigabytes', async () => {
    const value = new GgufBytes()
      .preamble(0, 1)
      .str('general.name')
      .u32(8)
      .u64(2n ** 31n)
      .bytes();
    await refused(file(value), /metadata 'general.name' claims 2147483648 bytes, more than the 33554432-byte limit/);
    const key = new GgufBytes()
      .preamble(0, 1)
      .u64(2n ** 33n)
      .raw(new Uint8Array(16))
      .bytes();
    await refused(file(key), /the key of metadata entry 0 claims 8589934592 bytes/);
    const name = new GgufBytes().preamble(1, 0).u64(1000).raw(new Uint8Array(1000)).bytes();
    await refused(file(name), /the name of tensor 0 claims 1000 bytes, more than the 63-byte limit/);
    const array = new GgufBytes()
      .preamble(0, 1)
      .str('tokenizer.ggml.tokens')
      .u32(9)
      .u32(8)
      .u64(2n ** 40n)
      .bytes();
    await refused(file(array), /the item count of metadata 'tokenizer.ggml.tokens' is 1099511627776, more than/);
    const fits = new GgufBytes().preamble(0, 1).str('tokenizer.ggml.scores').u32(9).u32(6).u64(1_000_000).bytes();
    await refused(file(fits), /item count .* is 1000000, but .* need at least 4000000 bytes/);
  });

  it('a shape whose product overflows, and more than 4 dimensions', async () => {
    await refused(file(oneTensor({ dims: [2n ** 32n, 2n ** 32n, 2n ** 32n] })), /its shape's product overflows/);
    await refused(file(oneTensor({ dims: [1, 1, 1, 1, 1] })), /has 5 dimensions; ggml allows at most 4/);
  });

  it('not GGUF, GGUF v1, big-endian, a folder or a FIFO', async () => {
    await refused(
      file(new TextEncoder().encode('{"not": "gguf"}')),
      /is not a GGUF file: it starts with bytes 7b 22 6e 6f/,
    );
    await refused(
      file(new GgufBytes().preamble(0, 0, 1).bytes()),
      /has GGUF version 1; versions 2 and 3 are supported/,
    );
    await refused(file(new GgufBytes().preamble(0, 0, 0x03000000).bytes()), /big-endian/);
    await refused(tmp.dir, /is a folder, expected a \.gguf file/);
    const fifo = path.join(tmp.dir, 'fifo.gguf');
    execFileSync('mkfifo', [fifo]);
    await refused(fifo, /is a FIFO/);
  });

  it('misaligned, overlapping, duplicated or badly blocked tensors; nested arrays; bad alignment', async () => {
    await refused(file(oneTensor({ offset: 4 })), /data offset 4 is not a multiple of the alignment 32/);
    const overlap = new GgufBytes().preamble(2, 0).tensorInfo('a', [16], 0, 0).tensorInfo('b', [16], 0, 32).align();
    await refused(file(overlap.raw(new Uint8Array(128)).bytes()), /tensor 'b': its data overlaps tensor 'a's/);
    const twice = new GgufBytes().preamble(2, 0).tensorInfo('a', [8], 0, 0).tensorInfo('a', [8], 0, 32).align();
    await refused(file(twice.raw(new Uint8Array(64)).bytes()), /tensor 'a' appears twice/);
    await refused(file(oneTensor({ dims: [16], type: 2 })), /row length 16 is not a multiple of Q4_0's block of 32/);
    const nested = new GgufBytes().preamble(0, 1).str('x').u32(9).u32(9).u64(1).bytes();
    await refused(file(nested), /metadata 'x' is an array of arrays/);
    const align = new GgufBytes().preamble(0, 1).kvU32('general.alignment', 48).bytes();
    await refused(file(align), /'general.alignment' must be a power of two/);
  });

  it('a type it cannot dequantise, an unknown architecture, a missing field', async () => {
    await refused(
      file(oneTensor({ dims: [32], type: 6, data: 32 })),
      /tensor 't' has tensor type Q5_0, which is not supported/,
      't',
    );
    const arch = new GgufBytes().preamble(0, 1).kvString('general.architecture', 'mamba').bytes();
    await refused(
      file(arch),
      /metadata 'general.architecture' is "mamba", which is not supported \(supported: llama, qwen2, qwen3\)/,
    );
    const missing = new GgufBytes().preamble(1, 2).kvString('general.architecture', 'llama');
    missing.kvU32('llama.embedding_length', 8).tensorInfo('token_embd.weight', [8, 4], 0, 0).align();
    await refused(file(missing.raw(new Uint8Array(128)).bytes()), /metadata 'llama.attention.head_count' is missing/);
  });
});
