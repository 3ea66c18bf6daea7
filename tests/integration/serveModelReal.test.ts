/**
 * `serve-model` with a real model (issue 30, item 8): `mars-lab serve-model --checkpoint smollm2-135m-instruct` (the
 * fetched GGUF, through the command as a user starts it) renders chats with the model's own chat template and stops at
 * its end-of-turn token, so its answers at temperature 0 equal the in-process sampler's on the same template (the
 * same ids as `model generate --chat`): six chat prompts sent at once (batched), one streamed, one raw completion with
 * the bos the tokenizer config asks for. /v1/models marks it as a real model, so an endpoint source's "auto"
 * instructions talk to it as a chat model; MARTI's Python chats (engine/marti/python/) get the same replies through it
 * as from the in-process chat policy. A real model without a template refuses chat in one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskFile } from '../../engine/code/tasks/taskFile';
import { artefactPath } from '../../engine/fetch/cache';
import { knownArtefact } from '../../engine/fetch/catalogue';
import { rootChat } from '../../engine/marti/python/pythonPrompts';
import type { ChatMessage } from '../../engine/model/chat/chatTemplate';
import { loadCheckpoint } from '../../engine/model/formats/checkpoint';
import { loadRealModel, type RealModel } from '../../engine/model/realModel';
import { generate } from '../../engine/model/sampler';
import { loadTokenizer } from '../../engine/model/tokenizers/tokenizer';
import { EndpointChatPolicy, InProcessChatPolicy, type ChatReply } from '../../engine/policy/chatPolicy';
import { endpointSourceSchema } from '../../engine/policy/policySource';
import { Rng } from '../../engine/random/prng';
import { jobMaker } from '../../engine/serveModel/jobs';
import type { CompletionRequest } from '../../engine/serveModel/protocol';
import { startModelServer } from '../../engine/serveModel/server';
import { CHAT_PROMPTS } from '../fixtures/chat/prompts';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';
import { useBackend } from '../helpers/backends';
import { spawnCli } from '../helpers/cli';

const { path: MODEL, reason } = realModelOrSkipReason();
const MAX = 24;
const PROMPTS = [0, 1, 4, 6, 10, 12].map((i) => CHAT_PROMPTS[i]!);

const SYSTEM_CHAT = [
  { role: 'system' as const, content: 'You answer in one short sentence.' },
  { role: 'user' as const, content: CHAT_PROMPTS[13]! },
];
const RAW = 'def add(a, b):\n    return';
/** Greedy, as a tree's greedy answer; short, since the replies are compared as text, not scored. */
const CODE_SAMPLING = () => ({ maxNewTokens: 40, temperature: 0, topP: 1, rngs: [new Rng(1), new Rng(2)] });

let real: RealModel;
let client: OpenAI;
let serveKey = '';
let stop: (() => Promise<void>) | null = null;
/**
 * The in-process answers, computed before any request: a generation blocks this process's event loop for seconds,
 * and a pooled keep-alive socket the server closed meanwhile (after its 5 s idle timeout) is noticed only too late.
 */
let want: {
  chats: Awaited<ReturnType<typeof inProcess>>[];
  system: string;
  raw: string;
  /** MARTI's Python root chats for two HumanEval problems, answered by the in-process chat policy (null: no HumanEval). */
  code: { chats: ChatMessage[][]; replies: ChatReply[] } | null;
};

/** The in-process answer to a chat prompt: the template's prompt ids, greedy, stopping at eos or end of turn. */
async function inProcess(ids: number[], maxNewTokens = MAX) {
  const [g] = await generate(real.model, [ids], {
    maxNewTokens,
    temperature: 0,
    stopTokens: real.stopTokens,
    rng: new Rng(0),
  });
  const kept = g!.finish === 'stop' ? g!.tokens.slice(0, -1) : g!.tokens;
  return {
    text: real.tokenizer.decode(kept),
    tokens: g!.tokens.length,
    finish: g!.finish === 'stop' ? 'stop' : 'length',
  };
}

describe.skipIf(!MODEL)(`serve-model with a real model ${reason}`, () => {
  beforeAll(async () => {
    await useBackend('wasm');
    real = await loadRealModel(MODEL!);
    want = { chats: [], system: '', raw: '', code: null };
    for (const content of PROMPTS) {
      want.chats.push(await inProcess(real.encoder!.prompt([{ role: 'user', content }]).ids));
    }
    want.system = (await inProcess(real.encoder!.prompt(SYSTEM_CHAT).ids)).text;
    want.raw = (await inProcess(real.tokenizer.encodeForModel(RAW), 12)).text;
    const humaneval = artefactPath(knownArtefact('humaneval'));
    if (fs.existsSync(humaneval)) {
      const chats = loadTaskFile(humaneval)
        .slice(0, 2)
        .map((t) => rootChat(t));
      const replies = await new InProcessChatPolicy(real).reply(chats, CODE_SAMPLING());
      want.code = { chats, replies };
    }
    // The command as a user runs it, by the name model fetch knows (found in the cache), on the same backend.
    let started: (info: { baseUrl: string; token: string }) => void;
    const info = new Promise<{ baseUrl: string; token: string }>((r) => (started = r));
    const { child, exited } = spawnCli(
      ['serve-model', '--checkpoint', 'smollm2-135m-instruct', '--port', '0', '--json', '--backend', 'wasm'],
      { MARS_LAB_MODELS: path.dirname(path.dirname(MODEL!)) },
      (line) => {
        if (line.startsWith('{')) started(JSON.parse(line) as { baseUrl: string; token: string });
      },
    );
    const first = await Promise.race([info, exited.then((code) => new Error(`serve-model exited with ${code}`))]);
    if (first instanceof Error) throw first;
    serveKey = first.token;
    client = new OpenAI({ baseURL: first.baseUrl, apiKey: first.token, maxRetries: 0, timeout: 300_000 });
    stop = async () => {
      child.kill('SIGINT');
      await exited;
    };
  }, 300_000);
  afterAll(async () => {
    await stop?.();
    real?.model.dispose();
  });

  it('lists the model as a real model (so "auto" instructions send it chats)', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => [m.id, m.owned_by])).toEqual([['smollm2-135m-instruct', 'mars-lab-real-model']]);
  });

  it('answers chats through the chat template as the in-process sampler does, batched, at temperature 0', async () => {
    const answers = await Promise.all(
      PROMPTS.map((content) =>
        client.chat.completions.create({
          model: 'smollm2-135m-instruct',
          messages: [{ role: 'user', content }],
          temperature: 0,
          max_tokens: MAX,
        }),
      ),
    );
    let stopped = 0;
    for (const [i, content] of PROMPTS.entries()) {
      const w = want.chats[i]!;
      const got = answers[i]!.choices[0]!;
      expect(got.message.content, content).toBe(w.text);
      expect(got.finish_reason, content).toBe(w.finish);
      expect(answers[i]!.usage!.completion_tokens, content).toBe(w.tokens);
      // The end-of-turn token never reaches the client, and the answer is the model's words, not the template's.
      expect(got.message.content).not.toMatch(/<\|im_(start|end)\|>/);
      if (w.finish === 'stop') stopped++;
    }
    expect(stopped, 'some answer ends at the end-of-turn token within 24 tokens').toBeGreaterThan(0);
    expect(answers[0]!.choices[0]!.message.content).toMatch(/Paris/);
  }, 600_000);

  it('streams the same answer, with a system message', async () => {
    const stream = await client.chat.completions.create({
      model: 'smollm2-135m-instruct',
      messages: SYSTEM_CHAT,
      temperature: 0,
      max_tokens: MAX,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(want.system);
  }, 300_000);

  it('completes raw text after the bos the tokenizer config asks for, as `model generate --prompt` does', async () => {
    const r = await client.completions.create({
      model: 'smollm2-135m-instruct',
      prompt: RAW,
      temperature: 0,
      max_tokens: 12,
    });
    expect(r.choices[0]!.text).toBe(want.raw);
    expect(r.usage!.prompt_tokens).toBe(real.tokenizer.encodeForModel(RAW).length);
  }, 300_000);

  it("answers MARTI's Python chats as the in-process chat policy does (a tree's node through HTTP = in-process)", async (ctx) => {
    if (!want.code) return ctx.skip('HumanEval is not fetched (mars-lab data fetch humaneval)');
    process.env.MARS_LAB_SERVE_MODEL_TEST_KEY = serveKey;
    const source = endpointSourceSchema.parse({
      kind: 'endpoint',
      baseUrl: client.baseURL,
      model: 'smollm2-135m-instruct',
      apiKeyEnv: 'MARS_LAB_SERVE_MODEL_TEST_KEY',
      timeoutMs: 300_000,
    });
    const served = new EndpointChatPolicy(source, 'served');
    const replies = await served.reply(want.code.chats, CODE_SAMPLING());
    expect(replies.map((r) => [r.text, r.finish])).toEqual(want.code.replies.map((r) => [r.text, r.finish]));
    expect(want.code.replies[0]!.text).toMatch(/```python\ndef has_close_elements/);
  }, 300_000);
});

describe('serve-model with a real model, without the real file', () => {
  it("stops at the model's own end-of-turn ids as at eos, unless ignore_eos", async () => {
    // SmolLM2's eos is its end-of-turn token; Llama 3's are two tokens (<|end_of_text|>, <|eot_id|>).
    const tokenizer = await loadTokenizer(path.resolve('resources/marti/base-tiny/tokenizer.json'));
    const eos = tokenizer.specials.eos;
    const { jobOf } = jobMaker(tokenizer, 64, [eos + 1]);
    const r: CompletionRequest = { model: 'base', prompt: 'x' };
    expect(jobOf(r, [1], 4, 0).stop.ids).toEqual([eos, eos + 1]);
    expect(jobOf({ ...r, ignore_eos: true }, [1], 4, 0).stop.ids).toEqual([]);
    expect(jobMaker(tokenizer, 64).jobOf(r, [1], 4, 0).stop.ids).toEqual([eos]);
  });

  it('refuses chat in one line pointing to /v1/completions when the model has no chat template', async () => {
    await useBackend('wasm');
    const CK = path.resolve('resources/marti/base-tiny');
    const { model } = await loadCheckpoint(CK);
    const tokenizer = await loadTokenizer(path.join(CK, 'tokenizer.json'));
    const server = await startModelServer({
      model,
      tokenizer,
      modelName: 'base',
      port: 0,
      real: { encoder: null, stopTokens: [], encode: (t) => tokenizer.encode(t) },
    });
    try {
      const c = new OpenAI({ baseURL: server.baseUrl, apiKey: server.token, maxRetries: 0 });
      await expect(
        c.chat.completions.create({ model: 'base', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      ).rejects.toThrow(/^400 base has no chat template \(a base model\): send raw text to \/v1\/completions$/);
      expect((await c.models.list()).data[0]!.owned_by).toBe('mars-lab-real-model');
    } finally {
      await server.close();
      model.dispose();
    }
  }, 120_000);
});
