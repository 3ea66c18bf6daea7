import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JsonlAppender, lastLineEnd, readJsonl, truncateTo } from '../../../engine/runs/folder/jsonl';
import { UserError } from '../../../engine/base/userError';

let dir: string;
let n = 0;
const fresh = () => path.join(dir, `log-${n++}.jsonl`);

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-jsonl-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

describe('JsonlAppender', () => {
  it('writes each record as one line in one write, and tracks the file size', () => {
    const file = fresh();
    const log = new JsonlAppender(file);
    const writes = vi.spyOn(fs, 'writeSync');
    log.append({ step: 1, text: 'a\nb "quoted"' });
    const end = log.append({ step: 2, loss: 0.5 });
    expect(writes).toHaveBeenCalledTimes(2);
    for (const call of writes.mock.calls) {
      const text = Buffer.from(call[1] as unknown as Uint8Array).toString('utf8');
      expect(text.endsWith('\n')).toBe(true);
      expect(text.slice(0, -1)).not.toContain('\n');
    }
    log.close();
    expect(end).toBe(fs.statSync(file).size);
    expect(log.byteLength).toBe(fs.statSync(file).size);
    expect(readJsonl(file).records).toEqual([
      { step: 1, text: 'a\nb "quoted"' },
      { step: 2, loss: 0.5 },
    ]);
  });

  it('continues an existing file, ending a torn last line first so the new record survives', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"step":1}\n{"step":2,"lo');
    const log = new JsonlAppender(file);
    expect(log.byteLength).toBe(fs.statSync(file).size);
    log.append({ step: 3 });
    log.close();
    const read = readJsonl(file);
    expect(read.records).toEqual([{ step: 1 }, { step: 3 }]);
    expect(read.warnings).toHaveLength(1);
    expect(read.warnings[0]).toContain(`${file}: line 2 is not valid JSON`);
  });
});

describe('readJsonl', () => {
  it('skips a torn last line with a warning on a final read, silently when tailing, and reads it once completed', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"step":1}\n{"step":2}\n{"step":3,"lo');
    const final = readJsonl(file);
    expect(final.records).toEqual([{ step: 1 }, { step: 2 }]);
    expect(final.warnings).toEqual([`${file}: skipped a torn last line (13 bytes), probably from a crash`]);

    const first = readJsonl(file, { tail: true });
    expect(first.records).toEqual([{ step: 1 }, { step: 2 }]);
    expect(first.warnings).toEqual([]);
    expect(first.partial).toBe(13);
    expect(first.end).toBe('{"step":1}\n{"step":2}\n'.length);

    fs.appendFileSync(file, 'ss":0.5}\n{"step":4}\n');
    const second = readJsonl(file, { from: first.end, firstLine: first.nextLine, tail: true });
    // Neither lost nor read twice.
    expect(second.records).toEqual([{ step: 3, loss: 0.5 }, { step: 4 }]);
    expect(second.end).toBe(fs.statSync(file).size);
    expect(second.nextLine).toBe(5);
    expect(second.partial).toBe(0);
  });

  it('skips a corrupt line in the middle, naming the file and line', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"step":1}\n\n{"step":2,,}\n{"step":3}\n');
    const read = readJsonl(file);
    expect(read.records).toEqual([{ step: 1 }, { step: 3 }]);
    expect(read.warnings).toHaveLength(1);
    expect(read.warnings[0]).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 3 is not valid JSON \\(.*\\); skipped it$`),
    );
  });

  it('names lines by number when tailing from a known line, by byte offset when the line number is unknown', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"a":1}\n{"a":2}\nnope\n');
    expect(readJsonl(file, { from: 16, firstLine: 3 }).warnings[0]).toContain('line 3 is not valid JSON');
    expect(readJsonl(file, { from: 16 }).warnings[0]).toContain('the line at byte 16 is not valid JSON');
  });

  it('rejects valid JSON that fails validation, with the reason', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"step":1}\n[1,2]\n');
    const read = readJsonl(file, { validate: (v) => (Array.isArray(v) ? 'is an array' : undefined) });
    expect(read.records).toEqual([{ step: 1 }]);
    expect(read.warnings).toEqual([`${file}: line 2 is an array; skipped it`]);
  });

  it('reads only the bytes after the offset when tailing', () => {
    const file = fresh();
    const big = { text: 'x'.repeat(10_000) };
    const log = new JsonlAppender(file);
    for (let i = 0; i < 100; i++) log.append({ i, ...big });
    const start = log.byteLength;
    log.append({ i: 100 });
    log.close();
    const reads = vi.spyOn(fs, 'readSync');
    const read = readJsonl(file, { from: start, tail: true });
    expect(read.records).toEqual([{ i: 100 }]);
    // readSync(fd, buffer, offset, length, position)
    const calls = reads.mock.calls as unknown as [number, Uint8Array, number, number, number][];
    const positions = calls.map((c) => c[4]);
    const lengths = calls.map((c) => c[3]);
    expect(Math.min(...positions)).toBe(start);
    expect(lengths.reduce((a, b) => a + b, 0)).toBe(fs.statSync(file).size - start);
  });

  it('reports a file shorter than the offset, and reads a missing file as empty', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"a":1}\n');
    expect(readJsonl(file, { from: 100 }).shrunk).toBe(true);
    expect(readJsonl(path.join(dir, 'absent.jsonl'))).toMatchObject({ records: [], end: 0, warnings: [] });
  });

  it('handles lines longer than its read buffer and multi-byte characters split across reads', () => {
    const file = fresh();
    const long = { s: 'é✓'.repeat(600_000) };
    fs.writeFileSync(file, JSON.stringify(long) + '\n{"b":2}\n');
    expect(readJsonl(file).records).toEqual([long, { b: 2 }]);
  });

  it('reads in slices of maxBytes that add up to the whole read, a line longer than a slice included', () => {
    const file = fresh();
    const records = Array.from({ length: 60_000 }, (_, i) => ({ i, pad: 'x'.repeat(i % 97) }));
    records.splice(12_345, 0, { i: -1, pad: 'y'.repeat(3 << 20) }); // longer than a slice: still read whole
    fs.writeFileSync(file, records.map((r) => JSON.stringify(r) + '\n').join('') + '{"torn":');
    const whole = readJsonl(file, { tail: true });
    const got: unknown[] = [];
    let at = { from: 0, firstLine: 1 as number | undefined };
    let slices = 0;
    for (;;) {
      const read = readJsonl(file, { ...at, tail: true, maxBytes: 1 << 20 });
      slices++;
      got.push(...read.records);
      at = { from: read.end, firstLine: read.nextLine };
      if (!read.more) {
        expect(read).toMatchObject({ end: whole.end, nextLine: whole.nextLine, partial: whole.partial });
        break;
      }
      expect(read.partial).toBe(0);
    }
    expect(slices).toBeGreaterThan(3);
    expect(got).toEqual(whole.records);
    expect(got).toEqual(records);
  });
});

describe('lastLineEnd and truncateTo', () => {
  it('finds the end of the last complete line', () => {
    const file = fresh();
    fs.writeFileSync(file, '{"a":1}\n{"a":2}\n{"a":');
    expect(lastLineEnd(file)).toBe(16);
    expect(lastLineEnd(path.join(dir, 'absent.jsonl'))).toBe(0);
  });

  it('cuts a log back to a line boundary, and refuses an offset that is not one', () => {
    const file = fresh();
    const log = new JsonlAppender(file);
    log.append({ step: 1 });
    const mark = log.append({ step: 2 });
    log.append({ step: 3 });
    log.close();
    expect(() => truncateTo(file, mark + 3)).toThrow(UserError);
    expect(() => truncateTo(file, 10_000)).toThrow(/shorter than the 10000 bytes recorded/);
    truncateTo(file, mark);
    expect(readJsonl(file).records).toEqual([{ step: 1 }, { step: 2 }]);
    const again = new JsonlAppender(file);
    expect(again.byteLength).toBe(mark);
    again.append({ step: 3 });
    again.close();
    expect(readJsonl(file).records).toEqual([{ step: 1 }, { step: 2 }, { step: 3 }]);
  });
});
