import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  SafetensorsError,
  decodeSafetensors,
  encodeSafetensors,
  readSafetensorsFile,
  writeSafetensorsFile,
} from '../../../engine/model/formats/safetensors';

const SOURCE = '/ckpt/model.safetensors';

/** A safetensors file assembled by hand from the spec: u64 LE header length, header JSON, raw data. */
function handBuilt(header: string, data: number[], pad = true): Uint8Array {
  const json = [...header].map((c) => c.charCodeAt(0));
  while (pad && json.length % 8 !== 0) json.push(0x20);
  const n = json.length;
  const length = [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >> 24) & 0xff, 0, 0, 0, 0];
  return new Uint8Array([...length, ...json, ...data]);
}

/** Little-endian float32 bytes of 0, 1, 2, 3, 4, 5, written out by hand (1.0 = 0x3F800000). */
const ZERO_TO_FIVE = [
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80,
  0x40, 0x00, 0x00, 0xa0, 0x40,
];

function u16le(values: number[]): number[] {
  return values.flatMap((v) => [v & 0xff, v >> 8]);
}

function expectError(fn: () => unknown, ...parts: string[]): SafetensorsError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(SafetensorsError);
  for (const part of parts) expect((caught as Error).message).toContain(part);
  return caught as SafetensorsError;
}

describe('safetensors byte layout', () => {
  it('decodes a hand-built F32 file and encodes the same input to the same bytes', () => {
    const header = '{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}';
    const bytes = handBuilt(header, ZERO_TO_FIVE);
    expect(bytes.length).toBe(8 + 72 + 24);
    expect(bytes[0]).toBe(72);

    const decoded = decodeSafetensors(bytes, SOURCE);
    expect(Object.keys(decoded.tensors)).toEqual(['attn0']);
    expect(decoded.tensors.attn0!.dtype).toBe('F32');
    expect(decoded.tensors.attn0!.shape).toEqual([1, 1, 2, 3]);
    expect([...decoded.tensors.attn0!.data]).toEqual([0, 1, 2, 3, 4, 5]);
    expect(decoded.metadata).toEqual({});

    const encoded = encodeSafetensors({ attn0: { shape: [1, 1, 2, 3], data: new Float32Array([0, 1, 2, 3, 4, 5]) } });
    expect([...encoded]).toEqual([...bytes]);
  });

  it('orders the header like the reference writer: metadata first, F32 before I32, then by name', () => {
    const header =
      '{"__metadata__":{"format":"pt","step":"7"},' +
      '"a.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' +
      '"b":{"dtype":"F32","shape":[],"data_offsets":[8,12]},' +
      '"a.ids":{"dtype":"I32","shape":[1],"data_offsets":[12,16]}}';
    const data = [
      ...[0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40], // 1, 2
      ...[0x00, 0x00, 0x40, 0xc0], // -3
      ...[0xff, 0xff, 0xff, 0xff], // -1
    ];
    const bytes = handBuilt(header, data);
    const encoded = encodeSafetensors(
      {
        b: { shape: [], data: new Float32Array([-3]) },
        'a.ids': { shape: [1], data: new Int32Array([-1]) },
        'a.weight': { shape: [2], data: new Float32Array([1, 2]) },
      },
      { step: '7', format: 'pt' },
    );
    expect(new TextDecoder().decode(encoded.subarray(8, 8 + encoded[0]!)).trimEnd()).toBe(header);
    expect([...encoded]).toEqual([...bytes]);
  });

  it('pads the header with spaces to a multiple of 8 and writes an empty file like the reference', () => {
    const empty = encodeSafetensors({});
    expect([...empty]).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20]);
    expect(decodeSafetensors(empty, SOURCE)).toEqual({ tensors: {}, metadata: {} });
  });
});

describe('safetensors round trip', () => {
  it('keeps several tensors, dtypes, shapes and metadata', () => {
    const tensors = {
      'model.embed_tokens.weight': { shape: [3, 4], data: Float32Array.from({ length: 12 }, (_, i) => i / 7 - 0.5) },
      'model.norm.weight': { shape: [4], data: new Float32Array([1, -0, Infinity, -1e-40]) },
      step: { shape: [], data: new Int32Array([123456]) },
      'ids.empty': { shape: [0, 5], data: new Int32Array(0) },
      counts: { shape: [2, 2], data: new Int32Array([-2147483648, 2147483647, 0, -1]) },
    };
    const metadata = { format: 'pt', config: JSON.stringify({ d: 128, layers: 2 }), ünïcode: '日本' };
    const decoded = decodeSafetensors(encodeSafetensors(tensors, metadata), SOURCE);
    expect(decoded.metadata).toEqual(metadata);
    expect(Object.keys(decoded.tensors).sort()).toEqual(Object.keys(tensors).sort());
    for (const [name, t] of Object.entries(tensors)) {
      const got = decoded.tensors[name]!;
      expect(got.shape).toEqual(t.shape);
      expect(got.dtype).toBe(t.data instanceof Float32Array ? 'F32' : 'I32');
      expect(got.data.constructor).toBe(t.data.constructor);
      expect([...got.data]).toEqual([...t.data]);
    }
    expect(Object.is(decoded.tensors['model.norm.weight']!.data[1], -0)).toBe(true);
  });

  it('returns copies, not views into the file bytes', () => {
    const bytes = encodeSafetensors({ w: { shape: [2], data: new Float32Array([1, 2]) } });
    const before = [...bytes];
    const decoded = decodeSafetensors(bytes, SOURCE);
    decoded.tensors.w!.data[0] = 99;
    expect([...bytes]).toEqual(before);
    expect(decoded.tensors.w!.data.buffer).not.toBe(bytes.buffer);
  });

  it('reads tensors at unaligned addresses (unpadded header, and a view at an odd byte offset)', () => {
    // 65-byte header, no padding: data starts at byte 73.
    const unpadded = handBuilt(
      '{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}',
      ZERO_TO_FIVE,
      false,
    );
    expect(unpadded[0]).toBe(65);
    expect([...decodeSafetensors(unpadded, SOURCE).tensors.attn0!.data]).toEqual([0, 1, 2, 3, 4, 5]);

    // Odd-length headers put F16, F64 and I64 data at odd addresses.
    for (const [dtype, data, expected] of [
      ['F16', u16le([0x3c00, 0xc500]), [1, -5]],
      ['BF16', u16le([0x3f80, 0xc0a0]), [1, -5]],
      ['F64', [...new Uint8Array(new Float64Array([1, -5]).buffer)], [1, -5]],
      ['I64', [...new Uint8Array(new BigInt64Array([1n, -5n]).buffer)], [1, -5]],
    ] as const) {
      let header = `{"t":{"dtype":"${dtype}","shape":[2],"data_offsets":[0,${data.length}]}}`;
      if (header.length % 2 === 0) header += ' ';
      const bytes = handBuilt(header, [...data], false);
      expect((8 + bytes[0]!) % 2).toBe(1);
      expect([...decodeSafetensors(bytes, SOURCE).tensors.t!.data]).toEqual(expected);
    }

    const file = encodeSafetensors({
      a: { shape: [3], data: new Float32Array([1.5, -2.25, 3]) },
      b: { shape: [2], data: new Int32Array([7, -9]) },
    });
    const shifted = new Uint8Array(file.length + 3);
    shifted.set(file, 3);
    const view = shifted.subarray(3);
    const decoded = decodeSafetensors(view, SOURCE);
    expect([...decoded.tensors.a!.data]).toEqual([1.5, -2.25, 3]);
    expect([...decoded.tensors.b!.data]).toEqual([7, -9]);
  });

  it('handles a large tensor', () => {
    const n = 1 << 20;
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (i % 1000) - 0.5;
    const decoded = decodeSafetensors(encodeSafetensors({ big: { shape: [1024, n / 1024], data } }), SOURCE);
    const got = decoded.tensors.big!.data;
    expect(got.length).toBe(n);
    expect(got[0]).toBe(data[0]);
    expect(got[n - 1]).toBe(data[n - 1]);
    expect(got[123457]).toBe(data[123457]);
    expect(got.some((v, i) => v !== data[i])).toBe(false);
  });

  it('writes and reads files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mars-lab-safetensors-'));
    try {
      const path = join(dir, 'model.safetensors');
      await writeSafetensorsFile(path, { w: { shape: [2, 1], data: new Float32Array([0.25, 4]) } }, { step: '3' });
      const decoded = await readSafetensorsFile(path);
      expect([...decoded.tensors.w!.data]).toEqual([0.25, 4]);
      expect(decoded.metadata).toEqual({ step: '3' });

      const broken = join(dir, 'broken.safetensors');
      await writeFile(broken, new Uint8Array([1, 2, 3]));
      await expect(readSafetensorsFile(broken)).rejects.toThrow(broken);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('safetensors dtype conversion', () => {
  it('decodes F16 including subnormals, infinities, negative zero and NaN', () => {
    const halves = [0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x7c00, 0xfc00, 0x8000, 0x7e00, 0x3555, 0x8001];
    const expected = [
      1,
      -2,
      65504,
      2 ** -24,
      1023 * 2 ** -24,
      2 ** -14,
      Infinity,
      -Infinity,
      -0,
      NaN,
      0.333251953125,
      -(2 ** -24),
    ];
    const bytes = handBuilt(`{"h":{"dtype":"F16","shape":[12],"data_offsets":[0,24]}}`, u16le(halves));
    const t = decodeSafetensors(bytes, SOURCE).tensors.h!;
    expect(t.dtype).toBe('F16');
    expect(t.data).toBeInstanceOf(Float32Array);
    expected.forEach((value, i) =>
      expect(Object.is(t.data[i], value), `element ${i}: ${t.data[i]} vs ${value}`).toBe(true),
    );
  });

  it('decodes BF16 including subnormals, infinities, negative zero and NaN', () => {
    const halves = [0x3f80, 0xc000, 0x7f80, 0xff80, 0x8000, 0x0001, 0x4049, 0x7fc0];
    const expected = [1, -2, Infinity, -Infinity, -0, 2 ** -133, 3.140625, NaN];
    const bytes = handBuilt(`{"b":{"dtype":"BF16","shape":[2,4],"data_offsets":[0,16]}}`, u16le(halves));
    const t = decodeSafetensors(bytes, SOURCE).tensors.b!;
    expect(t.dtype).toBe('BF16');
    expect(t.shape).toEqual([2, 4]);
    expected.forEach((value, i) =>
      expect(Object.is(t.data[i], value), `element ${i}: ${t.data[i]} vs ${value}`).toBe(true),
    );
  });

  it('decodes F64 to the nearest float32 and I64 to int32', () => {
    const f64 = new Uint8Array(new Float64Array([1.5, -0.1, 1e300]).buffer);
    const i64 = new Uint8Array(new BigInt64Array([-1n, 2147483647n, -2147483648n, 5n]).buffer);
    const header =
      '{"d":{"dtype":"F64","shape":[3],"data_offsets":[0,24]},"i":{"dtype":"I64","shape":[4],"data_offsets":[24,56]}}';
    const t = decodeSafetensors(handBuilt(header, [...f64, ...i64]), SOURCE).tensors;
    expect(t.d!.data).toBeInstanceOf(Float32Array);
    expect([...t.d!.data]).toEqual([1.5, Math.fround(-0.1), Infinity]);
    expect(t.i!.data).toBeInstanceOf(Int32Array);
    expect(t.i!.dtype).toBe('I64');
    expect([...t.i!.data]).toEqual([-1, 2147483647, -2147483648, 5]);
  });

  it('refuses I64 values outside int32, naming the source, tensor and value', () => {
    const i64 = new Uint8Array(new BigInt64Array([1n, 2147483648n]).buffer);
    const bytes = handBuilt('{"position_ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}', [...i64]);
    expectError(() => decodeSafetensors(bytes, SOURCE), SOURCE, "'position_ids'", '2147483648');
  });
});

describe('safetensors validation', () => {
  const good = '{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}';

  it('rejects a file shorter than the length prefix', () => {
    expectError(() => decodeSafetensors(new Uint8Array([1, 2, 3]), SOURCE), SOURCE, 'truncated');
  });

  it('rejects a header length past the end of the file, or absurdly large', () => {
    const bytes = handBuilt(good, ZERO_TO_FIVE);
    bytes[0] = 0xff;
    bytes[1] = 0x01;
    expectError(() => decodeSafetensors(bytes, SOURCE), SOURCE, 'header length 511');
    const huge = handBuilt(good, ZERO_TO_FIVE);
    huge[6] = 1;
    expectError(() => decodeSafetensors(huge, SOURCE), SOURCE, 'exceeds');
  });

  it('rejects a header that is not JSON or not an object', () => {
    expectError(() => decodeSafetensors(handBuilt('{"w": nope}', []), SOURCE), SOURCE, 'not valid JSON');
    expectError(() => decodeSafetensors(handBuilt('[1,2]', []), SOURCE), SOURCE, 'JSON object');
  });

  it('rejects offsets past the end of the data, naming the tensor', () => {
    expectError(
      () => decodeSafetensors(handBuilt(good, ZERO_TO_FIVE.slice(0, 20)), SOURCE),
      SOURCE,
      "tensor 'w'",
      'past the end',
    );
  });

  it('rejects a byte length that does not match shape and dtype, naming the tensor', () => {
    const header = '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,24]}}';
    expectError(() => decodeSafetensors(handBuilt(header, ZERO_TO_FIVE), SOURCE), SOURCE, "tensor 'w'", 'needs 16');
  });

  it('rejects overlaps, holes and trailing bytes', () => {
    const overlap =
      '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}';
    expectError(
      () => decodeSafetensors(handBuilt(overlap, ZERO_TO_FIVE), SOURCE),
      SOURCE,
      "tensor 'b'",
      "overlap tensor 'a'",
    );
    const hole =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]}}';
    expectError(
      () => decodeSafetensors(handBuilt(hole, ZERO_TO_FIVE), SOURCE),
      SOURCE,
      "tensor 'b'",
      'hole of 4 bytes',
    );
    const short = '{"a":{"dtype":"F32","shape":[5],"data_offsets":[0,20]}}';
    expectError(() => decodeSafetensors(handBuilt(short, ZERO_TO_FIVE), SOURCE), SOURCE, 'trailing bytes');
  });

  it('rejects malformed entries and unsupported dtypes, naming the tensor', () => {
    const u8 = '{"mask":{"dtype":"U8","shape":[24],"data_offsets":[0,24]}}';
    expectError(() => decodeSafetensors(handBuilt(u8, ZERO_TO_FIVE), SOURCE), SOURCE, "tensor 'mask'", '"U8"');
    const badShape = '{"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}}';
    expectError(() => decodeSafetensors(handBuilt(badShape, ZERO_TO_FIVE), SOURCE), SOURCE, "tensor 'w'", 'shape');
    const badOffsets = '{"w":{"dtype":"F32","shape":[6],"data_offsets":[24,0]}}';
    expectError(
      () => decodeSafetensors(handBuilt(badOffsets, ZERO_TO_FIVE), SOURCE),
      SOURCE,
      "tensor 'w'",
      'data_offsets',
    );
    const badMeta = '{"__metadata__":{"step":3},"w":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}';
    expectError(() => decodeSafetensors(handBuilt(badMeta, ZERO_TO_FIVE), SOURCE), SOURCE, '__metadata__.step');
  });

  it('refuses to encode inconsistent tensors, naming them', () => {
    expectError(
      () => encodeSafetensors({ w: { shape: [2, 2], data: new Float32Array(3) } }),
      "tensor 'w'",
      'holds 4 elements',
    );
    expectError(() => encodeSafetensors({ __metadata__: { shape: [1], data: new Float32Array(1) } }), 'reserved');
    expectError(
      () => encodeSafetensors({ w: { shape: [1], data: new Float64Array(1) as unknown as Float32Array } }),
      "tensor 'w'",
      'Float32Array',
    );
  });
});
