/**
 * The host's index of trajectories.jsonl (engine/runs/trajectories/trajectoryIndex.ts) and the queries over it (trajectoryQuery.ts):
 * byte offsets and steps per line, growth scanned incrementally, a torn last line left out until it is finished, a
 * cut or replaced file indexed again; a step opened directly; filters by step range, reward, family, agent, outcome,
 * malformed and text, newest first with a continuation.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  linesOfStep,
  readTrajectoryLines,
  stepOfLine,
  updateTrajectoryIndex,
} from '../../../engine/runs/trajectories/trajectoryIndex';
import {
  filterTrajectories,
  queryTrajectories,
  trajectoryFacts,
} from '../../../engine/runs/trajectories/trajectoryQuery';
import { marsPagesOf } from '../../../engine/runs/trajectories/trajectoryPages';

const fixture = (name: string): Record<string, unknown>[] =>
  fs
    .readFileSync(path.resolve('tests/fixtures', name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const episodes = fixture('mars-episodes.jsonl');
const trees = fixture('marti-trees.jsonl');

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'traj-index-'));
  file = path.join(dir, 'trajectories.jsonl');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const line = (r: unknown): string => `${JSON.stringify(r)}\n`;

describe('trajectory index', () => {
  it('records each complete line’s byte range and step', () => {
    const lines = [
      line({ step: 1, kind: 'x', a: 'é' }),
      line({ step: 1, kind: 'x' }),
      line({ kind: 'y', step: 3 }),
      'not json\n',
      line({ step: 7 }),
    ];
    fs.writeFileSync(file, lines.join(''));
    const index = updateTrajectoryIndex(file);
    let at = 0;
    const starts: number[] = [];
    const ends: number[] = [];
    for (const l of lines) {
      starts.push(at);
      ends.push(at + Buffer.byteLength(l) - 1);
      at += Buffer.byteLength(l);
    }
    expect(index.starts).toEqual(starts);
    expect(index.ends).toEqual(ends);
    // the step from the prefix, from a parse when the step is not first, -1 for a line that is not JSON
    expect(index.steps).toEqual([1, 1, 3, -1, 7]);
    expect(readTrajectoryLines(index, [2, 3])).toEqual([
      { kind: 'y', step: 3 },
      { unreadable: true, line: 4 },
    ]);
  });

  it('finds lines longer than its read chunk, with their step', () => {
    const long = { step: 4, kind: 'mars.episode', text: 'w'.repeat(3 << 20) };
    const late = { kind: 'late', pad: 'v'.repeat(2 << 20), step: 5 };
    fs.writeFileSync(file, line({ step: 3 }) + line(long) + line(late) + line({ step: 6 }));
    const index = updateTrajectoryIndex(file);
    expect(index.steps).toEqual([3, 4, 5, 6]);
    expect((readTrajectoryLines(index, [1])[0] as { text: string }).text.length).toBe(3 << 20);
  });

  it('extends itself with appended lines, scanning only the new bytes, and skips a torn last line until it ends', () => {
    fs.writeFileSync(file, line({ step: 1 }) + line({ step: 1 }));
    const first = updateTrajectoryIndex(file);
    expect(first.starts.length).toBe(2);
    const torn = line({ step: 2, kind: 'mars.episode' });
    fs.appendFileSync(file, torn.slice(0, 10));
    const second = updateTrajectoryIndex(file, first);
    expect(second).toBe(first);
    expect(second.starts.length).toBe(2);
    expect(second.scanned).toBe(Buffer.byteLength(line({ step: 1 })) * 2);
    fs.appendFileSync(file, torn.slice(10) + line({ step: 3 }));
    const third = updateTrajectoryIndex(file, second);
    expect(third.steps).toEqual([1, 1, 2, 3]);
    expect(readTrajectoryLines(third, [2])).toEqual([{ step: 2, kind: 'mars.episode' }]);
  });

  it('indexes a file again when it was cut back, replaced, or rewritten past its old end', () => {
    fs.writeFileSync(file, line({ step: 1 }) + line({ step: 2 }) + line({ step: 3 }));
    const index = updateTrajectoryIndex(file);
    // cut back (a resume to step 1)
    fs.truncateSync(file, Buffer.byteLength(line({ step: 1 })));
    expect(updateTrajectoryIndex(file, index).steps).toEqual([1]);
    // replaced by another file
    const again = updateTrajectoryIndex(file);
    const other = path.join(dir, 'other.jsonl');
    fs.writeFileSync(other, line({ step: 9 }) + line({ step: 10 }));
    fs.renameSync(other, file);
    expect(updateTrajectoryIndex(file, again).steps).toEqual([9, 10]);
    // cut and rewritten longer than before between two looks: the indexed end is no longer a line end
    const before = updateTrajectoryIndex(file);
    fs.writeFileSync(file, line({ step: 9, pad: 'xxxxxxxx' }) + line({ step: 11 }) + line({ step: 12 }));
    expect(updateTrajectoryIndex(file, before).steps).toEqual([9, 11, 12]);
  });

  it('a missing file is an empty index', () => {
    expect(updateTrajectoryIndex(file).starts).toEqual([]);
    expect(stepOfLine('{"kind":"a","step":4}')).toBe(4);
  });
});

describe('trajectory queries', () => {
  const write = (records: unknown[]): ReturnType<typeof updateTrajectoryIndex> => {
    fs.writeFileSync(file, records.map(line).join(''));
    return updateTrajectoryIndex(file);
  };

  it('opens a step directly: its lines, or the next step’s when it has none', () => {
    const records = Array.from({ length: 40 }, (_, i) => ({ step: 1 + Math.floor(i / 4), kind: 'x', i }));
    const index = write(records);
    expect(linesOfStep(index, 5)).toEqual({ step: 5, first: 16, end: 20 });
    const a = queryTrajectories(index, { offset: 0, limit: 100, step: 5 });
    expect(a.records.map((r) => (r as { i: number }).i)).toEqual([16, 17, 18, 19]);
    expect(a.offset).toBe(16);
    expect(a.stepEnd).toBe(20);
    expect(a.steps).toEqual({ first: 1, last: 10, count: 10 });
    expect(index.ordered).toBe(true);
    // a file whose steps go back (lines copied in by hand) is searched line by line, with the same answers
    const unordered = write([{ step: 1 }, { step: 3 }, { step: 2 }, { step: 2 }, { step: 5 }]);
    expect(unordered.ordered).toBe(false);
    expect(linesOfStep(unordered, 2)).toEqual({ step: 2, first: 2, end: 4 });
    expect(linesOfStep(unordered, 3)).toEqual({ step: 3, first: 1, end: 2 });
    expect(linesOfStep(unordered, 4)).toEqual({ step: 5, first: 4, end: 5 });
    expect(linesOfStep(unordered, 6)).toBeNull();
    const limited = queryTrajectories(write(records), { offset: 0, limit: 2, step: 5 });
    expect(limited.records.length).toBe(2);
    expect(limited.stepEnd).toBe(20);
    expect(queryTrajectories(index, { offset: 0, limit: 10, step: 99 })).toMatchObject({ step: null, records: [] });
  });

  it('filters by step range, reward, family, outcome, malformed, agent and text; newest first with a continuation', () => {
    const index = write([...episodes, ...trees]);
    const all = [...episodes, ...trees];
    const ids = (rs: unknown[]): string[] =>
      rs.map((r) =>
        String((r as { questionId?: string; treeId?: string }).questionId ?? (r as { treeId: string }).treeId),
      );
    const q = (filter: Parameters<typeof filterTrajectories>[1], limit = 100) =>
      filterTrajectories(index, filter, index.starts.length, limit);
    expect(q({ stepMin: 2, stepMax: 2 }).records.every((r) => (r as { step: number }).step === 2)).toBe(true);
    expect(q({ stepMin: 2, stepMax: 2 }).records.length).toBe(all.filter((r) => r['step'] === 2).length);
    const solved = q({ outcome: 'solved' });
    expect(solved.records.length).toBe(all.filter((r) => trajectoryFacts(r)!.solved).length);
    expect(solved.records.length).toBeGreaterThan(0);
    expect(solved.records.length).toBeLessThan(all.length);
    expect(q({ family: 'direct' }).records.length).toBe(episodes.filter((e) => e['family'] === 'direct').length);
    expect(q({ rewardMin: 1 }).records.length).toBe(all.filter((r) => (trajectoryFacts(r)!.reward ?? -1) >= 1).length);
    expect(q({ agent: 'alpha' }).records.length).toBe(trees.length);
    expect(q({ agent: 'nobody' }).records.length).toBe(0);
    expect(ids(q({ malformed: true }).records).length).toBe(all.filter((r) => trajectoryFacts(r)!.malformed).length);
    expect(q({ malformed: true }).records.length).toBeLessThan(all.length);
    expect(ids(q({ text: 'DOHOSTO' }).records)).toEqual(
      ids(
        episodes.filter(
          (e) => JSON.stringify(e).includes('dohosto') && e['questionId'] === 'w2673879438:paraphrase-006',
        ),
      ),
    );
    // two at a time, newest first: the first page is the newest two matches, `next` continues before them
    const p1 = q({ stepMin: 1, stepMax: 1 }, 2);
    const step1 = all
      .map((r, i) => ({ r, i }))
      .filter((x) => x.r['step'] === 1)
      .map((x) => x.i);
    expect(p1.positions).toEqual(step1.slice(-2));
    const p2 = filterTrajectories(index, { stepMin: 1, stepMax: 1 }, p1.next!, 2);
    expect(p2.positions).toEqual(step1.slice(-4, -2));
    const rest = filterTrajectories(index, { stepMin: 1, stepMax: 1 }, p2.next!, 100);
    expect(rest.next).toBeNull();
    expect([...rest.positions, ...p2.positions, ...p1.positions]).toEqual(step1);
  });

  it('a byte budget stops a search early and says where to continue', () => {
    const index = write(
      Array.from({ length: 50 }, (_, i) => ({
        step: i,
        kind: 'mars.episode',
        questionId: `q${i}`,
        turns: [],
        reward: 0,
      })),
    );
    const page = filterTrajectories(index, { text: 'no such text' }, index.starts.length, 10, 200);
    expect(page.records).toEqual([]);
    expect(page.next).not.toBeNull();
    expect(page.next!).toBeGreaterThan(0);
    expect(page.scanned).toBeLessThan(50);
  });

  it('the pages MARS episodes found come with their text, from their world', () => {
    const config = JSON.parse(
      fs.readFileSync(path.resolve('tests/fixtures/mars-episodes.config.json'), 'utf8'),
    ) as unknown;
    const pages = marsPagesOf(episodes, config);
    const first = episodes[0] as { questionId: string; turns: { results: { id: string; length: number }[] }[] };
    const found = first.turns[0]!.results[0]!;
    const page = pages[`w${first.questionId.split(':')[0]!.slice(1)}:${found.id}`]!;
    expect(page).toBeDefined();
    // the same page the trainer packed: as many words as the episode recorded
    expect(page.text.split(' ').length).toBe(found.length);
    expect(marsPagesOf(trees, {})).toEqual({});
  });
});
