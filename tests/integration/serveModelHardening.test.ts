/**
 * serve-model's edges (issue 34, Low), on the shipped MARTI base: a busy port is one line naming --port (CLI and
 * module), no stack; a body over the 16 MiB limit gets its 413 answer, whole, whether its size was declared or grew
 * while chunked (before, the socket was destroyed mid-upload: the client saw a reset), and the rest of the body is
 * drained so that a client still sending when the 413 arrives meets no reset; a streamed answer to a request that says
 * `Connection: close` says so and closes (before, keep-alive was forced).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../engine/model/formats/checkpoint';
import type { LlamaModel } from '../../engine/model/llama';
import { loadTokenizer, type Tokenizer } from '../../engine/model/tokenizers/tokenizer';
import { MAX_BODY } from '../../engine/serveModel/requests';
import { startModelServer, type ModelServer } from '../../engine/serveModel/server';
import { useBackend } from '../helpers/backends';

const CK = path.resolve('resources/marti/base-tiny');
const CLI = path.resolve('engine/bin/mars-lab.mjs');
let model: LlamaModel;
let tok: Tokenizer;
let server: ModelServer;

beforeAll(async () => {
  await useBackend('wasm');
  model = (await loadCheckpoint(CK)).model;
  tok = await loadTokenizer(path.join(CK, 'tokenizer.json'));
  server = await startModelServer({ model, tokenizer: tok, modelName: 'tiny', port: 0 });
}, 120_000);
afterAll(async () => {
  await server?.close();
  model?.dispose();
});

/** A POST to /v1/completions whose body is `bytes` of JSON-ish filler, sent in 1 MiB writes. */
function bigPost(bytes: number, declared: boolean): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${server.token}`,
      'content-type': 'application/json',
    };
    if (declared) headers['content-length'] = String(bytes);
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      path: '/v1/completions',
      method: 'POST',
      headers,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: `${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}` }));
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent);
        sent += n;
        if (!req.write(chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

/**
 * An oversize body (chunked, or of a declared length) whose sender goes on sending after it has read the 413, as a
 * client across a network does (its bytes are in flight when the answer arrives): `before` bytes, the answer awaited,
 * then `after` more in 1 MiB writes a few milliseconds apart and the body's end. Resolves with the answer and how the
 * exchange ended: 'clean' when every byte was taken and the server then closed, else the socket error the sender got
 * (a reset, a broken pipe) or 'timeout'.
 */
function sendOnAfter413(before: number, after: number, declared: boolean): Promise<{ answer: string; ending: string }> {
  return new Promise((resolve) => {
    // half-open: the server's FIN after its answer does not end our side, we go on sending as a client would
    const socket = net.connect({ host: '127.0.0.1', port: server.port, allowHalfOpen: true });
    let answer = '';
    let ending = '';
    let allSent = false;
    let answered!: () => void;
    const gotAnswer = new Promise<void>((r) => (answered = r));
    const finish = (how: string): void => {
      if (ending) return;
      ending = how;
      clearTimeout(timer);
      socket.destroy();
      answered();
      resolve({ answer, ending });
    };
    const timer = setTimeout(() => finish('timeout'), 30_000);
    socket.setEncoding('latin1').on('data', (c: string) => {
      answer += c;
      if (/\r\n\r\n[\s\S]*\}/.test(answer)) answered();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
    socket.on('close', () => finish(allSent ? 'clean' : 'closed before the body was sent'));
    const frame = (n: number): Buffer =>
      declared
        ? Buffer.alloc(n, 0x20)
        : Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 0x20), Buffer.from('\r\n')]);
    const write = (b: Buffer): Promise<void> => new Promise((r) => (ending ? r() : void socket.write(b, () => r())));
    void (async () => {
      await new Promise<void>((r) => socket.once('connect', () => r()));
      const framing = declared ? `Content-Length: ${before + after}` : 'Transfer-Encoding: chunked';
      await write(
        Buffer.from(
          `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${server.token}\r\n` +
            `Content-Type: application/json\r\n${framing}\r\n\r\n`,
        ),
      );
      for (let sent = 0; sent < before && !ending; sent += 1 << 20) {
        await write(frame(Math.min(1 << 20, before - sent)));
      }
      await gotAnswer;
      for (let sent = 0; sent < after && !ending; sent += 1 << 20) {
        await new Promise((r) => setTimeout(r, 5));
        await write(frame(Math.min(1 << 20, after - sent)));
      }
      if (!declared) await write(Buffer.from('0\r\n\r\n'));
      allSent = true;
      socket.end();
    })();
  });
}

describe('serve-model at its edges', () => {
  it('a busy port is one line naming --port, from the module and from the CLI, without a stack', async () => {
    await expect(startModelServer({ model, tokenizer: tok, modelName: 'tiny', port: server.port })).rejects.toThrow(
      new RegExp(`^port ${server.port} is in use: choose another with --port`),
    );
    const child = spawn(process.execPath, [CLI, 'serve-model', '--checkpoint', CK, '--port', String(server.port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code).not.toBe(0);
    expect(err.trim().split('\n'), err).toHaveLength(1);
    expect(err).toMatch(new RegExp(`mars-lab: port ${server.port} is in use`));
    expect(err).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('a body over the limit gets its 413 answer whole, declared or chunked, and the server keeps serving', async () => {
    for (const declared of [true, false]) {
      const r = await bigPost(MAX_BODY + (4 << 20), declared);
      expect(r, `declared ${declared}`).toMatchObject({ status: 413 });
      expect(JSON.parse((r as { body: string }).body).error.message).toMatch(/request body over 16777216 bytes/);
    }
    const ok = await fetch(`http://127.0.0.1:${server.port}/v1/models`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(ok.status).toBe(200);
  }, 60_000);

  it('the rest of an oversize body is read and dropped after the 413, so a client still sending sees no reset', async () => {
    // before, the socket was destroyed as soon as the 413 was out: the bytes still arriving made the kernel reset the
    // connection, and a real client (Node's http, fetch) racing that reset lost the answer about one time in ten
    for (const declared of [false, true]) {
      const before = declared ? 1 << 20 : MAX_BODY + (1 << 20);
      const r = await sendOnAfter413(before, MAX_BODY + (8 << 20) - before, declared);
      expect(r.answer, `declared ${declared}`).toMatch(/^HTTP\/1\.1 413 /);
      expect(r.answer.toLowerCase()).toMatch(/\r\nconnection: close\r\n/);
      expect(JSON.parse(/\{.*\}/s.exec(r.answer.slice(r.answer.indexOf('\r\n\r\n')))![0]).error.message).toMatch(
        /request body over/,
      );
      expect(r.ending, `declared ${declared}`).toBe('clean');
    }
  }, 90_000);

  it('a streamed answer to a request saying Connection: close says close and closes the socket', async () => {
    const body = JSON.stringify({ model: 'tiny', prompt: '<bos> problem :', max_tokens: 4, stream: true });
    const got = await new Promise<{ text: string; closed: boolean }>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port: server.port });
      let text = '';
      const timer = setTimeout(() => (socket.destroy(), resolve({ text, closed: false })), 20_000);
      socket.setEncoding('utf8').on('data', (c: string) => (text += c));
      socket.on('end', () => (clearTimeout(timer), resolve({ text, closed: true })));
      socket.write(
        `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${server.token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    const head = got.text.slice(0, got.text.indexOf('\r\n\r\n')).toLowerCase();
    expect(head).toMatch(/^http\/1\.1 200/);
    expect(head).toMatch(/\r\nconnection: close(\r\n|$)/);
    expect(head).not.toMatch(/keep-alive/);
    expect(got.text).toContain('data: [DONE]');
    expect(got.closed).toBe(true);
  }, 60_000);
});
