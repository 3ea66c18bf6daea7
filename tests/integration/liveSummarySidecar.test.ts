/**
 * A live run keeps its metrics summary sidecar (engine/runs/summary/summarySidecar.ts) as it writes: a cold listing during
 * the run shows every line on disk, the sidecar covers at least every checkpointed step, a listing never rewrites the
 * sidecar of a run whose writer is alive, and when the run ends its sidecar covers the whole log.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { INDEX_FILE, RUN_FILES } from '../../engine/runs/folder/home';
import { openRunIndex } from '../../engine/runs/summary/runIndex';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { readSummarySidecar, SUMMARY_SIDECAR, SummaryKeeper } from '../../engine/runs/summary/summarySidecar';
import { useBackend } from '../helpers/backends';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-live-sidecar-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const linesOf = (file: string) => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;

function coldListing(): ReturnType<ReturnType<typeof openRunIndex>['list']> {
  fs.rmSync(path.join(home, INDEX_FILE), { force: true });
  return openRunIndex(home).list();
}

describe('a live run and its summary sidecar', () => {
  it('a cold listing at every step shows all its lines; the sidecar covers every checkpoint; at the end, the whole log', async () => {
    const config = parseRunConfig(quickConfig({ steps: 12, checkpointEvery: 4, evalEvery: 6 }));
    const seen: { step: number; listed: number | null; lines: number; sidecarLines: number | null }[] = [];
    let dir = '';
    let brokenAtStep6 = '';
    const outcome = await startRun(home, config, {
      onCreated: (r) => (dir = r.dir),
      onProgress: (p) => {
        const file = path.join(dir, RUN_FILES.metrics);
        if (p.step === 6) {
          brokenAtStep6 = '{"version":1,"end":';
          fs.writeFileSync(path.join(dir, SUMMARY_SIDECAR), brokenAtStep6);
        }
        const [run] = coldListing();
        const sidecar = readSummarySidecar(dir);
        seen.push({
          step: p.step,
          listed: run!.steps,
          lines: linesOf(file),
          sidecarLines: 'cover' in sidecar ? sidecar.cover.lines : null,
        });
        if (p.step === 6) {
          // The writer (this process) holds the lock: the listing read the log instead and left the sidecar to it.
          expect(fs.readFileSync(path.join(dir, SUMMARY_SIDECAR), 'utf8')).toBe(brokenAtStep6);
          expect(run!.metrics.reward).toBeDefined();
        }
      },
    });
    expect(outcome.status).toBe('finished');
    for (const s of seen) {
      expect(s.listed).toBe(s.step);
      expect(s.lines).toBe(s.step);
      // broken at step 6 (above), until the writer's next checkpoint (step 8) writes it again
      if (s.step >= 6 && s.step <= 8) continue;
      // written at the first step, and at each checkpoint since (the checkpoint of step k comes after its progress)
      expect(s.sidecarLines).not.toBeNull();
      expect(s.sidecarLines!).toBeLessThanOrEqual(s.step);
      expect(s.sidecarLines!).toBeGreaterThanOrEqual(Math.max(1, Math.floor((s.step - 1) / 4) * 4));
    }
    const file = path.join(dir, RUN_FILES.metrics);
    const end = readSummarySidecar(dir);
    expect('cover' in end && end.cover.end).toBe(fs.statSync(file).size);
    expect('cover' in end && end.cover.lines).toBe(12);
    const [run] = coldListing();
    expect(run).toMatchObject({ status: 'finished', steps: 12 });
  });

  it('a resume that cuts the log back leaves no sidecar that shows the dropped lines', async () => {
    const config = parseRunConfig(quickConfig({ steps: 8, checkpointEvery: 3, evalEvery: 0 }));
    const part = await startRun(home, config, { stopAfterStep: 4 });
    const file = path.join(part.dir, RUN_FILES.metrics);
    // The stop checkpointed step 4; pretend a crash after step 5: its line on disk and in the sidecar, then resume
    // from the checkpoint of step 4 (it cuts the log back to step 4 and writes step 5 again).
    fs.appendFileSync(file, JSON.stringify({ step: 5, time: 0, reward: 9, loss: 9 }) + '\n');
    new SummaryKeeper(part.dir).flush(); // as the writer's flush after step 5 would have
    const before = readSummarySidecar(part.dir);
    expect('cover' in before && before.cover.lines).toBe(5);
    let during: number | null | undefined;
    await resumeRun(part.dir, {
      onProgress: (p) => {
        if (p.step !== 5) return;
        const run = coldListing().find((r) => r.id === part.runId)!;
        during = run.metrics.reward?.max;
      },
    });
    // step 5's value 9 was dropped by the resume: no listing shows it, during the resume or after
    expect(during).not.toBe(9);
    const after = coldListing().find((r) => r.id === part.runId)!;
    expect(after.steps).toBe(8);
    expect(after.metrics.reward!.max).not.toBe(9);
  });
});
