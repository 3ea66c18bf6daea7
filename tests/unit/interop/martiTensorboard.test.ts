/**
 * `import marti` with MARTI's TensorBoard logs (engine/interop/import/tfevents.ts): event files written in the real
 * format by tensorboard's own EventFileWriter, as torch's SummaryWriter in MARTI's trainers writes them
 * (tests/fixtures/interop/marti-tensorboard/make_tfevents.py), become metrics.jsonl rows by global step next to the
 * trees' rows; the per-agent copies on another step axis and text summaries stay out; a damaged file (a record whose
 * checksum fails, a file cut inside a record) is one warning per record, naming it, and the rest is imported.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importMarti } from '../../../engine/interop/import/marti';
import { crc32c, float32Decimal } from '../../../engine/interop/import/tfevents';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import { readRunMeta } from '../../../engine/runs/folder/runFolder';
import { UserError } from '../../../engine/base/userError';
import { martiCodePrompt, writeMartiCall } from './trainerFormats';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/interop/marti-tensorboard');
const RUN = 'group_norm-Qwen3-8B-CODE-multi_agent_mcts';
const EVENTS = 'events.out.tfevents.1775044800.fixture.4242.0';

let tmp: string;
let home: string;
let save: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-marti-tb-'));
  home = path.join(tmp, 'home');
  save = path.join(tmp, 'outputs', 'workflow');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

type Row = Record<string, number | null>;

function oneSearch(): void {
  writeMartiCall(save, 0, {
    agentId: '0',
    messages: martiCodePrompt('Add one to x.'),
    actionText: 'Here.\n```python\ndef f(x):\n    return x + 1\n```',
    actionTokens: [1, 2],
    actionLogProbs: [-0.1, -0.2],
    stamp: '20260401_120001_100',
  });
}

describe('import marti: TensorBoard metrics', () => {
  it('reads the scalars by global step into metrics.jsonl beside the trees', async () => {
    oneSearch();
    fs.cpSync(path.join(FIXTURES, RUN), path.join(save, 'tensorboard', RUN), { recursive: true });
    const r = await importMarti({ home, dir: save });
    expect(r.warnings).toEqual([]);
    expect(r.records).toBe(1);
    expect(r.steps).toBe(3);
    const rows = readJsonl<Row>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(rows.map((x) => x.step)).toEqual([1, 2, 3]);
    // step 1: the tree's row and MARTI's scalars of global step 1 (float32 values as written: 0.2, 0.51)
    expect(rows[0]).toMatchObject({
      step: 1,
      trees: 1,
      nodes: 1,
      'train/agent_0/reward': 0.2,
      'train/agent_1/reward': 0.25,
      'train/agent_0/policy_loss': 0.5,
      'train/agent_1/policy_loss': 0.51,
      'train/agent_0/kl': 0.001,
    });
    // steps without trees: the scalars alone, timed by their events; eval at step 2, also as TF 2 writes a scalar
    expect(rows[1]).toEqual({
      step: 2,
      time: 1775044809,
      'train/agent_0/policy_loss': 0.25,
      'train/agent_0/reward': 0.4,
      'train/agent_0/kl': 0.002,
      'train/agent_1/policy_loss': 0.26,
      'train/agent_1/reward': 0.45,
      'train/agent_1/kl': 0.002,
      'eval/pass1': 0.5,
      'eval/pass1_tf2': 0.5,
    });
    expect(Object.keys(rows[2]!).sort()).toEqual(
      [
        'step',
        'time',
        ...['agent_0', 'agent_1'].flatMap((a) => ['policy_loss', 'reward', 'kl'].map((k) => `train/${a}/${k}`)),
      ].sort(),
    );
    const meta = readRunMeta(r.dir) as unknown as { imported: Record<string, unknown> };
    expect(meta.imported.tensorboard).toMatchObject({
      files: [`tensorboard/${RUN}/${EVENTS}`],
      scalars: 20,
      leftOut: "6 tags on each agent's own step axis (agent_<i>_step/…), not the run's steps",
    });
  });

  it('names each damaged record and imports the rest (--metrics outside DIR)', async () => {
    oneSearch();
    const r = await importMarti({ home, dir: save, metricsFile: path.join(FIXTURES, 'damaged', RUN) });
    const name = path.relative(save, path.join(FIXTURES, 'damaged', RUN, EVENTS));
    expect(r.warnings).toEqual([
      `${name}: record 4 (byte 219): its data's checksum does not match; record skipped`,
      `${name}: record 46 (byte 3246): cut short (the file ends inside it); skipped`,
    ]);
    expect(r.skipped).toBe(2);
    const rows = readJsonl<Row>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(rows.map((x) => x.step)).toEqual([1, 2, 3]);
    // record 4 was step 1's train/agent_0/reward: only that value is missing
    expect(rows[0]).not.toHaveProperty('train/agent_0/reward');
    expect(rows[0]).toMatchObject({ 'train/agent_0/policy_loss': 0.5, 'train/agent_1/reward': 0.25 });
    expect(rows[2]).toMatchObject({ 'train/agent_0/reward': 0.6, 'train/agent_1/kl': 0.003 });
  });

  it('imports the metrics alone from a TensorBoard folder, and says when --metrics is wrong', async () => {
    const r = await importMarti({ home, dir: path.join(FIXTURES, RUN) });
    expect(r).toMatchObject({ records: 0, steps: 3, warnings: [] });
    expect(readJsonl<Row>(path.join(r.dir, 'metrics.jsonl')).records).toHaveLength(3);
    oneSearch();
    const err = await importMarti({ home, dir: save, metricsFile: path.join(tmp, 'nope') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/^import marti: --metrics .*nope does not exist: give MARTI's TensorBoard/);
  });

  it('checks records with CRC-32C and keeps float32 values as written', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283); // the CRC-32C check value
    expect(float32Decimal(Math.fround(0.2))).toBe(0.2);
    expect(float32Decimal(Math.fround(1 / 3))).toBe(0.33333334);
  });
});
