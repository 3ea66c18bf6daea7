/**
 * Dequantisation of every GGUF tensor type mars-lab reads (engine/model/formats/gguf/dequantize.ts) against gguf-py,
 * an engine no one here wrote: offline against the digests tests/fixtures/gguf/make_fixtures.py recorded from
 * gguf.quants.dequantize, and, where the peer venv exists, against gguf-py run now on the same file. Also a few values
 * worked by hand from ggml-common.h's block layouts, so a shared misreading of a layout would still show.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dequantize } from '../../../engine/model/formats/gguf/dequantize';
import { withGgufFile } from '../../../engine/model/formats/gguf/ggufFile';
import { GGML_TYPES } from '../../../engine/model/formats/gguf/ggufTypes';
import { FIXTURES, maxUlp, peerPythonOrSkipReason, runPeer } from '../../fixtures/gguf/ggufKit';

interface Digest {
  type: string;
  sha256: string;
  count: number;
  firstBits: number[];
}
const expected = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'expected.json'), 'utf8')) as {
  types: Record<string, Digest>;
};
const TYPES_FILE = path.join(FIXTURES, 'types.gguf');

function sha256(values: Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
    .digest('hex');
}

const type = (name: string) => [...GGML_TYPES.values()].find((t) => t.name === name)!;

describe('GGUF dequantisation', () => {
  it('equals gguf-py bit for bit on every type of the fixture (recorded digests)', async () => {
    await withGgufFile(TYPES_FILE, async (file) => {
      expect(file.tensors.map((t) => t.type.name).sort()).toEqual(
        ['BF16', 'F16', 'F32', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_K', 'Q6_K', 'Q8_0'].sort(),
      );
      for (const [name, want] of Object.entries(expected.types)) {
        const got = await file.readFloat32(name);
        expect(file.tensor(name)!.type.name, name).toBe(want.type);
        expect(got.length, name).toBe(want.count);
        expect([...new Uint32Array(got.buffer, 0, 8)], name).toEqual(want.firstBits);
        expect(sha256(got), `${name} (${want.type})`).toBe(want.sha256);
      }
    });
  });

  it('equals gguf-py run now on the fixture (0 ulp)', async (ctx) => {
    const { python, reason } = peerPythonOrSkipReason();
    if (!python) return ctx.skip(reason);
    const names = Object.keys(expected.types);
    const ref = await runPeer(python, 'dequant', TYPES_FILE, names);
    await withGgufFile(TYPES_FILE, async (file) => {
      for (const name of names) expect(maxUlp(await file.readFloat32(name), ref.get(name)!), name).toBe(0);
    });
  });

  it('F16 and BF16 keep signed zeros, subnormals, infinities and NaN payloads', () => {
    const bits = (name: string, halves: number[]) => [
      ...new Uint32Array(dequantize(type(name), new Uint8Array(new Uint16Array(halves).buffer), halves.length).buffer),
    ];
    expect(bits('F16', [0x0000, 0x8000, 0x0001, 0x03ff, 0x3c00, 0x7c00, 0xfc00, 0x7e00, 0x7c01])).toEqual([
      0x00000000, 0x80000000, 0x33800000, 0x387fc000, 0x3f800000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f802000,
    ]);
    expect(bits('BF16', [0x3f80, 0x8001, 0x7f81])).toEqual([0x3f800000, 0x80010000, 0x7f810000]);
  });

  it('Q4_0, Q4_1 and Q8_0 blocks worked by hand', () => {
    // d = 0.5 (half 0x3800), m = -1 (0xbc00); byte j holds value j (low nibble) and 15 - j (high nibble)
    const nibbles = Array.from({ length: 16 }, (_, j) => j | ((15 - j) << 4));
    const q40 = dequantize(type('Q4_0'), Uint8Array.from([0x00, 0x38, ...nibbles]), 32);
    expect(q40[0]).toBe(0.5 * (0 - 8));
    expect(q40[5]).toBe(0.5 * (5 - 8));
    expect(q40[16]).toBe(0.5 * (15 - 8));
    const q41 = dequantize(type('Q4_1'), Uint8Array.from([0x00, 0x38, 0x00, 0xbc, ...nibbles]), 32);
    expect(q41[3]).toBe(0.5 * 3 - 1);
    expect(q41[19]).toBe(0.5 * 12 - 1);
    const ints = Array.from({ length: 32 }, (_, j) => (j - 16) & 0xff);
    const q80 = dequantize(type('Q8_0'), Uint8Array.from([0x00, 0x38, ...ints]), 32);
    expect(q80[0]).toBe(-8);
    expect(q80[31]).toBe(7.5);
  });

  it('Q4_K, Q5_K and Q6_K: one value of each super-block part worked by hand', () => {
    // Q4_K: d = 1, dmin = 0.5; sub-block 5's scale/min come from the packed high bits (byte 9 and bits 6–7 of 1, 5)
    const q4k = new Uint8Array(144);
    q4k.set([0x00, 0x3c, 0x00, 0x38]);
    q4k[4 + 1] = 0b11_000011; // sub-block 1 scale 3, high bits 3 of sub-block 5's scale
    q4k[4 + 5] = 0b01_000010; // sub-block 1 min 2, high bits 1 of sub-block 5's min
    q4k[4 + 9] = 0x2a; // sub-block 5: scale low 0xa, min low 0x2
    q4k[16 + 32 * 2 + 7] = 0x90; // sub-block 5 is the high nibbles of bytes 64–95: value 9 at l = 7
    q4k[16 + 7] = 0x0b; // sub-block 0 (low nibbles of bytes 0–31) value 11, scale 0 → 0·11 − 0
    q4k[16 + 32 * 0 + 3] = 0x50; // sub-block 1 (high nibbles of bytes 0–31) value 5 at l = 3
    const y4 = dequantize(type('Q4_K'), q4k, 256);
    expect(y4[32 * 5 + 7]).toBe((0x30 | 0xa) * 9 - 0.5 * (0x10 | 0x2));
    expect(y4[32 + 3]).toBe(3 * 5 - 0.5 * 2);
    expect(y4[7]).toBe(0);
    // Q5_K: same scales; value at sub-block 3, l = 4 gets its fifth bit from bit 3 of qh[4]
    const q5k = new Uint8Array(176);
    q5k.set([0x00, 0x3c, 0x00, 0x00]);
    q5k[4 + 3] = 2; // scale 2 for sub-block 3
    q5k[16 + 4] = 1 << 3;
    q5k[48 + 32 * 1 + 4] = 0x60; // sub-block 3: high nibbles of bytes 32–63 → 6
    expect(dequantize(type('Q5_K'), q5k, 256)[32 * 3 + 4]).toBe(2 * (16 + 6));
    // Q6_K: d = 0.25 at byte 208; element 64·1 + 32·1 + 5 = 101 (l = 5, fourth quarter of the first half)
    const q6k = new Uint8Array(210);
    q6k.set([0x00, 0x34], 208);
    q6k[128 + 5] = 0b10 << 6; // qh[5] bits 6–7 → high bits 2 for y[l + 96]
    q6k[32 + 5] = 0x70; // ql[l + 32] high nibble → low bits 7 for y[l + 96]
    q6k[192 + 6] = -3 & 0xff; // scale of group 101 >> 4 = 6 is −3
    expect(dequantize(type('Q6_K'), q6k, 256)[101]).toBe(0.25 * -3 * ((2 << 4) + 7 - 32));
  });

  it('refuses a type it does not dequantise, naming it', () => {
    expect(() => dequantize(type('Q5_0'), new Uint8Array(22), 32, 'x.gguf: tensor t')).toThrow(
      /^x\.gguf: tensor t has tensor type Q5_0, which is not supported/,
    );
  });
});
