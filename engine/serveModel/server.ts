/**
 * `serve-model`'s HTTP server: a mars-lab checkpoint behind OpenAI's `/v1/models`, `/v1/completions` and
 * `/v1/chat/completions` (request forms and the chat template: protocol.ts), with per-token log-probs and streaming
 * (server-sent events) and top-k alternatives (logprobs.ts), every request going through one GenerationQueue
 * (batcher.ts: continuous batching) as a job (jobs.ts).
 *
 * Web mode's rules: it binds loopback unless told `--allow-remote` (webServer.ts resolveBindHost), answers only to its
 * own names (the Host header, against DNS rebinding), and every request needs the random token printed at start, as
 * an OpenAI API key (`Authorization: Bearer TOKEN`), compared in constant time.
 */
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { isLoopbackHost, parseHostHeader, resolveBindHost, targetPath } from '../api/web/webServer';
import type { LlamaModel } from '../model/llama';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import { GenerationQueue, type GenerationResult, type TopToken } from './batcher';
import { jobMaker, type Job } from './jobs';
import { chatLogprobs, completionLogprobs } from './logprobs';
import {
  chatPromptText,
  chatRequestSchema,
  completionRequestSchema,
  errorBody,
  HttpError,
  type CompletionRequest,
} from './protocol';

export interface ModelServerOptions {
  model: LlamaModel;
  tokenizer: Tokenizer;
  /** The id clients name in `model`. */
  modelName: string;
  port?: number;
  bindHost?: string;
  allowRemote?: boolean;
  token?: string;
  maxBatch?: number;
  seed?: number;
}

export interface ModelServer {
  readonly port: number;
  readonly baseUrl: string;
  readonly token: string;
  readonly queue: GenerationQueue;
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024 * 1024;

function sameSecret(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function zodProblem(err: z.ZodError): string {
  const i = err.issues[0]!;
  return `${i.path.length ? i.path.join('.') : '(body)'}: ${i.message}`;
}

export async function startModelServer(o: ModelServerOptions): Promise<ModelServer> {
  const bindHost = o.bindHost ?? '127.0.0.1';
  const bind = await resolveBindHost(bindHost, o.allowRemote ?? false, o.port);
  const token = o.token ?? randomBytes(24).toString('base64url');
  const tok = o.tokenizer;
  const decode = (ids: number[], skipSpecial = false): string => tok.decode(ids, { skipSpecial });
  const queue = new GenerationQueue(o.model, (ids) => decode(ids), o.maxBatch ?? 64, o.seed ?? 0);
  const maxCtx = o.model.config.max_position_embeddings;
  const bosText = tok.specials.bos !== undefined ? tok.tokenOf(tok.specials.bos) : '';
  const created = Math.floor(Date.now() / 1000);
  let port = 0;

  const remoteNames = new Set<string>();
  if (!bind.loopback) {
    remoteNames.add(
      bindHost
        .trim()
        .replace(/^\[|\]$/g, '')
        .toLowerCase(),
    );
    remoteNames.add(bind.address.toLowerCase());
    if (bind.wildcard) remoteNames.add(os.hostname().toLowerCase());
  }
  const hostAllowed = (value: string | undefined): boolean => {
    const h = parseHostHeader(value);
    if (!h || h.port !== port) return false;
    const bare = h.name.replace(/^\[|\]$/g, '');
    return isLoopbackHost(bare) || remoteNames.has(bare) || (bind.wildcard && net.isIP(bare) !== 0);
  };

  const send = (res: http.ServerResponse, status: number, body: string): void => {
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(body);
  };

  const readBody = (req: http.IncomingMessage): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) {
          reject(new HttpError(413, `request body over ${MAX_BODY} bytes`));
          req.destroy();
        } else chunks.push(c);
      });
      req.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new HttpError(400, 'the request body is not valid JSON'));
        }
      });
      req.on('error', reject);
    });

  const checkModel = (name: string): void => {
    if (name !== o.modelName) {
      throw new HttpError(
        404,
        `The model \`${name}\` does not exist; this server serves \`${o.modelName}\` (GET /v1/models)`,
        'invalid_request_error',
        'model_not_found',
      );
    }
  };

  const promptIds = (prompt: CompletionRequest['prompt']): number[] => {
    if (Array.isArray(prompt) && typeof prompt[0] === 'number') {
      const ids = prompt as number[];
      const bad = ids.find((i) => i >= tok.vocabSize);
      if (bad !== undefined) {
        throw new HttpError(400, `prompt: token id ${bad} is outside the vocabulary (size ${tok.vocabSize})`);
      }
      return ids;
    }
    const text = Array.isArray(prompt) ? (prompt[0] as string) : prompt;
    const ids = tok.encode(text);
    if (ids.length === 0) {
      throw new HttpError(400, "prompt: empty; the model needs at least one token (e.g. the tokenizer's <bos>)");
    }
    return ids;
  };

  const { jobOf, visible } = jobMaker(tok, maxCtx);

  const run = async (
    job: Job,
    res: http.ServerResponse,
    stream: boolean,
    chunk: (
      piece: string,
      ids: number[],
      lps: number[],
      tops: TopToken[][],
      finish: string | null,
      stopReason: unknown,
    ) => unknown,
  ): Promise<GenerationResult> => {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const ask = {
      prompt: job.prompt,
      maxTokens: job.maxTokens,
      temperature: job.temperature,
      topP: job.topP,
      stopIds: job.stop.ids,
      stopStrings: job.stop.strings,
      seed: job.seed,
      topLogprobs: job.topK,
      signal: abort.signal,
    };
    if (!stream) return queue.submit(ask);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    const write = (obj: unknown): void => void res.write(`data: ${JSON.stringify(obj)}\n\n`);
    // Tokens go out as they are drawn; a stop token is held back until we know whether the client wants it, and with
    // stop strings everything waits for the end (a stop string's first tokens must not have been sent).
    const sent: number[] = [];
    let sentText = '';
    const flush = (
      ids: number[],
      lps: number[],
      tops: TopToken[][],
      upTo: number,
      finish: string | null,
      stopReason: unknown,
    ): void => {
      const newIds = ids.slice(sent.length, upTo);
      const newLps = lps.slice(sent.length, upTo);
      const newTops = tops.slice(sent.length, upTo);
      const full = decode(ids.slice(0, upTo), job.skipSpecial);
      const piece = full.startsWith(sentText) ? full.slice(sentText.length) : '';
      if (newIds.length === 0 && finish === null) return;
      sent.push(...newIds);
      sentText = full.startsWith(sentText) ? full : sentText;
      write(chunk(piece, newIds, newLps, newTops, finish, stopReason));
    };
    const all: number[] = [];
    const allLps: number[] = [];
    const allTops: TopToken[][] = [];
    const g = await queue.submit({
      ...ask,
      onToken: (id, lp, top) => {
        all.push(id);
        allLps.push(lp);
        if (top) allTops.push(top);
        if (job.stop.strings.length === 0 && !job.stop.ids.includes(id)) {
          flush(all, allLps, allTops, all.length, null, null);
        }
      },
    });
    const v = visible(job, g);
    const upTo = v.ids.length;
    if (job.stop.strings.length > 0 && g.finish === 'stop' && !job.includeStop) {
      // the stop string is cut from the text: send the text, then the last chunk
      const text = v.text;
      const piece = text.startsWith(sentText) ? text.slice(sentText.length) : '';
      write(
        chunk(
          piece,
          v.ids.slice(sent.length),
          v.logProbs.slice(sent.length),
          v.tops.slice(sent.length),
          v.finish,
          g.stopReason,
        ),
      );
    } else flush(v.ids, v.logProbs, v.tops, upTo, v.finish, g.stopReason);
    res.write('data: [DONE]\n\n');
    res.end();
    return g;
  };

  const completions = async (body: unknown, res: http.ServerResponse): Promise<void> => {
    const parsed = completionRequestSchema.safeParse(body);
    if (!parsed.success) throw new HttpError(400, zodProblem(parsed.error));
    const r = parsed.data;
    checkModel(r.model);
    const prompt = promptIds(r.prompt);
    const job = jobOf(r, prompt, r.max_tokens ?? 16, r.logprobs ?? 0);
    const id = `cmpl-${randomUUID()}`;
    const base = { id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: o.modelName };
    if (r.stream) {
      await run(job, res, true, (piece, ids, lps, tops, finish, stopReason) => ({
        ...base,
        choices: [
          {
            index: 0,
            text: piece,
            logprobs: completionLogprobs(tok, ids, lps, tops, r.logprobs),
            finish_reason: finish,
            stop_reason: finish ? (stopReason ?? null) : null,
          },
        ],
      }));
      return;
    }
    const g = await run(job, res, false, () => null);
    const v = visible(job, g);
    send(
      res,
      200,
      JSON.stringify({
        ...base,
        choices: [
          {
            index: 0,
            text: v.text,
            logprobs: completionLogprobs(tok, v.ids, v.logProbs, v.tops, r.logprobs),
            finish_reason: v.finish,
            stop_reason: g.stopReason,
          },
        ],
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: g.tokens.length,
          total_tokens: prompt.length + g.tokens.length,
        },
      }),
    );
  };

  const chat = async (body: unknown, res: http.ServerResponse): Promise<void> => {
    const parsed = chatRequestSchema.safeParse(body);
    if (!parsed.success) throw new HttpError(400, zodProblem(parsed.error));
    const r = parsed.data;
    checkModel(r.model);
    const prompt = promptIds(chatPromptText(r.messages, bosText));
    const job = jobOf(r, prompt, r.max_completion_tokens ?? r.max_tokens, r.logprobs ? (r.top_logprobs ?? 0) : 0);
    const id = `chatcmpl-${randomUUID()}`;
    const base = { id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: o.modelName };
    if (r.stream) {
      let first = true;
      await run(job, res, true, (piece, ids, lps, tops, finish, stopReason) => {
        const delta = first ? { role: 'assistant', content: piece } : { content: piece };
        first = false;
        return {
          ...base,
          object: 'chat.completion.chunk',
          choices: [
            {
              index: 0,
              delta,
              logprobs: chatLogprobs(tok, ids, lps, tops, r.logprobs),
              finish_reason: finish,
              stop_reason: finish ? (stopReason ?? null) : null,
            },
          ],
        };
      });
      return;
    }
    const g = await run(job, res, false, () => null);
    const v = visible(job, g);
    send(
      res,
      200,
      JSON.stringify({
        ...base,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: v.text },
            logprobs: chatLogprobs(tok, v.ids, v.logProbs, v.tops, r.logprobs),
            finish_reason: v.finish,
            stop_reason: g.stopReason,
          },
        ],
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: g.tokens.length,
          total_tokens: prompt.length + g.tokens.length,
        },
      }),
    );
  };

  const modelEntry = { id: o.modelName, object: 'model', created, owned_by: 'mars-lab', max_model_len: maxCtx };

  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        if (!hostAllowed(req.headers.host)) {
          throw new HttpError(
            403,
            'this server answers only to its own address (Host header refused)',
            'permission_error',
          );
        }
        const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
        if (!auth || !sameSecret(auth[1]!.trim(), token)) {
          throw new HttpError(
            401,
            'missing or wrong API key: send the token serve-model printed at start as the API key (Authorization: Bearer TOKEN)',
            'invalid_request_error',
            'invalid_api_key',
          );
        }
        const p = targetPath(req.url)?.replace(/\/$/, '') ?? '';
        if (req.method === 'GET' && p === '/v1/models') {
          return send(res, 200, JSON.stringify({ object: 'list', data: [modelEntry] }));
        }
        if (req.method === 'GET' && p.startsWith('/v1/models/')) {
          checkModel(p.slice('/v1/models/'.length));
          return send(res, 200, JSON.stringify(modelEntry));
        }
        if (req.method === 'POST' && p === '/v1/completions') return await completions(await readBody(req), res);
        if (req.method === 'POST' && p === '/v1/chat/completions') return await chat(await readBody(req), res);
        throw new HttpError(
          404,
          `no such endpoint: ${req.method} ${p || '(bad target)'}; serve-model answers GET /v1/models, POST /v1/completions and /v1/chat/completions`,
          'invalid_request_error',
          'not_found',
        );
      } catch (err) {
        const e =
          err instanceof HttpError
            ? err
            : new HttpError(500, `internal error: ${(err as Error).message}`, 'server_error');
        if (res.headersSent) return void res.destroy();
        send(res, e.status, errorBody(e.message, e.type, e.code));
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, bind.address, () => resolve());
  });
  port = (server.address() as net.AddressInfo).port;
  const shown = bind.wildcard ? '127.0.0.1' : net.isIPv6(bind.address) ? `[${bind.address}]` : bind.address;
  return {
    port,
    baseUrl: `http://${shown}:${port}/v1`,
    token,
    queue,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
