/**
 * Reading safetensors files that are not what they claim: the reader checks the 8-byte length and the header against
 * the file's size before reading tensor data, and refuses what is not a regular file instead of waiting on it.
 * Each case here hung, read gigabytes, or failed with a RangeError stack before the reader worked this way.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsError, readSafetensorsFile, writeSafetensorsFile } from '../../../engine/model/formats/safetensors';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-st-file-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const GiB = 1024 ** 3;

/** An 8-byte little-endian length followed by `header` (space-padded to a multiple of 8). */
function prefixAndHeader(header: string): Buffer {
  const padded = header.padEnd(Math.ceil(header.length / 8) * 8, ' ');
  const out = Buffer.alloc(8 + padded.length);
  out.writeBigUInt64LE(BigInt(padded.length), 0);
  out.write(padded, 8, 'latin1');
  return out;
}

/** A sparse file of `size` bytes that starts with `head` (no disk space is used for the rest). */
function sparseFile(name: string, head: Buffer, size: number): string {
  const file = path.join(dir, name);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, head, 0, head.length, 0);
    fs.ftruncateSync(fd, size);
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

async function refusal(file: string): Promise<SafetensorsError> {
  const err = await readSafetensorsFile(file).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SafetensorsError);
  expect((err as Error).message).toContain(file);
  return err as SafetensorsError;
}

describe('reading a safetensors file', () => {
  it('refuses a FIFO at once instead of waiting for a writer', { timeout: 10_000 }, async () => {
    const fifo = path.join(dir, 'pipe.safetensors');
    execFileSync('mkfifo', [fifo]);
    const err = await refusal(fifo);
    expect(err.message).toMatch(/FIFO.*expected a regular safetensors file/);
  });

  it('refuses /dev/zero instead of reading it forever', { timeout: 10_000 }, async () => {
    const err = await refusal('/dev/zero');
    expect(err.message).toMatch(/device, expected a regular safetensors file/);
  });

  it('refuses a folder with the same kind of message', async () => {
    const err = await refusal(dir);
    expect(err.message).toMatch(/is a folder, expected a regular safetensors file/);
  });

  it('refuses a 3 GiB file with a bogus header length after reading its first bytes', { timeout: 10_000 }, async () => {
    const head = Buffer.alloc(8);
    head.writeBigUInt64LE(1n << 40n, 0);
    const file = sparseFile('bogus-length.safetensors', head, 3 * GiB);
    const err = await refusal(file);
    expect(err.message).toMatch(/header length 1099511627776 exceeds the 100000000-byte limit/);
  });

  it('refuses a 3 GiB file whose header is not JSON, naming it', { timeout: 10_000 }, async () => {
    const file = sparseFile('not-json.safetensors', prefixAndHeader('{"w": nope'), 3 * GiB);
    const err = await refusal(file);
    expect(err.message).toMatch(/header is not valid JSON/);
  });

  it('refuses tensor offsets beyond the file size before reading any tensor data', { timeout: 10_000 }, async () => {
    // A 2^38-element F32 tensor needs 1 TiB; the file is 3 GiB (sparse).
    const n = 2 ** 38;
    const file = sparseFile(
      'past-end.safetensors',
      prefixAndHeader(`{"w":{"dtype":"F32","shape":[${n}],"data_offsets":[0,${4 * n}]}}`),
      3 * GiB,
    );
    const err = await refusal(file);
    expect(err.message).toMatch(
      /tensor 'w': data_offsets end 1099511627776 is past the end of the \d+-byte data buffer/,
    );
  });

  it('names the file when it ends before its header says', async () => {
    const file = path.join(dir, 'short.safetensors');
    fs.writeFileSync(file, prefixAndHeader('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}').subarray(0, 20));
    const err = await refusal(file);
    expect(err.message).toMatch(/runs past the end of the 20-byte file/);
  });

  it('quotes only a bounded prefix of a crafted header value (100,000 nested arrays)', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const file = path.join(dir, 'deep.safetensors');
    fs.writeFileSync(file, prefixAndHeader(`{"w":{"dtype":"F32","shape":${deep},"data_offsets":[0,0]}}`));
    const err = await refusal(file);
    expect(err.message).toMatch(/tensor 'w': shape \S{1,90} must be an array of non-negative integers/);
    expect(err.message.length).toBeLessThan(400);
  });

  it('still reads good files whole, tensor by tensor, including a tensor named __proto__', async () => {
    const file = path.join(dir, 'good.safetensors');
    await writeSafetensorsFile(
      file,
      {
        a: { shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) },
        ['__proto__']: { shape: [1], data: new Int32Array([7]) },
      },
      { step: '3' },
    );
    const r = await readSafetensorsFile(file);
    expect(Object.keys(r.tensors).sort()).toEqual(['__proto__', 'a']);
    expect([...r.tensors.a!.data]).toEqual([1, 2, 3, 4]);
    expect([...Object.getOwnPropertyDescriptor(r.tensors, '__proto__')!.value.data]).toEqual([7]);
    expect(r.metadata).toEqual({ step: '3' });
  });
});
