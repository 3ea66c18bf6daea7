/**
 * `serve-model`'s OpenAI-compatible server (engine/serveModel/): the token rule and Host check of web mode, models,
 * completions and chat with per-token log-probs equal to the in-process sampler's at temperature 0, SSE streaming
 * that adds up to the whole answer, stops (special tokens and strings, kept or cut), concurrent requests batched
 * without changing any answer (continuous batching: a request that arrives mid-generation joins the running batch),
 * real top-k alternatives in top_logprobs, a request's seed honoured whatever it is batched with, and OpenAI-style
 * errors. Loopback only.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { martiFormat } from '../../engine/marti/format';
import { loadCheckpoint } from '../../engine/model/formats/checkpoint';
import type { LlamaModel } from '../../engine/model/llama';
import { generate } from '../../engine/model/sampler';
import { loadTokenizer, type Tokenizer } from '../../engine/model/tokenizers/tokenizer';
import { Rng } from '../../engine/random/prng';
import { startModelServer, type ModelServer } from '../../engine/serveModel/server';
import { useBackend } from '../helpers/backends';

const CK = path.resolve('resources/marti/base-tiny');
let model: LlamaModel;
let tok: Tokenizer;
let server: ModelServer;
let client: OpenAI;
const fmt = martiFormat();
const PROMPTS = [
  'agent alpha : problem : double each number . examples : [ 1 , 2 ] gives [ 2 , 4 ] . program :',
  'agent beta : problem : keep the even numbers . examples : [ 1 , 2 , 4 ] gives [ 2 , 4 ] . program :',
  'problem : reverse the list . examples : [ 3 , 1 ] gives [ 1 , 3 ] . program :',
  'agent alpha : problem : add one to each number . examples : [ 5 ] gives [ 6 ] . program :',
];

beforeAll(async () => {
  await useBackend('wasm');
  model = (await loadCheckpoint(CK)).model;
  tok = await loadTokenizer(path.join(CK, 'tokenizer.json'));
  server = await startModelServer({ model, tokenizer: tok, modelName: 'tiny', port: 0 });
  client = new OpenAI({ baseURL: server.baseUrl, apiKey: server.token, maxRetries: 0 });
}, 120_000);
afterAll(async () => {
  await server.close();
  model.dispose();
});

async function inProcess(prompt: string, maxNewTokens = 24) {
  const [g] = await generate(model, [fmt.prompt(prompt)], {
    maxNewTokens,
    temperature: 0,
    stopTokens: [fmt.eos],
    rng: new Rng(0),
  });
  return g!;
}

function raw(
  method: string,
  p: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string }> {
  const u = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: p, method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('serve-model', () => {
  it('needs the token, answers only to its own names, lists its model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
    const noKey = await raw('GET', '/v1/models', { host: `127.0.0.1:${server.port}` });
    expect(noKey.status).toBe(401);
    expect(JSON.parse(noKey.text).error.code).toBe('invalid_api_key');
    const wrong = await raw('GET', '/v1/models', {
      host: `127.0.0.1:${server.port}`,
      authorization: `Bearer ${server.token}x`,
    });
    expect(wrong.status).toBe(401);
    const rebound = await raw('GET', '/v1/models', {
      host: `evil.example:${server.port}`,
      authorization: `Bearer ${server.token}`,
    });
    expect(rebound.status).toBe(403);
    await expect(
      startModelServer({ model, tokenizer: tok, modelName: 'tiny', port: 0, bindHost: '0.0.0.0' }),
    ).rejects.toThrow(/--allow-remote/);
  });

  it('completions at temperature 0: the in-process tokens and log-probs, the stop kept when asked', async () => {
    const want = await inProcess(PROMPTS[0]!);
    const r = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 24,
      temperature: 0,
      logprobs: 1,
      stop: ['<eos>'],
      include_stop_str_in_output: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    const c = r.choices[0]!;
    expect(tok.encode(c.text)).toEqual(want.tokens);
    expect(c.logprobs!.tokens).toEqual(want.tokens.map((i) => tok.tokenOf(i)));
    c.logprobs!.token_logprobs!.forEach((lp, i) => expect(lp).toBeCloseTo(want.logProbs[i]!, 5));
    expect(c.finish_reason).toBe(want.finish === 'stop' ? 'stop' : 'length');
    // without include_stop_str_in_output the stop (EOS) is not in the text, as OpenAI servers do
    const plain = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 24,
      temperature: 0,
    });
    expect(plain.choices[0]!.text).toBe(fmt.decodeCompletion(want.tokens));
    expect(plain.usage).toMatchObject({
      prompt_tokens: fmt.prompt(PROMPTS[0]!).length,
      completion_tokens: want.tokens.length,
    });
  });

  it('chat: <bos> and the messages joined by a space are the prompt, so a user message of the prompt text is the same request', async () => {
    const want = await inProcess(PROMPTS[1]!);
    const r = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: PROMPTS[1]! }],
      max_tokens: 24,
      temperature: 0,
      logprobs: true,
    });
    expect(r.choices[0]!.message.content).toBe(fmt.decodeCompletion(want.tokens));
    expect(r.choices[0]!.logprobs!.content!.map((t) => t.token)).toEqual(
      want.tokens.filter((t) => t !== fmt.eos).map((i) => tok.tokenOf(i)),
    );
  });

  it('streams server-sent events that add up to the whole answer', async () => {
    const whole = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[2]}`,
      max_tokens: 12,
      temperature: 0,
      logprobs: 1,
    });
    const stream = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[2]}`,
      max_tokens: 12,
      temperature: 0,
      logprobs: 1,
      stream: true,
    });
    let text = '';
    const lps: number[] = [];
    const finishes: (string | null)[] = [];
    let chunks = 0;
    for await (const ch of stream) {
      chunks++;
      text += ch.choices[0]!.text;
      lps.push(...(ch.choices[0]!.logprobs?.token_logprobs ?? []));
      finishes.push(ch.choices[0]!.finish_reason);
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toBe(whole.choices[0]!.text);
    expect(lps).toEqual(whole.choices[0]!.logprobs!.token_logprobs);
    expect(finishes.filter((f) => f !== null)).toEqual([whole.choices[0]!.finish_reason]);
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: PROMPTS[2]! }],
      max_tokens: 12,
      temperature: 0,
      stream: true,
    });
    let said = '';
    for await (const ch of chat) said += ch.choices[0]!.delta.content ?? '';
    expect(said).toBe(whole.choices[0]!.text);
  });

  it('a stop string ends the answer and is cut from the text unless asked for', async () => {
    const want = fmt.decodeCompletion((await inProcess(PROMPTS[0]!)).tokens); // e.g. "map (x mod 2)"
    const word = want.split(' ')[0]!;
    const cut = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 24,
      temperature: 0,
      stop: [word],
    });
    expect(cut.choices[0]).toMatchObject({ text: '', finish_reason: 'stop' });
    const kept = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 24,
      temperature: 0,
      stop: [word],
      include_stop_str_in_output: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(kept.choices[0]).toMatchObject({ text: word, finish_reason: 'stop', stop_reason: word });
    const short = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 2,
      temperature: 0,
      logprobs: 0,
    });
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.choices[0]!.logprobs!.tokens).toHaveLength(2);
  });

  it('concurrent requests are batched, and every answer is the one it gets alone', async () => {
    const alone = await Promise.all(PROMPTS.map((p) => inProcess(p)));
    const before = { ...server.queue.stats };
    const asks = Array.from({ length: 12 }, (_, i) => PROMPTS[i % PROMPTS.length]!);
    const answers = await Promise.all(
      asks.map((p) =>
        client.completions.create({
          model: 'tiny',
          prompt: `<bos> ${p}`,
          max_tokens: 24,
          temperature: 0,
          include_stop_str_in_output: true,
        } as OpenAI.CompletionCreateParamsNonStreaming),
      ),
    );
    answers.forEach((a, i) => expect(tok.encode(a.choices[0]!.text)).toEqual(alone[i % PROMPTS.length]!.tokens));
    expect(server.queue.stats.waves - before.waves).toBeLessThan(12);
    expect(server.queue.stats.maxRows).toBeGreaterThan(1);
  });

  it('continuous batching: requests that arrive mid-generation join the running batch, and answer as alone', async () => {
    const q = server.queue;
    const opts = { maxNewTokens: 20, temperature: 0, rng: new Rng(0) };
    const prompts = PROMPTS.map((p) => fmt.prompt(p));
    // no stop: every row runs its full length, so the later ones surely join while the first is still decoding
    const alone = await Promise.all(prompts.map((p) => generate(model, [p], opts).then((g) => g[0]!)));
    const before = { ...q.stats };
    const ask = (prompt: number[], onToken?: () => void) =>
      q.submit({ prompt, maxTokens: 20, temperature: 0, topP: 1, stopIds: [], stopStrings: [], onToken });
    let drawn = 0;
    let joined!: () => void;
    const third = new Promise<void>((r) => (joined = r));
    const first = ask(prompts[0]!, () => ++drawn === 3 && joined());
    await third; // the first request has 3 of its 20 tokens: the batch is running
    const later = prompts.slice(1).map((p) => ask(p));
    const all = await Promise.all([first, ...later]);
    all.forEach((g, i) => {
      expect(g.tokens).toEqual(alone[i]!.tokens);
      g.logProbs.forEach((lp, k) => expect(lp).toBeCloseTo(alone[i]!.logProbs[k]!, 4));
    });
    expect(q.stats.waves - before.waves).toBe(1); // one batch, never drained in between
    expect(q.stats.joins - before.joins).toBe(prompts.length - 1);
    expect(q.stats.maxRows).toBeGreaterThanOrEqual(prompts.length);
  });

  it('top_logprobs: the k most likely tokens of each step, in both shapes', async () => {
    const r = await client.completions.create({
      model: 'tiny',
      prompt: `<bos> ${PROMPTS[0]}`,
      max_tokens: 6,
      temperature: 0,
      logprobs: 5,
    });
    const lp = r.choices[0]!.logprobs!;
    expect(lp.top_logprobs).toHaveLength(lp.tokens!.length);
    lp.top_logprobs!.forEach((top, i) => {
      // (a JSON object's digit keys come first whatever the order written: sort by log-prob to read it)
      const entries = Object.entries(top).sort((a, b) => b[1] - a[1]);
      expect(entries).toHaveLength(5);
      // greedy: the drawn token is the most likely, with its own log-prob; the rest are real alternatives
      expect(entries[0]).toEqual([lp.tokens![i], lp.token_logprobs![i]]);
      expect(entries[1]![1]).toBeLessThan(entries[0]![1]);
      expect(entries.reduce((sum, [, v]) => sum + Math.exp(v), 0)).toBeLessThanOrEqual(1 + 1e-6);
    });
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: PROMPTS[1]! }],
      max_tokens: 4,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    for (const t of chat.choices[0]!.logprobs!.content!) {
      expect(t.top_logprobs.map((x) => x.token)).toHaveLength(3);
      expect(t.top_logprobs[0]).toMatchObject({ token: t.token, logprob: t.logprob });
      expect(new Set(t.top_logprobs.map((x) => x.token)).size).toBe(3);
    }
  });

  it('a request’s seed gives the same sampled answer again, alone or batched with others', async () => {
    const ask = (seed: number) =>
      client.completions.create({
        model: 'tiny',
        prompt: `<bos> ${PROMPTS[3]}`,
        max_tokens: 16,
        temperature: 1.5,
        seed,
      });
    const a = (await ask(7)).choices[0]!.text;
    const b = (await ask(7)).choices[0]!.text;
    expect(b).toBe(a);
    const crowd = await Promise.all([ask(1), ask(7), ask(2), ask(3)]);
    expect(crowd[1].choices[0]!.text).toBe(a);
    const others = new Set(crowd.map((c) => c.choices[0]!.text));
    expect(others.size).toBeGreaterThan(1); // different seeds sample differently (temperature 1.5)
  });

  it('errors as OpenAI servers give them: unknown model 404, unsupported n 400, bad JSON 400, unknown path 404', async () => {
    await expect(client.completions.create({ model: 'other', prompt: 'x' })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    await expect(client.completions.create({ model: 'tiny', prompt: '<bos> x', n: 2 })).rejects.toMatchObject({
      status: 400,
    });
    const auth = {
      host: `127.0.0.1:${server.port}`,
      authorization: `Bearer ${server.token}`,
      'content-type': 'application/json',
    };
    const bad = await raw('POST', '/v1/completions', auth, '{"model": "tiny", "prompt": ');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toMatch(/not valid JSON/);
    expect((await raw('GET', '/v1/engines', auth)).status).toBe(404);
    const tooLong = await raw(
      'POST',
      '/v1/completions',
      auth,
      JSON.stringify({ model: 'tiny', prompt: Array(model.config.max_position_embeddings + 5).fill(3) }),
    );
    expect(JSON.parse(tooLong.text).error.code).toBe('context_length_exceeded');
    expect(fs.existsSync(CK)).toBe(true);
  });
});
