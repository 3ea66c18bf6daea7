/**
 * Endpoint agents that real chat models can play (issue 20): `"instructions": "chat"` sends a system message that
 * teaches the format (MARS's tags, System 1's distillation, MARTI's language reference) with a worked example from a
 * training world, and reads answers written the way chat models write them (prose, code fences, odd tag case, a
 * dropped stop) into well-formed turns, naming each repair. "none" is today's request, byte for byte; "auto" picks
 * between them from GET /v1/models. Also: MARTI reads an endpoint's program losslessly (a word outside its vocabulary
 * fails the program with that reason instead of being dropped). Scripted OpenAI-compatible servers on 127.0.0.1 only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chatDialectFor } from '../../../engine/runs/evaluation/chat';
import { evaluateWithEndpoints } from '../../../engine/runs/evaluation/evaluateEndpoints';
import { FINAL_TURN } from '../../../engine/runs/evaluation/chat/marsChat';
import { languageReference, martiExample } from '../../../engine/runs/evaluation/chat/martiChat';
import { EndpointPolicy } from '../../../engine/policy/endpointPolicy';
import { RequestJournal } from '../../../engine/policy/journal';
import { endpointSourceSchema } from '../../../engine/policy/policySource';
import { corpusFormat } from '../../../engine/mars/corpus';
import { marsConfigSchema } from '../../../engine/mars/configSchema';
import { rolloutBatch } from '../../../engine/mars/rollout';
import { rolloutSettings } from '../../../engine/mars/episodes';
import { evalQuestions } from '../../../engine/mars/questionSets';
import { martiConfigSchema } from '../../../engine/marti/configSchema';
import { martiFormat } from '../../../engine/marti/format';
import { problemText, readCompletion, rootPrompt } from '../../../engine/marti/prompts';
import { evaluateMartiDetailed } from '../../../engine/marti/evaluate';
import { heldoutTasks } from '../../../engine/marti/problems';
import { paramIdsOf } from '../../../engine/marti/team';
import { Rng } from '../../../engine/random/prng';
import { useBackend } from '../../helpers/backends';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Seen {
  method: string;
  path: string;
  raw: string;
  body: Record<string, unknown>;
}
type Answer = (seen: Seen) => { status?: number; body: unknown } | undefined;

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

/** A scripted OpenAI-compatible server: GET /v1/models lists `model` owned by `owner`; POSTs go to `answer`. */
async function scripted(owner: string, answer: Answer): Promise<{ baseUrl: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const s: Seen = { method: req.method!, path: req.url!, raw, body: raw ? JSON.parse(raw) : {} };
      seen.push(s);
      const reply =
        req.method === 'GET' && req.url === '/v1/models'
          ? { body: { object: 'list', data: [{ id: 'm', object: 'model', owned_by: owner }] } }
          : (answer(s) ?? { status: 404, body: { error: { message: 'no such thing' } } });
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

const chatReply = (content: string, finish = 'stop') => ({
  body: {
    id: 'c',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
  },
});
const completionReply = (text: string, finish = 'stop') => ({
  body: { id: 'x', object: 'text_completion', choices: [{ index: 0, text, finish_reason: finish }] },
});

function policy(
  baseUrl: string,
  algorithm: 'mars' | 'marti',
  over: Record<string, unknown> = {},
  warnings: string[] = [],
  journal?: RequestJournal,
) {
  const tokenizer = algorithm === 'mars' ? corpusFormat().tokenizer : martiFormat().tokenizer;
  const source = endpointSourceSchema.parse({ kind: 'endpoint', baseUrl, model: 'm', maxRetries: 0, ...over });
  return new EndpointPolicy({
    source,
    tokenizer,
    label: algorithm === 'mars' ? 'MARS System 2' : 'MARTI agent alpha',
    dialect: chatDialectFor(algorithm, tokenizer),
    onWarning: (l) => warnings.push(l),
    journal,
  });
}

const martiCfg = martiConfigSchema.parse({
  algorithm: 'marti',
  eval: { items: 1, temperature: 0 },
  marti: { configuration: 'single', evalNodes: 2, evalSearchTemperature: 0, tplus: { enabled: false } },
});
const task = heldoutTasks(martiCfg)[0]!;
const fmt = martiFormat();
/** A text in MARTI's normal form: what serve-model (the tokenizer's decode) writes. */
const said = (text: string): string => fmt.tokenizer.decode(fmt.tokenizer.encode(text));

beforeAll(async () => {
  await useBackend('wasm');
});

describe('"none": the raw prompt, as before instructions existed', () => {
  it('sends the same request body, byte for byte, and "auto" does too for a serve-model model', async () => {
    for (const [owner, instructions] of [
      ['vllm', 'none'],
      ['mars-lab', 'auto'],
    ] as const) {
      const s = await scripted(owner, (q) =>
        q.path === '/v1/completions' ? completionReply(said('map (x) <eos>')) : undefined,
      );
      const p = policy(s.baseUrl, 'marti', { instructions });
      const prompt = fmt.prompt(rootPrompt(task));
      const [g] = await p.generate([prompt], {
        maxNewTokens: 12,
        temperature: 0,
        stopTokens: [fmt.eos],
        rng: new Rng(1),
      });
      const posts = s.seen.filter((x) => x.method === 'POST');
      expect(posts.map((x) => x.path)).toEqual(['/v1/completions']);
      // the body today's client sent: the same keys, in the same order, nothing added
      expect(posts[0]!.raw).toBe(
        JSON.stringify({
          model: 'm',
          prompt: fmt.tokenizer.decode(prompt),
          max_tokens: 12,
          temperature: 0,
          top_p: 1,
          stop: ['<eos>'],
          logprobs: 1,
          include_stop_str_in_output: true,
          skip_special_tokens: false,
          stream: false,
        }),
      );
      expect(fmt.decodeCompletion(g!.tokens)).toBe('map (x)');
      expect(g).not.toHaveProperty('text'); // the tokens say it all: nothing else travels with them
      expect(await p.instructions()).toBe('none');
    }
  });

  it('the journal keys of raw-prompt requests are unchanged (earlier journals replay)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-chat-journal-'));
    try {
      const file = path.join(dir, 'requests.jsonl');
      const prompt = fmt.prompt(rootPrompt(task));
      const source = endpointSourceSchema.parse({ kind: 'endpoint', baseUrl: 'http://127.0.0.1:9/v1', model: 'm' });
      // a journal as the code before instructions wrote it: key of { endpoint, ask }
      const before = new RequestJournal(file);
      const ask = { prompt: fmt.tokenizer.decode(prompt), maxTokens: 12, temperature: 0, topP: 1, stop: ['<eos>'] };
      before.record(
        before.keyOf({ endpoint: { baseUrl: source.baseUrl, model: 'm', sampling: source.sampling }, ask }),
        { text: 'sort <eos>', finish: 'stop', stopReason: null, tokens: null, logProbs: null },
      );
      const p = policy('http://127.0.0.1:9/v1', 'marti', { instructions: 'none' }, [], new RequestJournal(file));
      const [g] = await p.generate([prompt], {
        maxNewTokens: 12,
        temperature: 0,
        stopTokens: [fmt.eos],
        rng: new Rng(1),
      });
      expect(fmt.decodeCompletion(g!.tokens)).toBe('sort'); // replayed: port 9 would have refused
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('"auto"', () => {
  it('asks GET /models once, journals the verdict, and a resumed evaluation does not ask again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-chat-auto-'));
    try {
      const file = path.join(dir, 'requests.jsonl');
      const s = await scripted('vllm', () => chatReply('sort'));
      const opts = { maxNewTokens: 12, temperature: 0, stopTokens: [fmt.eos], rng: new Rng(1) };
      const prompts = [fmt.prompt(rootPrompt(task)), fmt.prompt(rootPrompt(task))];
      await policy(s.baseUrl, 'marti', {}, [], new RequestJournal(file)).generate(prompts, opts);
      expect(s.seen.map((x) => `${x.method} ${x.path}`)).toEqual([
        'GET /v1/models',
        'POST /v1/chat/completions',
        'POST /v1/chat/completions',
      ]);
      s.seen.length = 0;
      const again = policy(s.baseUrl, 'marti', {}, [], new RequestJournal(file));
      const [g] = await again.generate(prompts, opts);
      expect(s.seen).toEqual([]); // all replayed, the verdict included
      expect(await again.instructions()).toBe('chat');
      expect(g!.program).toBe('sort');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a server without a model list gets raw prompts, and no line of its own', async () => {
    const s = await scripted('vllm', () => undefined);
    const warnings: string[] = [];
    const p = policy(s.baseUrl.replace('/v1', '/v2'), 'marti', {}, warnings);
    await expect(p.instructions()).resolves.toBe('none');
    expect(warnings).toEqual([]);
  });
});

describe('"chat": MARTI with the language reference, answers read tolerantly', () => {
  it('asks with the reference and a training example, and reads the program out of prose and a fence', async () => {
    const target = task.target;
    const s = await scripted('vllm', (q) =>
      q.path === '/v1/chat/completions'
        ? chatReply(
            `Sure! Here is a program that does it:\n\n\`\`\`text\n${target}\n\`\`\`\n\nIt applies each step in turn.`,
          )
        : undefined,
    );
    const warnings: string[] = [];
    const p = policy(s.baseUrl, 'marti', {}, warnings); // "auto" against a vLLM listing
    const [g] = await p.generate([fmt.prompt(rootPrompt(task))], {
      maxNewTokens: 40,
      temperature: 0,
      stopTokens: [fmt.eos],
      rng: new Rng(1),
    });
    expect(await p.instructions()).toBe('chat');
    const post = s.seen.find((x) => x.method === 'POST')!;
    expect(post.path).toBe('/v1/chat/completions');
    const messages = post.body.messages as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0]!.content).toContain(languageReference());
    const ex = martiExample(problemText(task));
    expect(messages[0]!.content).toContain(ex.problem);
    expect(ex.problem).not.toBe(problemText(task)); // never the evaluated item
    expect(messages[1]!.content.split('\n')).toEqual([
      expect.stringMatching(/^problem: /),
      expect.stringMatching(/^examples: /),
      'program:',
    ]);
    expect(g!.program).toBe(target);
    expect(g!.repair).toBe('code fence stripped');
    expect(fmt.tokenizer.decode(g!.tokens)).toBe(said(`${target} <eos>`));
    const read = readCompletion(fmt, g!, task, {});
    expect(read.completion).toContain('Sure! Here is a program'); // the raw answer stays in the node
    expect(read.evaluation.parseError).toBeNull();
    expect(read.evaluation.publicPassed).toBe(task.publicTests.length);
    expect(warnings).toEqual([
      expect.stringMatching(/^MARTI agent alpha: an answer needed repair \(code fence stripped\)/),
    ]);
  });

  it('streamed chat answers add up to the same reading', async () => {
    const pieces = ['Program:', ' `sort', ' | reverse`', '\nDone.'];
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        pieces.forEach((content, i) =>
          res.write(
            `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: i === pieces.length - 1 ? 'stop' : null }] })}\n\n`,
          ),
        );
        res.end('data: [DONE]\n\n');
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const p = policy(url, 'marti', { instructions: 'chat', stream: true });
    const [g] = await p.generate([fmt.prompt(rootPrompt(task))], {
      maxNewTokens: 40,
      temperature: 0,
      stopTokens: [fmt.eos],
      rng: new Rng(1),
    });
    expect(g!.text).toBe(pieces.join(''));
    expect(g!.program).toBe('sort | reverse');
  });

  it('takes the first line that parses after a label, and keeps a malformed answer malformed', async () => {
    const answers = ['Program: `sort | reverse`\nThis sorts, then reverses.', 'I am not sure how to do this.'];
    const s = await scripted('llamacpp', () => chatReply(answers.shift()!));
    const p = policy(s.baseUrl, 'marti', { instructions: 'chat' });
    const opts = { maxNewTokens: 40, temperature: 0, stopTokens: [fmt.eos], rng: new Rng(1) };
    const [a] = await p.generate([fmt.prompt(rootPrompt(task))], opts);
    expect(a!.program).toBe('sort | reverse');
    expect(a!.repair).toBe('label or backticks dropped; prose around the program dropped');
    const [b] = await p.generate([fmt.prompt(rootPrompt(task))], opts);
    const read = readCompletion(fmt, b!, task, {});
    expect(read.evaluation.program).toBeNull();
    expect(read.evaluation.parseError?.kind).toBe('parse');
    expect(s.seen.filter((x) => x.method === 'GET')).toHaveLength(0); // explicit "chat" asks nothing first
  });

  it('a whole MARTI evaluation through a chat endpoint: nodes keep the raw answer and score the program', async () => {
    const s = await scripted('ollama', () => chatReply(`\`\`\`\n${task.target}\n\`\`\``));
    const models = new Map(paramIdsOf(martiCfg).map((pid) => [pid, policy(s.baseUrl, 'marti')]));
    const { trees } = await evaluateMartiDetailed(martiCfg, models, { tplus: false });
    const node = trees.pass1[0]!.nodes[1]!;
    expect(node.payload!.completion).toBe(`\`\`\`\n${task.target}\n\`\`\``);
    expect(node.privateScore).toBe(1);
  });
});

describe('an endpoint evaluation gives its endpoints the algorithm’s chat template', () => {
  it('mars-lab eval of MARTI against a chat server: asked in chat, answers read out of their fences', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-chat-eval-'));
    try {
      const s = await scripted('vllm', (q) =>
        q.path === '/v1/chat/completions' ? chatReply(`Here you go:\n\`\`\`\n${task.target}\n\`\`\``) : undefined,
      );
      const c = structuredClone(martiCfg);
      for (const a of c.marti.agents) {
        a.policy = endpointSourceSchema.parse({ kind: 'endpoint', baseUrl: s.baseUrl, model: 'm' });
      }
      const warnings: string[] = [];
      const result = await evaluateWithEndpoints(home, martiConfigSchema.parse(c), {
        onWarning: (l) => warnings.push(l),
      });
      expect(result.items.map((i) => [i.id, i.correct])).toEqual([[task.id, true]]);
      expect(new Set(s.seen.map((x) => `${x.method} ${x.path}`))).toEqual(
        new Set(['GET /v1/models', 'POST /v1/chat/completions']),
      );
      expect(warnings).toEqual([expect.stringMatching(/an answer needed repair \(code fence stripped\)/)]);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('MARTI reads an endpoint’s program losslessly', () => {
  it('a word outside the vocabulary fails the program, named, instead of being dropped', async () => {
    const s = await scripted('vllm', (q) =>
      q.path === '/v1/completions' ? completionReply('apply "zyzzyva" <eos>') : undefined,
    );
    const p = policy(s.baseUrl, 'marti', { instructions: 'none' });
    const [g] = await p.generate([fmt.prompt(rootPrompt(task))], {
      maxNewTokens: 40,
      temperature: 0,
      stopTokens: [fmt.eos],
      rng: new Rng(1),
    });
    expect(g!.text).toBe('apply "zyzzyva"');
    const read = readCompletion(fmt, g!, task, {});
    expect(read.completion).toBe('apply "zyzzyva"');
    expect(read.evaluation.program).toBeNull();
    expect(read.evaluation.parseError).toEqual({
      kind: 'parse',
      message: 'unknown word zyzzyva: not in the MARTI vocabulary',
      position: 7,
    });
  });

  it('a program the tokens hold exactly is read from them, as in-process', async () => {
    const s = await scripted('vllm', () => completionReply(said('sort | reverse <eos>')));
    const p = policy(s.baseUrl, 'marti', { instructions: 'none' });
    const [g] = await p.generate([fmt.prompt(rootPrompt(task))], {
      maxNewTokens: 40,
      temperature: 0,
      stopTokens: [fmt.eos],
      rng: new Rng(1),
    });
    expect(g).not.toHaveProperty('text');
    expect(readCompletion(fmt, g!, task, {}).completion).toBe('sort | reverse');
  });
});

describe('"chat": MARS System 2 and System 1 as a chat model writes them', () => {
  it('a whole episode: prose, odd tag case, a dropped stop and a fence are repaired, and the answer is right', async () => {
    const cfg = marsConfigSchema.parse({ algorithm: 'mars', eval: { items: 8 } });
    const q = evalQuestions(cfg).find((x) => x.family === 'direct')!;
    const gold = q.answers[0]!;
    const format = corpusFormat();
    const said = (text: string): string => format.decode(format.encode(text)); // the run's normal form
    const sys2Asks: { role: string; content: string }[][] = [];
    const s = await scripted('vllm', (seen) => {
      const messages = seen.body.messages as { role: string; content: string }[];
      const system = messages[0]!.content;
      if (system.startsWith('You read pages')) {
        // System 1: quote the sentence of the pages that holds the gold answer
        const pages = messages.at(-1)!.content;
        const sentence = pages.split(/(?<=\.)\s+|\n/).find((x) => x.includes(said(gold)));
        return chatReply(`Here is what the pages say:\n${sentence ?? 'nothing relevant'}`);
      }
      sys2Asks.push(messages);
      const last = messages.at(-1)!;
      if (!last.content.startsWith('<info>')) {
        // first turn: prose, capitalised tags, and the server dropped the stop </search>
        return chatReply(
          `I'll look this up.\n<THINK>I need a page</THINK>\n<Purpose>${q.text}</Purpose>\n<search>${q.text}`,
        );
      }
      const answer = last.content.includes(said(gold)) ? said(gold) : 'unknown';
      return chatReply(`\`\`\`\n<think>the info says</think> <answer>${answer}</answer>\n\`\`\``);
    });
    const warnings: string[] = [];
    const p = policy(s.baseUrl, 'mars', {}, warnings);
    const [t] = await rolloutBatch({ sys2: p, sys1: p }, format, [q], rolloutSettings(cfg, 0), new Rng(3));
    expect(t!.end).toBe('answer');
    expect(t!.answer).toBe(said(gold));
    expect(t!.reward).toBe(1);
    expect(format.decode(t!.turns[0]!.tokens)).toBe(
      said(`<think> I need a page </think> <purpose> ${q.text} </purpose> <search> ${q.text} </search>`),
    );
    expect(t!.turns[0]!.sys1.length).toBeGreaterThan(0);
    // the second System 2 request replays the episode as a chat: question, the turn, the <info> block
    expect(sys2Asks[1]!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(sys2Asks[1]![1]!.content).toBe(said(q.text));
    expect(sys2Asks[1]![2]!.content).toBe(format.decode(t!.turns[0]!.tokens));
    expect(sys2Asks[1]![3]!.content).toMatch(/^<info>.*<\/info>$/);
    // the worked example is a training world's question, never the one asked
    expect(sys2Asks[0]![0]!.content).toMatch(/Example\.\nUser: .*\nYou: <think>/);
    expect(sys2Asks[0]![0]!.content).not.toContain(`User: ${q.text}`);
    expect(Object.keys(p.repairs.kinds).sort()).toEqual([
      'code fence stripped',
      'preamble dropped',
      'prose around the turn dropped',
      'tag names normalised',
    ]);
    expect(warnings).toHaveLength(4);
    // the last turn says so: only an answer counts there
    const dialect = chatDialectFor('mars', format.tokenizer);
    const prompt = format.sys2Prompt(q.text);
    expect(dialect.chat(prompt)!.messages.at(-1)!.content).toBe(said(q.text));
    expect(dialect.chat(prompt, { final: true })!.messages.at(-1)!.content).toBe(`${said(q.text)}\n${FINAL_TURN}`);
  });
});
