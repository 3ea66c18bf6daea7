/**
 * Errors about a file say what is wrong and where, never what the file holds (issue 34, Low): Node's JSON.parse
 * messages quote the text's first bytes ("Unexpected token 'S', "SECRET-dec"... is not valid JSON"), so a model
 * folder a user was handed could echo a secret into a terminal, a log and, through a worker's error, every window.
 * Each file below starts with a decoy; no message, on any path, holds any part of it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { describeFailure } from '../../engine/commands/ioErrors';
import { readSafetensorsFile } from '../../engine/model/formats/safetensors';
import { loadHfFolderTokenizer } from '../../engine/model/tokenizers/hf/hfFolder';
import { loadTokenizer } from '../../engine/model/tokenizers/tokenizer';

const DECOY = 'SECRET-decoy-4242 root:x:0:0';
const leaks = (text: string): boolean => ['SECRET', 'decoy', '4242', 'root:x'].some((part) => text.includes(part));
const CLI = path.resolve('engine/bin/mars-lab.mjs');
const run = promisify(execFile);

let dir: string;
let home: string;
let base: string;
let host: Host;
const events: ApiEvent[] = [];

/** A safetensors file whose header (length-prefixed, as the format has it) is the decoy, not JSON. */
function decoySafetensors(file: string): void {
  const header = Buffer.from(`${DECOY} and then nothing JSON  `);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  fs.writeFileSync(file, Buffer.concat([len, header, Buffer.alloc(64)]));
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-quoting-'));
  home = path.join(dir, 'home');
  base = path.join(home, 'base');
  fs.mkdirSync(home);
  fs.cpSync(path.resolve('resources/marti/base-tiny'), base, { recursive: true });
  decoySafetensors(path.join(base, 'model.safetensors'));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  host.subscribe((e) => events.push(e));
});
afterAll(async () => {
  await host?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function message(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a failure');
}

describe('a file that is not what it says', () => {
  it('a safetensors header, a tokenizer file and an HF tokenizer.json are named, their content not quoted', async () => {
    const st = await message(readSafetensorsFile(path.join(base, 'model.safetensors')));
    expect(st).toMatch(/model\.safetensors: header is not valid JSON \(an unexpected character\)/);
    const tokFile = path.join(dir, 'tokenizer.json');
    fs.writeFileSync(tokFile, `${DECOY} {"version": 1}`);
    const tok = await message(loadTokenizer(tokFile));
    expect(tok).toMatch(/tokenizer\.json.*is not valid JSON/);
    const hf = path.join(dir, 'hf');
    fs.mkdirSync(hf);
    fs.writeFileSync(path.join(hf, 'tokenizer.json'), `${DECOY}`);
    const hfMessage = await message(loadHfFolderTokenizer(hf));
    expect(hfMessage).toMatch(/tokenizer\.json.*not valid JSON/);
    for (const m of [st, tok, hfMessage]) expect(leaks(m), m).toBe(false);
  });

  it('--config and a JSON.parse no reader guarded: the CLI line and its stack quote nothing', async () => {
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, `${DECOY}`);
    const r = await run(process.execPath, [CLI, 'train', '--config', config, '--home', home]).catch(
      (e: { stderr: string; code: number }) => e,
    );
    expect((r as { code: number }).code).toBe(2);
    expect((r as { stderr: string }).stderr).toMatch(/config\.json: the config is not valid JSON/);
    expect(leaks((r as { stderr: string }).stderr)).toBe(false);
    let raw: unknown;
    try {
      JSON.parse(DECOY);
    } catch (err) {
      raw = err;
    }
    const f = describeFailure(raw);
    expect(f.message).toBe('a JSON text is not valid (an unexpected character)');
    expect(leaks(`${f.message}\n${f.stack ?? ''}`)).toBe(false);
    expect(f.stack).toMatch(/\n\s+at /); // a bug keeps its stack, without the quote
  });

  it("a worker's failure on such a file reaches the window naming the file, quoting nothing", async () => {
    const answer = (await callApi(host.handlers, 'startRun', {
      preset: 'marti-homo-updates',
      sets: [`model.from=${JSON.stringify({ kind: 'checkpoint', path: base })}`, 'budget.steps=1'],
    }).catch((err: Error) => ({ error: err.message }))) as { runId?: string; error?: string };
    let said = answer.error ?? '';
    if (answer.runId) {
      for (let i = 0; i < 600 && !events.some((e) => e.type === 'runProcessExit' && e.runId === answer.runId); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const exit = events.find((e) => e.type === 'runProcessExit' && e.runId === answer.runId) as
        { error?: string } | undefined;
      said = exit?.error ?? '';
    }
    expect(said).toMatch(/model\.safetensors: header is not valid JSON/);
    expect(leaks(JSON.stringify(events)), said).toBe(false);
  }, 90_000);
});
