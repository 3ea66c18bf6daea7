/**
 * MARTI on a user's task file (task.file): the held-out problems come from the file, the evaluation identity carries
 * its hash (so the cache never serves another file's results), local and endpoint agents see the same problems, and
 * a bad file is one line naming the file, the line and the fix.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateWithEndpoints } from '../../../engine/runs/evaluation/evaluateEndpoints';
import { loadMartiTaskFile } from '../../../engine/marti/tasks/taskFile';
import { loadCheckpoint } from '../../../engine/model/formats/checkpoint';
import { loadTokenizer } from '../../../engine/model/tokenizers/tokenizer';
import { heldoutTasks } from '../../../engine/marti/problems';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { checkpointConfig, evaluateCheckpoint } from '../../../engine/runs/evaluation/evaluation';
import { startModelServer, type ModelServer } from '../../../engine/serveModel/server';
import { useBackend } from '../../helpers/backends';

const CK = path.resolve('resources/marti/base-tiny');
let dir: string;
let server: ModelServer;
let file: string;
let base: MartiConfig;
let sample: { statement: string; publicTests: unknown[]; privateTests: unknown[] };
let otherTarget: string;

beforeAll(async () => {
  await useBackend('wasm');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-taskfile-'));
  const ck = checkpointConfig(CK);
  if (ck.algorithm !== 'marti') throw new Error(`${CK}: expected a MARTI checkpoint, got ${ck.algorithm}`);
  base = {
    ...ck,
    eval: { ...ck.eval, items: 3, temperature: 0 },
    marti: { ...ck.marti, evalNodes: 3, evalSearchTemperature: 0, tplus: { ...ck.marti.tplus, enabled: false } },
  };
  // a user's file in the generated tasks' form: three problems of another seed, renamed
  const other = heldoutTasks(parseRunConfig({ ...base, task: { ...base.task, taskSeed: 77 } }) as MartiConfig);
  sample = { statement: other[0]!.statement, publicTests: other[0]!.publicTests, privateTests: other[0]!.privateTests };
  otherTarget = other[1]!.target; // another problem's program: fails this one's tests
  file = path.join(dir, 'tasks.jsonl');
  fs.writeFileSync(
    file,
    other
      .map((t, i) =>
        JSON.stringify({
          id: `mine-${i}`,
          statement: t.statement,
          publicTests: t.publicTests,
          privateTests: t.privateTests,
          target: t.target,
        }),
      )
      .join('\n') + '\n',
  );
  const { model } = await loadCheckpoint(CK);
  server = await startModelServer({
    model,
    tokenizer: await loadTokenizer(path.join(CK, 'tokenizer.json')),
    modelName: 'tiny',
    port: 0,
  });
}, 120_000);
afterAll(async () => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('task.file', () => {
  it('evaluates the file’s problems, in-process and through an endpoint alike', async () => {
    const cfg = parseRunConfig({ ...base, task: { ...base.task, file } });
    const local = await evaluateCheckpoint(dir, CK, cfg);
    expect(local.items.map((i) => i.id)).toEqual(['mine-0', 'mine-1', 'mine-2']);
    expect(local.identity.taskFile).toBe(loadMartiTaskFile(file).sha);
    const generated = await evaluateCheckpoint(dir, CK, parseRunConfig(base));
    expect(generated.cached).toBe(false); // another identity, not the task file's cached results
    const c = JSON.parse(JSON.stringify(cfg));
    c.marti.agents.forEach(
      (a: Record<string, unknown>) =>
        (a.policy = { kind: 'endpoint', baseUrl: server.baseUrl, model: 'tiny', apiKeyEnv: 'TF_KEY' }),
    );
    const via = await evaluateWithEndpoints(dir, parseRunConfig(c), { env: { TF_KEY: server.token } });
    expect(via.items.map((i) => [i.id, i.correct, i.output])).toEqual(
      local.items.map((i) => [i.id, i.correct, i.output]),
    );
  });

  it('a bad file is one line naming the file, the line and the fix', () => {
    const bad = (name: string, lines: unknown[]): string => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
      try {
        loadMartiTaskFile(f);
      } catch (err) {
        expect((err as Error).message).not.toContain('\n');
        return (err as Error).message;
      }
      throw new Error('expected a failure');
    };
    const ok = { id: 'a', ...sample };
    expect(bad('json.jsonl', [ok, '{"id": '])).toMatch(
      /json\.jsonl:2: not a JSON object; a task file holds one task a line$/,
    );
    expect(bad('word.jsonl', [{ ...ok, statement: `${ok.statement} zorblax` }])).toMatch(
      /word\.jsonl:1: statement: the word "zorblax" is not in MARTI's vocabulary/,
    );
    expect(bad('field.jsonl', [{ ...ok, publicTests: [] }])).toMatch(/field\.jsonl:1: publicTests: /);
    expect(bad('dup.jsonl', [ok, ok])).toMatch(/dup\.jsonl:2: id "a" repeats an earlier task's/);
    expect(bad('target.jsonl', [{ ...ok, target: otherTarget }])).toMatch(
      /target\.jsonl:1: target fails test \d+: fix the test's expected value or the target$/,
    );
    expect(bad('empty.jsonl', [''])).toMatch(/no tasks/);
    expect(() => loadMartiTaskFile(path.join(dir, 'missing.jsonl'))).toThrow(
      /task\.file .*missing\.jsonl: cannot read it \(ENOENT\)/,
    );
  });
});
