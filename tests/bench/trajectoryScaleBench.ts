/**
 * Trajectories at scale (issue 19 "Scale"): figures, never test assertions. Writes a run whose trajectories.jsonl is
 * about `--gb` gigabytes (the recorded fixtures' records repeated with rising steps: MARS episodes, or MARTI trees with
 * `--kind marti`), then times the host's getTrajectories through the contract's validation as a window calls it:
 *
 * - the first open of a step (the index is built then: a streaming scan of the whole file), of an early and a late step;
 * - later opens of random steps (the index only checks for growth), and the newest page;
 * - an append of one step and the open of it (the index scans only the new bytes);
 * - a filtered search (outcome + text over all steps: one request's byte budget) and its continuation;
 * - the host's memory (RSS, heap) before and after, and the index's size.
 *
 *   npx tsx tests/bench/trajectoryScaleBench.ts [--gb 1] [--kind mars|marti] [--keep] [--json out.json]
 *
 * The file is written once to a temporary home (its path is printed) and removed unless --keep.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { quantile } from './stats';

const { values } = parseArgs({
  options: {
    gb: { type: 'string', default: '1' },
    kind: { type: 'string', default: 'mars' },
    keep: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const gb = Number(values.gb);
const kind = values.kind === 'marti' ? 'marti' : 'mars';

const fixture = (name: string): Record<string, unknown>[] =>
  fs
    .readFileSync(path.resolve('tests/fixtures', name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const records = kind === 'mars' ? fixture('mars-episodes.jsonl') : fixture('marti-trees.jsonl');
const config =
  kind === 'mars'
    ? (JSON.parse(fs.readFileSync(path.resolve('tests/fixtures/mars-episodes.config.json'), 'utf8')) as Record<
        string,
        unknown
      >)
    : {};

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('the bench launches nothing');
  },
};

const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);
const memory = (): { rssMB: number; heapMB: number } => {
  const m = process.memoryUsage();
  return { rssMB: mb(m.rss), heapMB: mb(m.heapUsed) };
};

/** One step's lines (the fixture's records, their step replaced). */
const stepLines = (step: number): string => records.map((r) => `${JSON.stringify({ ...r, step })}\n`).join('');

async function main(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-trajbench-'));
  const run = createRunFolder(home, { algorithm: kind, config, engineVersion: '0', seed: 0, tags: [], notes: '' });
  const file = path.join(run.dir, 'trajectories.jsonl');
  const target = gb * 2 ** 30;
  const t0 = performance.now();
  const fd = fs.openSync(file, 'w');
  let size = 0;
  let steps = 0;
  // one step's text, re-stamped per step: building 1 GB of JSON from objects would take minutes
  const template = stepLines(0);
  const parts = template.split('{"step":0,');
  while (size < target) {
    steps++;
    const text = parts.join(`{"step":${steps},`);
    fs.writeSync(fd, text);
    size += Buffer.byteLength(text);
  }
  fs.closeSync(fd);
  const writeS = (performance.now() - t0) / 1000;
  console.log(
    `wrote ${file}: ${mb(size)} MB, ${steps} steps × ${records.length} ${kind} records (${Math.round(size / steps / records.length)} bytes a line) in ${writeS.toFixed(1)} s`,
  );

  const host = await createHost({ home, launcher: noLaunches, transport: 'web' });
  const memBefore = memory();
  const call = async (
    request: Record<string, unknown>,
  ): Promise<{ ms: number; answer: { records: unknown[]; total: number; next?: number | null; scanned?: number } }> => {
    const t = performance.now();
    const answer = (await callApi(host.handlers, 'getTrajectories', { runId: run.id, ...request })) as {
      records: unknown[];
      total: number;
      next?: number | null;
      scanned?: number;
    };
    return { ms: performance.now() - t, answer };
  };

  const first = await call({ step: 1, limit: 500 });
  const memAfterIndex = memory();
  const lateFirst = await call({ step: steps - 1, limit: 500 });
  const later: number[] = [];
  for (let i = 0; i < 50; i++) {
    const step = 1 + Math.floor((((i * 7919) % 1000) / 1000) * steps);
    const r = await call({ step, limit: 500 });
    if (r.answer.records.length !== records.length) {
      throw new Error(`step ${step}: ${r.answer.records.length} records, expected ${records.length}`);
    }
    later.push(r.ms);
  }
  const newest = await call({ offset: Math.max(0, first.answer.total - 256), limit: 256 });
  fs.appendFileSync(file, stepLines(steps + 1));
  const appended = await call({ step: steps + 1, limit: 500 });
  const search = await call({ filter: { outcome: 'solved', text: kind === 'mars' ? 'dohosto' : 'even' }, limit: 200 });
  const searchMore =
    search.answer.next !== null && search.answer.next !== undefined
      ? await call({
          filter: { outcome: 'solved', text: kind === 'mars' ? 'dohosto' : 'even' },
          limit: 200,
          before: search.answer.next,
        })
      : null;
  const memEnd = memory();
  await host.close();

  const result = {
    kind,
    fileMB: mb(size),
    lines: first.answer.total,
    steps,
    firstOpenMs: Math.round(first.ms),
    firstOpenOfLateStepMs: Math.round(lateFirst.ms),
    laterOpenMs: {
      median: Number(quantile(later, 0.5).toFixed(1)),
      p99: Number(quantile(later, 0.99).toFixed(1)),
      max: Number(Math.max(...later).toFixed(1)),
    },
    newestPageMs: Math.round(newest.ms),
    openAfterAppendMs: Number(appended.ms.toFixed(1)),
    searchMs: Math.round(search.ms),
    searchMatches: search.answer.records.length,
    searchLinesLookedAt: search.answer.scanned,
    searchContinuationMs: searchMore ? Math.round(searchMore.ms) : null,
    memory: { before: memBefore, afterIndex: memAfterIndex, end: memEnd },
    machine: `${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}, node ${process.version}`,
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(result, null, 2));
  if (values.keep) console.log(`kept ${home}`);
  else fs.rmSync(home, { recursive: true, force: true });
}

await main();
