/**
 * serve-model's request side: the JSON body read (capped at 16 MiB: 413 beyond, sent whole, and the rest of the body
 * drained before the socket closes; 400 when not JSON), a schema failure said as one line naming the field, the model
 * a request names checked against the one served (404 model_not_found), and a prompt (text or token ids) turned into
 * the ids the model is given. Answers go out through sendJson.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { z } from 'zod';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import { HttpError, type CompletionRequest } from './protocol';

export const MAX_BODY = 16 * 1024 * 1024;

/**
 * After a 413 the rest of the body is read and dropped, up to MAX_DRAIN bytes more and for LINGER_MS at most, and only
 * then is the socket closed. Node ends a `Connection: close` answer by destroying the socket once the answer is written
 * (socket.destroySoon); bytes the client is still sending then make the kernel reset the connection, and a client
 * that meets the reset while writing (Node's http, fetch: EPIPE) loses the 413 it had already been sent, about one
 * time in ten on loopback (RFC 9112 §9.6, "lingering close"). So the answer ends with a half-close (FIN) and the body
 * is drained: the socket closes when the body ends, when the client closes, or at a bound (then with a reset).
 */
const MAX_DRAIN = 256 * 1024 * 1024;
const LINGER_MS = 30_000;

/** Answer with `Connection: close`, half-close once the answer is out, close once the rest of the body is read. */
function lingerAfterAnswer(req: http.IncomingMessage, res: http.ServerResponse): void {
  res.shouldKeepAlive = false;
  const socket = req.socket;
  let bodyDone = req.readableEnded;
  let answerOut = false;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  const closeWhenDone = (): void => {
    if (bodyDone && answerOut) socket.destroy();
  };
  // Node calls this once the answer is written (res._last); end() sends it and a FIN, and reading goes on
  socket.destroySoon = function (this: net.Socket): void {
    this.end(() => {
      answerOut = true;
      closeWhenDone();
    });
  };
  req.once('end', () => {
    bodyDone = true;
    closeWhenDone();
  });
}

export function readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    const refuse = (): void => {
      over = true;
      chunks.length = 0;
      lingerAfterAnswer(req, res);
      reject(new HttpError(413, `request body over ${MAX_BODY} bytes`));
    };
    if (Number(req.headers['content-length']) > MAX_BODY) refuse(); // said up front: no need to wait for it
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (over) {
        if (size > MAX_BODY + MAX_DRAIN) req.socket.destroy();
        return;
      }
      if (size > MAX_BODY) refuse();
      else chunks.push(c);
    });
    req.on('end', () => {
      if (over) return;
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'the request body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}

/** The first schema problem as `field: message`. */
export function zodProblem(err: z.ZodError): string {
  const i = err.issues[0]!;
  return `${i.path.length ? i.path.join('.') : '(body)'}: ${i.message}`;
}

/** A JSON answer (never cached, never sniffed as another type). */
export function sendJson(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}

/** Throws the OpenAI-style 404 unless `name` is the model this server serves (`served`). */
export function checkModel(name: string, served: string): void {
  if (name !== served) {
    throw new HttpError(
      404,
      `The model \`${name}\` does not exist; this server serves \`${served}\` (GET /v1/models)`,
      'invalid_request_error',
      'model_not_found',
    );
  }
}

/**
 * The prompt's token ids: given ids checked against the vocabulary, or the text encoded (never to nothing) by
 * `encode` (a real model's adds the bos its tokenizer config asks for, as transformers and vLLM do).
 */
export function promptIds(
  tok: Tokenizer,
  prompt: CompletionRequest['prompt'],
  encode: (text: string) => number[] = (t) => tok.encode(t),
): number[] {
  if (Array.isArray(prompt) && typeof prompt[0] === 'number') {
    const ids = prompt as number[];
    const bad = ids.find((i) => i >= tok.vocabSize);
    if (bad !== undefined) {
      throw new HttpError(400, `prompt: token id ${bad} is outside the vocabulary (size ${tok.vocabSize})`);
    }
    return ids;
  }
  const text = Array.isArray(prompt) ? (prompt[0] as string) : prompt;
  const ids = encode(text);
  if (ids.length === 0) {
    throw new HttpError(400, "prompt: empty; the model needs at least one token (e.g. the tokenizer's <bos>)");
  }
  return ids;
}
