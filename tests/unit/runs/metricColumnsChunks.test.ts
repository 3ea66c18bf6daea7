/**
 * The column reader (engine/api/views/metricColumns.ts) reads metrics.jsonl in 8 MiB chunks: a metric named with non-ASCII
 * characters whose bytes are cut by a chunk's end is read whole (as the full parse reads it), and the log grown after
 * such a chunk is extended from the right byte; and the overlay's column decimation (decimateColumns) gives the
 * buckets decimate() gives for the same points, zoomed or not, with non-finite values.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearMetricColumns, metricColumns } from '../../../engine/api/views/metricColumns';
import { decimate, decimateColumns } from '../../../engine/runs/summary/decimate';
import { parsedColumn } from '../../helpers/metricReference';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-columns-chunks-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const CHUNK = 8 << 20;

describe('metric columns across chunks', () => {
  it('a non-ASCII metric name cut by the end of a chunk reads as the full parse reads it, and the log is followed from there', () => {
    const file = path.join(dir, 'accents.jsonl');
    const line = (s: number) => JSON.stringify({ step: s, time: 1e9 + s, 'récompense·報酬': s / 7, loss: 1 / s });
    // Lines up to just before the chunk's end, then a filler line sized so that the next line's key straddles it.
    const lines: string[] = [];
    let bytes = 0;
    let s = 1;
    for (; bytes < CHUNK - 400; s++) {
      const l = line(s);
      lines.push(l);
      bytes += Buffer.byteLength(l) + 1;
    }
    const straddler = line(s);
    const keyAt = Buffer.byteLength(straddler.slice(0, straddler.indexOf('報')));
    // a line of ASCII ('x' padding in a metric-free field) that ends where the straddler's '報' starts one byte short
    const pad = CHUNK - bytes - keyAt - 1 - Buffer.byteLength(JSON.stringify({ step: s, note: '' })) - 1;
    lines.push(JSON.stringify({ step: s, note: 'x'.repeat(pad) }));
    lines.push(straddler);
    for (let t = s + 1; t < s + 50; t++) lines.push(line(t));
    const text = lines.join('\n') + '\n';
    fs.writeFileSync(file, text);
    const boundary = Buffer.from(text).subarray(CHUNK - 1, CHUNK + 2);
    expect(boundary.equals(Buffer.from('報'))).toBe(true); // the chunk's end cuts the character

    clearMetricColumns();
    const [got] = metricColumns('accents', file, ['récompense·報酬'], 'step');
    const want = parsedColumn(text, 'récompense·報酬', 'step');
    expect(got!.x.length).toBe(want.x.length);
    expect({ x: got!.x, y: got!.y }).toEqual(want);

    // grown after the chunk: extended from the byte after the last line read, not a byte the decoding miscounted
    const more = [line(s + 50), line(s + 51)].join('\n') + '\n';
    fs.appendFileSync(file, more);
    const [grown] = metricColumns('accents', file, ['récompense·報酬'], 'step');
    expect({ x: grown!.x, y: grown!.y }).toEqual(parsedColumn(text + more, 'récompense·報酬', 'step'));
  });

  it("decimateColumns gives decimate()'s buckets, zoomed or not, with NaN and infinite values", () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const x: number[] = [];
    const y: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      x.push(i % 997 === 5 ? NaN : i * 1.5);
      y.push(i % 101 === 0 ? NaN : i % 313 === 0 ? Infinity : Math.sin(i / 50) + (rand() < 0.001 ? 40 : 0));
    }
    const points = x.map((xv, i) => ({ x: xv, y: y[i]! }));
    for (const width of [1, 7, 600, 19_999, 20_000, 30_000]) {
      for (const zoom of [{}, { xMin: 3000 }, { xMax: 9000.5 }, { xMin: 100, xMax: 150 }, { xMin: 5e9 }]) {
        expect(decimateColumns({ x, y }, width, zoom), `${width} ${JSON.stringify(zoom)}`).toEqual(
          decimate(points, width, zoom),
        );
      }
    }
  });
});
