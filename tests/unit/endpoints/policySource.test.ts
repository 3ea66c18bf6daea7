/**
 * Policy sources in configs (zod) and the request journal: a key can only be named by an environment variable, a
 * source's identity carries nothing secret, and the journal replays answers by what was asked, in asking order,
 * ignoring a torn last line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestJournal } from '../../../engine/policy/journal';
import { policySourceSchema, sourceIdentity } from '../../../engine/policy/policySource';
import { marsConfigSchema } from '../../../engine/mars/configSchema';

const ok = { kind: 'endpoint', baseUrl: 'http://127.0.0.1:8000/v1', model: 'qwen' };

describe('policy sources', () => {
  it('defaults, and refuses a key written where its variable name belongs', () => {
    expect(policySourceSchema.parse({ kind: 'model' })).toEqual({ kind: 'model' });
    expect(policySourceSchema.parse(ok)).toMatchObject({
      concurrency: 8,
      timeoutMs: 120_000,
      maxRetries: 4,
      stream: false,
      sampling: {},
    });
    expect(policySourceSchema.safeParse({ ...ok, apiKeyEnv: 'sk-proj-abc123' }).error?.issues[0]?.message).toMatch(
      /name of an environment variable/,
    );
    expect(policySourceSchema.safeParse({ ...ok, apiKey: 'sk-abc' }).success).toBe(false);
    expect(policySourceSchema.safeParse({ ...ok, baseUrl: 'ftp://x' }).success).toBe(false);
    expect(policySourceSchema.safeParse({ ...ok, concurrency: 0 }).success).toBe(false);
  });

  it("a source's identity names the server, model and sampling, never the key variable's value", () => {
    const s = policySourceSchema.parse({ ...ok, apiKeyEnv: 'VLLM_KEY', sampling: { temperature: 0 } });
    expect(JSON.parse(sourceIdentity(s))).toEqual({ baseUrl: ok.baseUrl, model: 'qwen', sampling: { temperature: 0 } });
  });

  it('MARS configs take a source per system', () => {
    const cfg = marsConfigSchema.parse({ algorithm: 'mars', mars: { policies: { sys2: ok } } });
    expect(cfg.mars.policies?.sys2).toMatchObject({ kind: 'endpoint', model: 'qwen' });
    expect(marsConfigSchema.parse({ algorithm: 'mars' }).mars.policies).toBeUndefined();
  });
});

describe('request journal', () => {
  it('replays by request and occurrence, survives a torn last line', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-journal-'));
    const file = path.join(dir, 'requests.jsonl');
    const a = { text: 'a', finish: 'stop' as const, stopReason: null, tokens: null, logProbs: null };
    const j = new RequestJournal(file);
    const k1 = j.keyOf({ prompt: 'x' });
    const k2 = j.keyOf({ prompt: 'x' });
    expect(k1).not.toBe(k2); // the same prompt asked twice (a sampled group) is two answers
    j.record(k1, a);
    fs.appendFileSync(file, '{"key": "torn');
    const again = new RequestJournal(file);
    expect(again.size).toBe(1);
    expect(again.lookup(again.keyOf({ prompt: 'x' }))).toEqual(a);
    expect(again.lookup(again.keyOf({ prompt: 'x' }))).toBeUndefined();
    expect(again.stats.replayed).toBe(1);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
