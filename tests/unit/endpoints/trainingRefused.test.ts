/** Endpoint policies (and MARS's oracle System 1) are for evaluation: a training run that names one is refused in one line, before a run folder exists. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { startRun } from '../../../engine/runs/runLoop';
import { UserError } from '../../../engine/base/userError';

describe('training with endpoint policies', () => {
  it('is refused before a run folder is made', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-train-endpoint-'));
    const endpoint = { kind: 'endpoint', baseUrl: 'http://127.0.0.1:8000/v1', model: 'qwen' };
    const marti = parseRunConfig({
      algorithm: 'marti',
      marti: { agents: [{ id: 'alpha', policy: endpoint }, { id: 'beta' }] },
    });
    const err = await startRun(home, marti).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toBe(
      "MARTI agent alpha: endpoint policies are for evaluation (mars-lab eval); training uses the run's own models: remove marti.agents[].policy from the run config",
    );
    const mars = parseRunConfig({ algorithm: 'mars', mars: { policies: { sys2: endpoint, sys1: { kind: 'model' } } } });
    await expect(startRun(home, mars)).rejects.toThrow(/^MARS System 2: endpoint policies are for evaluation/);
    // MARS's oracle System 1 (the gold support sentences) is an evaluation arm, never a training run (issue 32)
    const oracle = parseRunConfig({ algorithm: 'mars', mars: { sys1Params: 'oracle' } });
    await expect(startRun(home, oracle)).rejects.toThrow(/^mars\.sys1Params: oracle is for evaluation only/);
    expect(fs.readdirSync(home)).toEqual([]);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
