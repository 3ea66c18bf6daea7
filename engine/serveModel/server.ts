/**
 * `serve-model`'s HTTP server: a mars-lab checkpoint or a real model (with its chat template) behind OpenAI's `/v1/models`, `/v1/completions` and
 * `/v1/chat/completions` (request forms and the chat template: protocol.ts), with per-token log-probs and streaming
 * (server-sent events) and top-k alternatives (logprobs.ts), every request going through one GenerationQueue
 * (batcher.ts: continuous batching) as a job (jobs.ts).
 *
 * Web mode's rules: it binds loopback unless told `--allow-remote` (webServer.ts resolveBindHost), answers only to its
 * own names (the Host header, against DNS rebinding), and every request needs the random token printed at start, as
 * an OpenAI API key (`Authorization: Bearer TOKEN`), compared in constant time (access.ts).
 *
 * This file starts the server and routes each request; the generation routes are routes.ts, reading and checking a
 * request requests.ts, running a job whole or streamed streaming.ts.
 */
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { listenOn, resolveBindHost, targetPath } from '../api/web/webServer';
import type { ChatEncoder } from '../model/chat/chatEncoding';
import type { LlamaModel } from '../model/llama';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import { checkAccess, hostChecker } from './access';
import { GenerationQueue } from './batcher';
import { jobMaker } from './jobs';
import { errorBody, HttpError } from './protocol';
import { checkModel, readBody, sendJson } from './requests';
import { chat, completions, type RouteContext } from './routes';

export interface ModelServerOptions {
  model: LlamaModel;
  tokenizer: Tokenizer;
  /**
   * A real model (engine/model/realModel.ts) instead of a mars-lab checkpoint: raw prompts get the bos its tokenizer
   * config asks for, chats go through its chat template with the generation prompt (refused without one), its
   * end-of-turn token stops a row as eos does, and /v1/models lists it as owned by "mars-lab-real-model", so an
   * endpoint source's "auto" instructions talk to it as a chat model.
   */
  real?: { encoder: ChatEncoder | null; stopTokens: number[]; encode: (text: string) => number[] };
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

/** The `/v1/models` entry of the served model. */
interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'mars-lab' | 'mars-lab-real-model';
  max_model_len: number;
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

  const hostAllowed = hostChecker(bindHost, bind, () => port);
  const real = o.real;
  const { jobOf, visible } = jobMaker(tok, maxCtx, real?.stopTokens ?? []);
  const ctx: RouteContext = {
    queue,
    decode,
    visible,
    tok,
    modelName: o.modelName,
    bosText,
    encode: real?.encode ?? ((text) => tok.encode(text)),
    ...(real ? { chatPrompt: real.encoder ? (messages) => real.encoder!.prompt(messages).ids : null } : {}),
    jobOf,
  };
  const modelEntry: ModelEntry = {
    id: o.modelName,
    object: 'model',
    created,
    owned_by: real ? 'mars-lab-real-model' : 'mars-lab',
    max_model_len: maxCtx,
  };

  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        checkAccess(req.headers, hostAllowed, token);
        await route(ctx, modelEntry, req, res);
      } catch (err) {
        const e =
          err instanceof HttpError
            ? err
            : new HttpError(500, `internal error: ${(err as Error).message}`, 'server_error');
        if (res.headersSent) return void res.destroy();
        sendJson(res, e.status, errorBody(e.message, e.type, e.code));
      }
    })();
  });
  await listenOn(server, o.port ?? 0, bind.address, bindHost);
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

/** An admitted request to its endpoint: the model list, one model, the two generation routes, else 404. */
async function route(
  ctx: RouteContext,
  modelEntry: ModelEntry,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const p = targetPath(req.url)?.replace(/\/$/, '') ?? '';
  if (req.method === 'GET' && p === '/v1/models') {
    return sendJson(res, 200, JSON.stringify({ object: 'list', data: [modelEntry] }));
  }
  if (req.method === 'GET' && p.startsWith('/v1/models/')) {
    checkModel(p.slice('/v1/models/'.length), ctx.modelName);
    return sendJson(res, 200, JSON.stringify(modelEntry));
  }
  if (req.method === 'POST' && p === '/v1/completions') return await completions(ctx, await readBody(req, res), res);
  if (req.method === 'POST' && p === '/v1/chat/completions') return await chat(ctx, await readBody(req, res), res);
  throw new HttpError(
    404,
    `no such endpoint: ${req.method} ${p || '(bad target)'}; serve-model answers GET /v1/models, POST /v1/completions and /v1/chat/completions`,
    'invalid_request_error',
    'not_found',
  );
}
