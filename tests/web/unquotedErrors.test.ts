/**
 * What reaches a window or a terminal never quotes a file through a JSON parser's message (issue 34, Low): V8's
 * messages quote the text's first bytes (`Unexpected token 'S', "SECRET-dec"... is not valid JSON`), and a message
 * may wrap one (`… (${err.message})`). Checked at each boundary — a host call's failure, a worker's stderr turned into
 * runProcessExit and a failed start, the CLI's last line and stack — and at the readers that still passed one on (a
 * MARTI checkpoint's agent config, run-worker's job). Each decoy must vanish while the file and the problem stay named.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../engine/base/userError';
import type { ApiEvent } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import type { ApiHandlers } from '../../engine/api/host/host';
import { WorkerSlots } from '../../engine/api/host/hostGuards';
import { createLaunchWorker, type Launched } from '../../engine/api/host/workerLaunch';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { describeFailure } from '../../engine/commands/ioErrors';
import { loadAgentModel } from '../../engine/marti/checkpoint';

const DECOY = 'SECRET-decoy-4242 root:x:0:0';
const PARTS = ['SECRET', 'decoy', '4242', 'root:x'];
const leaks = (text: string): boolean => PARTS.some((part) => text.includes(part));
const CLI = path.resolve('engine/bin/mars-lab.mjs');

/** V8's own message for `text`, quoting it. */
function v8Message(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a parse error');
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-unquoted-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("a parser's quotation never reaches a window", () => {
  it('the decoy is quoted by V8 itself (the premise)', () => {
    expect(leaks(v8Message(DECOY))).toBe(true);
    expect(leaks(v8Message(`{"a": 1, "b": ${DECOY}}`))).toBe(true);
    expect(leaks(v8Message(`SE\nCRET-decoy`))).toBe(true);
  });

  it("a host call's failure that wraps a parser's message: the file and the problem named, nothing quoted", async () => {
    const wrapped = `runs/x/live.json: damaged (${v8Message(DECOY)})`;
    const handlers = {
      listRuns: () => Promise.reject(new UserError(wrapped)),
      getRun: () => {
        throw new Error(`index.json is not JSON (${v8Message(`{"a": 1, "b": ${DECOY}}`)})`);
      },
    } as unknown as ApiHandlers;
    const said: Error[] = [];
    for (const [method, params] of [
      ['listRuns', {}],
      ['getRun', { runId: 'x' }],
    ] as const) {
      await callApi(handlers, method, params).then(
        () => expect.unreachable(),
        (err: Error) => said.push(err),
      );
    }
    expect(said[0]).toBeInstanceOf(UserError); // the class a transport reports by is kept
    expect(said[0]!.message).toBe('runs/x/live.json: damaged (not valid JSON (an unexpected character))');
    expect(said[1]!.message).toMatch(/^index\.json is not JSON \(not valid JSON/);
    for (const err of said) expect(leaks(`${err.message}\n${err.stack ?? ''}`), err.message).toBe(false);
  });

  it("a worker's stderr becomes runProcessExit and a failed start without the quotation", async () => {
    const stderr =
      `mars-lab: agent-1.config.json: damaged (${v8Message(DECOY)})\n` +
      `Error: a bug (${v8Message(`SE\nCRET-decoy`)})\n    at somewhere (file.ts:1:1)\n`;
    const launcher: RunLauncher = {
      launch(_args, handlers) {
        setImmediate(() => {
          handlers.onStdoutLine(JSON.stringify({ type: 'created', runId: 'run-1', dir: '/nowhere' }));
          handlers.onStderr(stderr);
          handlers.onExit(2);
        });
        return { pid: undefined, terminate: () => {} };
      },
    };
    const events: ApiEvent[] = [];
    const launch = createLaunchWorker({
      launcher,
      slots: new WorkerSlots(1),
      running: new Map<string, Launched>(),
      broadcast: (e) => events.push(e),
    });
    const failed = await launch({ kind: 'resume', runDir: '/nowhere' }, () => undefined).then(
      () => 'answered',
      (err: Error) => err.message,
    );
    const exit = events.find((e) => e.type === 'runProcessExit') as { error?: string } | undefined;
    for (const said of [failed, exit?.error ?? '']) {
      expect(said).toMatch(/agent-1\.config\.json: damaged \(not valid JSON \(an unexpected character\)\)/);
      expect(leaks(said), said).toBe(false);
    }
  });

  it("the CLI's line and a bug's stack drop a wrapped quotation", () => {
    const user = describeFailure(new UserError(`--config c.json: damaged (${v8Message(DECOY)})`));
    expect(user.message).toBe('--config c.json: damaged (not valid JSON (an unexpected character))');
    const bug = describeFailure(new Error(`the result r.json is not JSON (${v8Message(DECOY)})`));
    expect(bug.message).toMatch(/r\.json is not JSON/);
    expect(bug.stack).toMatch(/\n\s+at /);
    for (const f of [user, bug]) expect(leaks(`${f.message}\n${f.stack ?? ''}`), f.message).toBe(false);
  });

  it("a MARTI checkpoint's agent config that is not JSON is named, not quoted", async () => {
    const ckpt = path.join(dir, 'ckpt');
    fs.mkdirSync(ckpt);
    fs.writeFileSync(path.join(ckpt, 'agent-1.safetensors'), '');
    fs.writeFileSync(path.join(ckpt, 'agent-1.config.json'), DECOY);
    const said = await loadAgentModel(ckpt, '1').then(
      () => 'loaded',
      (err: Error) => err.message,
    );
    expect(said).toMatch(/agent-1\.config\.json: not valid JSON \(an unexpected character\)/);
    expect(leaks(said), said).toBe(false);
  });

  it('run-worker with a job that is not JSON says so on stderr, quoting nothing', async () => {
    const r = await promisify(execFile)(process.execPath, [CLI, 'run-worker', DECOY]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/run-worker: the job is not JSON \(an unexpected character\)/);
    expect(leaks(r.stderr), r.stderr).toBe(false);
  }, 60_000);
});
