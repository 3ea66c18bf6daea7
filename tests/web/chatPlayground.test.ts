/**
 * The chat playground's host side (issue 33, item 2; engine/api/host/chatMethods.ts) through callApi, on the real
 * SmolLM2 behind a serve-model child: a reply streams as chatDelta events whose text, at temperature 0, is the
 * in-process chat policy's reply to the same chat (system message included); chatStop ends a long reply at once, with
 * no delta after its end; a model without a chat template ends with its one-line error. Skips without the model
 * (unless MARS_LAB_EXPECT_MODELS=1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { loadRealModel } from '../../engine/model/realModel';
import { InProcessChatPolicy } from '../../engine/policy/chatPolicy';
import { Rng } from '../../engine/random/prng';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';
import { useBackend } from '../helpers/backends';

const { path: MODEL, reason } = realModelOrSkipReason();
const SYSTEM = 'You answer in one short sentence.';
const QUESTION = 'What is the capital of France?';

let home: string;
let host: Host;
const events: ApiEvent[] = [];
let want = '';

type End = Extract<ApiEvent, { type: 'chatEnd' }>;
const call = <T>(method: string, params: unknown) => callApi(host.handlers, method, params) as Promise<T>;
function endOf(chatId: string, timeoutMs = 300_000): Promise<End> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      const e = events.find((x): x is End => x.type === 'chatEnd' && x.chatId === chatId);
      if (e) return resolve(e);
      if (Date.now() - t0 > timeoutMs) return reject(new Error(`no chatEnd for ${chatId}`));
      setTimeout(poll, 50);
    };
    poll();
  });
}
const deltas = (chatId: string) =>
  events.filter((e): e is Extract<ApiEvent, { type: 'chatDelta' }> => e.type === 'chatDelta' && e.chatId === chatId);

describe.skipIf(!MODEL)(`the chat playground on SmolLM2 ${reason}`, () => {
  beforeAll(async () => {
    // The in-process answer first: a generation blocks this process for seconds (serveModelReal.test.ts says why).
    await useBackend('wasm');
    const real = await loadRealModel(MODEL!);
    const chat = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTION },
    ];
    const [answer] = await new InProcessChatPolicy(real).reply([chat], {
      maxNewTokens: 24,
      temperature: 0,
      topP: 1,
      rngs: [new Rng(0)],
    });
    want = answer!.text;
    real.model.dispose();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-playground-'));
    host = await createHost({
      home,
      launcher: nodeRunLauncher({ env: { MARS_LAB_MODELS: path.dirname(path.dirname(MODEL!)) } }),
      transport: 'web',
    });
    host.subscribe((e) => events.push(e));
  }, 300_000);

  afterAll(async () => {
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('streams the reply the in-process chat policy gives, at temperature 0, with its token count', async () => {
    const { chatId } = await call<{ chatId: string }>('chatStart', {
      id: 'fetch:smollm2-135m-instruct',
      system: SYSTEM,
      messages: [{ role: 'user', content: QUESTION }],
      temperature: 0,
      maxTokens: 24,
    });
    const end = await endOf(chatId);
    expect(end.finish, end.message).not.toBe('error');
    const parts = deltas(chatId);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.map((d) => d.text).join('')).toBe(want);
    expect(want).toMatch(/Paris/);
    expect(end.tokens).toBe(parts.at(-1)!.tokens);
    expect(end.tokensPerSecond).toBeGreaterThan(0);
  }, 300_000);

  it('stops a long reply at once', async () => {
    const { chatId } = await call<{ chatId: string }>('chatStart', {
      id: 'fetch:smollm2-135m-instruct',
      messages: [{ role: 'user', content: 'Write a very long story about a lighthouse keeper.' }],
      temperature: 1,
      maxTokens: 4000,
    });
    const t0 = Date.now();
    while (deltas(chatId).length < 3) {
      if (Date.now() - t0 > 120_000) throw new Error('no tokens streamed');
      await new Promise((r) => setTimeout(r, 20));
    }
    const asked = Date.now();
    expect((await call<{ stopped: boolean }>('chatStop', { chatId })).stopped).toBe(true);
    const end = await endOf(chatId, 10_000);
    expect(end.finish).toBe('stopped');
    expect(Date.now() - asked).toBeLessThan(3_000);
    const seen = deltas(chatId).length;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(deltas(chatId).length).toBe(seen);
    expect(end.tokens).toBeLessThan(4000);
  }, 300_000);

  it('ends with one line when the model has no chat template (a mars-lab base)', async () => {
    const { chatId } = await call<{ chatId: string }>('chatStart', {
      id: 'base:marti/base-tiny',
      messages: [{ role: 'user', content: 'hello' }],
    });
    const end = await endOf(chatId);
    expect(end.finish).toBe('error');
    expect(end.message).toMatch(/template/i);
    expect(end.message.split('\n')).toHaveLength(1);
  }, 300_000);
});
