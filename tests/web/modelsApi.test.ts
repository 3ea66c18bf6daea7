/**
 * The host's model methods (issue 33, item 1; engine/api/host/modelMethods.ts) through callApi, as a window calls them:
 * the list holds the catalogue's models and the shipped bases; a card carries `mars-lab model info`'s facts and memory
 * figures (compared with the command's JSON); a path a window adds must lie in the allowed folders and be a model, and
 * stays listed for the next host; ids the host did not list are refused; a fetch of a cached model reports its end to
 * every window; the lab's prompts for the chat playground come as a chat model receives them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent, ApiModelCard, ApiModelEntry } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';
import { cli } from '../helpers/cli';
import { artefactPath } from '../../engine/fetch/cache';
import { knownArtefact } from '../../engine/fetch/catalogue';

let home: string;
let outside: string;
let host: Host;
const events: ApiEvent[] = [];

const call = <T>(method: string, params: unknown = {}) => callApi(host.handlers, method, params) as Promise<T>;
const list = async () => (await call<{ models: ApiModelEntry[] }>('listModels')).models;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-models-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-models-outside-'));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  host.subscribe((e) => events.push(e));
});

afterAll(async () => {
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

describe('the models a window sees', () => {
  it('lists the catalogue models and the shipped bases', async () => {
    const models = await list();
    const ids = models.map((m) => m.id);
    expect(ids).toContain('fetch:smollm2-135m-instruct');
    expect(ids).toEqual(expect.arrayContaining(['base:mars/base-tiny', 'base:marti/base-tiny']));
    const smol = models.find((m) => m.id === 'fetch:smollm2-135m-instruct')!;
    expect(smol.bytes).toBe(98_362_432);
    expect(smol.fetched).toBe(smol.path !== null);
  });

  it("gives a base's card with model info's facts and memory figures", async () => {
    const card = await call<ApiModelCard>('modelCard', { id: 'base:marti/base-tiny' });
    const r = await cli(['model', 'info', 'resources/marti/base-tiny', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const info = JSON.parse(r.stdout) as ApiModelCard & { config: unknown };
    expect(card.format).toBe('mars-lab-checkpoint');
    expect([card.parameters, card.architecture, card.context, card.vocabulary]).toEqual([
      info.parameters,
      info.architecture,
      info.context,
      info.vocabulary,
    ]);
    expect(card.memory).toEqual(info.memory);
    expect(card).not.toHaveProperty('config');
  });

  const { path: MODEL } = realModelOrSkipReason();
  it.skipIf(!MODEL)(
    "gives the fetched SmolLM2's card: architecture, licence, template, LoRA below full training",
    async () => {
      const card = await call<ApiModelCard>('modelCard', { id: 'fetch:smollm2-135m-instruct', rows: 8, seq: 128 });
      expect(card.architecture).toBe('llama');
      expect(card.license).toBe('apache-2.0');
      expect(card.parameters).toBe(134_515_008);
      expect(card.chatTemplate?.roles).toEqual(expect.arrayContaining(['system', 'user', 'assistant']));
      expect(card.memory!.shape).toEqual({ sampleRows: 8, trainRows: 8, seq: 128, loraRank: 16 });
      expect(card.memory!.lora).toBeLessThan(card.memory!.full);
    },
  );

  it('adds a model folder inside the home, keeps it for the next host, and refuses what is outside or not a model', async () => {
    const inHome = path.join(home, 'models', 'my-base');
    fs.cpSync(path.resolve('resources/marti/base-tiny'), inHome, { recursive: true });
    const after = (await call<{ models: ApiModelEntry[] }>('addModel', { path: inHome })).models;
    const added = after.find((m) => m.kind === 'path')!;
    expect(added.id).toBe(`path:${fs.realpathSync(inHome)}`);
    const card = await call<ApiModelCard>('modelCard', { id: added.id });
    expect(card.parameters).toBe((await call<ApiModelCard>('modelCard', { id: 'base:marti/base-tiny' })).parameters);

    fs.cpSync(path.resolve('resources/marti/base-tiny'), path.join(outside, 'base'), { recursive: true });
    await expect(call('addModel', { path: path.join(outside, 'base') })).rejects.toThrow(
      /outside the folders a window may use/,
    );
    const empty = path.join(home, 'models', 'empty');
    fs.mkdirSync(empty);
    await expect(call('addModel', { path: empty })).rejects.toThrow(/neither a \.gguf file nor a model folder/);
    await expect(call('modelCard', { id: `path:${path.join(outside, 'base')}` })).rejects.toThrow(/not in the list/);

    const next = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    try {
      const ids = ((await callApi(next.handlers, 'listModels', {})) as { models: ApiModelEntry[] }).models.map(
        (m) => m.id,
      );
      expect(ids).toContain(added.id);
    } finally {
      await next.close();
    }
  });

  it('says in one line when <home>/models.json is damaged', async () => {
    const file = path.join(home, 'models.json');
    const kept = fs.readFileSync(file, 'utf8');
    try {
      fs.writeFileSync(file, '{"paths": [');
      await expect(list()).rejects.toThrow(/models\.json: not a list of model paths .*fix or remove it/);
    } finally {
      fs.writeFileSync(file, kept);
    }
  });

  it('refuses ids and names it does not know', async () => {
    await expect(call('modelCard', { id: 'fetch:no-such-model' })).rejects.toThrow(/no such model in the catalogue/);
    await expect(call('modelCard', { id: 'base:mars/../../etc' })).rejects.toThrow(/no such shipped base/);
    await expect(call('modelCard', { id: '/etc/passwd' })).rejects.toThrow(/a model id/);
    await expect(call('fetchModel', { name: 'humaneval' })).rejects.toThrow(/not a model the catalogue knows/);
  });

  it.skipIf(!MODEL)('fetching a model already in the cache reports its end to every window', async () => {
    events.length = 0;
    const models = (await call<{ models: ApiModelEntry[] }>('fetchModel', { name: 'smollm2-135m-instruct' })).models;
    expect(models.find((m) => m.id === 'fetch:smollm2-135m-instruct')!.fetched).toBe(true);
    const done = events.filter((e) => e.type === 'modelFetch' && e.phase === 'done');
    expect(done).toHaveLength(1);
  });

  it("gives the lab's prompts as a chat model receives them: MARS System 1 and 2, MARTI toy and Python", async () => {
    const { prompts } = await call<{ prompts: { id: string; label: string; system: string; user: string }[] }>(
      'labPrompts',
    );
    const by = Object.fromEntries(prompts.map((p) => [p.id, p]));
    expect(Object.keys(by)).toEqual(['mars-sys2', 'mars-sys1', 'marti-toy', 'marti-python']);
    expect(by['mars-sys2']!.system).toMatch(/<search>/);
    expect(by['mars-sys2']!.user).toMatch(/\?$/);
    // System 1 reads a purpose and its pages; its worked example is another question's
    expect(by['mars-sys1']!.user).toMatch(/^purpose: .+\npages:\n\[1\] /);
    expect(by['mars-sys1']!.system).not.toContain(by['mars-sys1']!.user);
    expect(by['marti-toy']!.user).toMatch(/program:$/);
    expect(by['marti-python']!.user).toMatch(/```python\n[\s\S]*def \w+\(/);
    const humaneval = artefactPath(knownArtefact('humaneval'));
    if (fs.existsSync(humaneval)) expect(by['marti-python']!.label).toContain('HumanEval/0');
  });

  it.skipIf(!MODEL)(
    "checks a real-model launch's memory from the model's header: a plan for the preset, an issue for a step too large",
    async () => {
      type Answer = {
        ok: boolean;
        memory?: { need: number; limit: number; what: string };
        issues?: { path: string; message: string }[];
      };
      const preset = await call<Answer>('validateConfig', { preset: 'chatgrpo-addition' });
      expect(preset.ok).toBe(true);
      expect(preset.memory!.need).toBeGreaterThan(134_515_008 * 4); // at least the weights as float32
      expect(preset.memory!.need).toBeLessThan(preset.memory!.limit);
      const huge = ['task.groupSize=256', 'task.promptsPerStep=8', 'task.maxNewTokens=4096', 'model.lora=null'];
      const big = await call<Answer>('validateConfig', { preset: 'chatgrpo-addition', sets: huge });
      if (big.memory!.need <= big.memory!.limit) return; // a machine that holds even this
      expect(big.ok).toBe(false);
      expect(big.issues).toEqual([
        { path: 'task.groupSize', message: expect.stringMatching(/need ≈ .* a step; this machine has/) },
      ]);
      const unknown = await call<Answer>('validateConfig', {
        preset: 'chatgrpo-addition',
        sets: ['model.path=no-such-model'],
      });
      expect(unknown.issues?.[0]?.path).toBe('model.path');
    },
  );
});
