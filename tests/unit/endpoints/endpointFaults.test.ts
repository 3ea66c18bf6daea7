/**
 * Endpoint faults, each one clear line (issue 20): an unreachable endpoint, a wrong model name (404), a refused key
 * (401), a missing key variable, malformed JSON, a stream cut mid-way, a server error after the retries, and an
 * answer over the turn's token budget (cut to it, one warning). Also: a server that drops the stop string gets it
 * put back, retries with backoff get through a 429, and the concurrency limit holds.
 * Fake servers on 127.0.0.1 only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EndpointError } from '../../../engine/policy/endpointClient';
import { EndpointPolicy } from '../../../engine/policy/endpointPolicy';
import { endpointSourceSchema } from '../../../engine/policy/policySource';
import { martiFormat } from '../../../engine/marti/format';
import { marsFormat } from '../../../engine/mars/questionSets';
import { Rng } from '../../../engine/random/prng';

type Handler = (req: http.IncomingMessage, body: Record<string, unknown>, res: http.ServerResponse) => void;
const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

async function fake(handler: Handler): Promise<string> {
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => handler(req, data ? JSON.parse(data) : {}, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const json = (res: http.ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};
const completion = (text: string, finish = 'stop', extra: Record<string, unknown> = {}) => ({
  id: 'x',
  object: 'text_completion',
  choices: [{ index: 0, text, finish_reason: finish, ...extra }],
});

function policy(
  baseUrl: string,
  over: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = {},
  warnings: string[] = [],
  tokenizer = martiFormat().tokenizer,
) {
  const source = endpointSourceSchema.parse({
    kind: 'endpoint',
    baseUrl,
    model: 'm',
    maxRetries: 0,
    timeoutMs: 5000,
    ...over,
  });
  return new EndpointPolicy({ source, tokenizer, label: 'agent alpha', env, onWarning: (l) => warnings.push(l) });
}

const fmt = martiFormat();
const ask = (p: EndpointPolicy, maxNewTokens = 8) =>
  p.generate([fmt.prompt('problem : x .')], { maxNewTokens, temperature: 0, stopTokens: [fmt.eos], rng: new Rng(1) });

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(EndpointError);
    const m = (err as Error).message;
    expect(m).not.toContain('\n');
    return m;
  }
  throw new Error('expected a failure');
}

describe('endpoint faults: one clear line each', () => {
  it('an unreachable endpoint', async () => {
    const url = await fake(() => {});
    const port = new URL(url).port;
    await new Promise((r) => servers.pop()!.close(r));
    const m = await failure(ask(policy(`http://127.0.0.1:${port}/v1`)));
    expect(m).toMatch(/agent alpha \(m at http:\/\/127\.0\.0\.1:\d+\/v1\): cannot reach the server \(ECONNREFUSED\)/);
  });

  it('a wrong model name (404)', async () => {
    const url = await fake((_q, _b, res) =>
      json(res, 404, {
        error: { message: 'The model `m` does not exist', type: 'invalid_request_error', code: 'model_not_found' },
      }),
    );
    expect(await failure(ask(policy(url)))).toMatch(
      /not found \(404\): no model "m" there \(GET .*\/v1\/models lists them\)/,
    );
  });

  it('401 without a key, and the key variable named but not set', async () => {
    const url = await fake((req, _b, res) =>
      req.headers.authorization === 'Bearer right'
        ? json(res, 200, completion('map ( x ) <eos>'))
        : json(res, 401, { error: { message: 'bad key' } }),
    );
    expect(await failure(ask(policy(url)))).toMatch(
      /refused the API key \(401\); add "apiKeyEnv": "NAME" to this policy/,
    );
    expect(await failure(ask(policy(url, { apiKeyEnv: 'EP_KEY' }, { EP_KEY: 'wrong' })))).toMatch(
      /refused the API key \(401\); set EP_KEY to a key this server accepts/,
    );
    expect(() => policy(url, { apiKeyEnv: 'EP_KEY' }, {})).toThrow(
      /the environment variable EP_KEY \(apiKeyEnv\) is not set or empty/,
    );
    const [g] = await ask(policy(url, { apiKeyEnv: 'EP_KEY' }, { EP_KEY: 'right' }));
    expect(fmt.decodeCompletion(g!.tokens)).toBe('map (x)');
  });

  it('malformed JSON, and JSON that is not a completion', async () => {
    const url = await fake((_q, _b, res) => json(res, 200, '{"choices": [ {"text": "map'));
    expect(await failure(ask(policy(url)))).toMatch(/not valid JSON \(malformed response\)/);
    const url2 = await fake((_q, _b, res) => json(res, 200, { hello: 'world' }));
    expect(await failure(ask(policy(url2)))).toMatch(/the answer is not a completion/);
  });

  it('a stream cut mid-way', async () => {
    const url = await fake((_q, _b, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: 'map', finish_reason: null }] })}\n\n`);
      setTimeout(() => res.socket?.destroy(), 20);
    });
    expect(await failure(ask(policy(url, { stream: true })))).toMatch(
      /the stream ended before the completion finished|the connection was cut mid-answer/,
    );
  });

  it('a server error that outlasts the retries; a 429 that retries with backoff get through', async () => {
    const url = await fake((_q, _b, res) => json(res, 503, { error: { message: 'overloaded' } }));
    expect(await failure(ask(policy(url, { maxRetries: 1 })))).toMatch(
      /the server answered 503 after 1 retries: 503 overloaded/,
    );
    let calls = 0;
    const url2 = await fake((_q, _b, res) =>
      ++calls < 3
        ? (res.setHeader('retry-after-ms', '10'), json(res, 429, { error: { message: 'slow down' } }))
        : json(res, 200, completion('map ( x ) <eos>')),
    );
    const [g] = await ask(policy(url2, { maxRetries: 3 }));
    expect(calls).toBe(3);
    expect(g!.finish).toBe('stop');
  });

  it('an answer over the turn budget is cut to it, with one warning line', async () => {
    const url = await fake((_q, _b, res) => json(res, 200, completion(Array(40).fill('x').join(' '), 'length')));
    const warnings: string[] = [];
    const p = policy(url, {}, {}, warnings);
    const [g] = await ask(p, 6);
    expect(g!.tokens).toHaveLength(6);
    expect(g!.finish).toBe('length');
    await ask(p, 6);
    expect(warnings).toEqual([
      expect.stringMatching(/^agent alpha: an answer of 40 tokens .* over the turn's budget of 6: cut to 6/),
    ]);
  });
});

describe('endpoint answers read into the run tokenizer', () => {
  it('a stop the server dropped is put back: by stop_reason, by the open tag, else EOS', async () => {
    const mars = marsFormat();
    const answers = [
      completion('<think> x </think> <search> vorana born'),
      completion('<answer> marne', 'stop', { stop_reason: '</answer>' }),
      completion('nothing open'),
    ];
    const url = await fake((_q, _b, res) => json(res, 200, answers.shift()));
    const p = policy(url, {}, {}, [], mars.tokenizer);
    const opts = { maxNewTokens: 16, temperature: 0, stopTokens: mars.sys2Stops, rng: new Rng(1) };
    const last = async () =>
      mars.tokenizer.tokenOf((await p.generate([mars.sys2Prompt('where')], opts))[0]!.tokens.at(-1)!);
    expect(await last()).toBe('</search>');
    expect(await last()).toBe('</answer>');
    expect(await last()).toBe('<eos>');
  });

  it('concurrency: at most `concurrency` requests in flight; the rest wait', async () => {
    let inFlight = 0;
    let most = 0;
    const url = await fake((_q, _b, res) => {
      most = Math.max(most, ++inFlight);
      setTimeout(() => (inFlight--, json(res, 200, completion('map ( x ) <eos>'))), 30);
    });
    const p = policy(url, { concurrency: 3 });
    const gens = await p.generate(
      Array.from({ length: 10 }, () => fmt.prompt('problem : x .')),
      { maxNewTokens: 8, temperature: 0, stopTokens: [fmt.eos], rng: new Rng(1) },
    );
    expect(gens).toHaveLength(10);
    expect(most).toBe(3);
  });

  it('a stopped evaluation cancels the requests in flight', async () => {
    const url = await fake(() => {}); // never answers
    const abort = new AbortController();
    const source = endpointSourceSchema.parse({ kind: 'endpoint', baseUrl: url, model: 'm', maxRetries: 0 });
    const p = new EndpointPolicy({ source, tokenizer: fmt.tokenizer, label: 'agent alpha', signal: abort.signal });
    const pending = ask(p);
    setTimeout(() => abort.abort(), 50);
    await expect(pending).rejects.toThrow(/agent alpha: stopped; requests in flight were cancelled/);
  });
});
