/**
 * The host's code-tree methods (issue 31, item 7; engine/api/host/codeTreeMethods.ts) through callApi, as a window calls
 * them: the folders `code tree --out` wrote under `<home>/code-trees/` are listed with their model, task file and
 * searches; one search's trees come back as the lines hold them, with each test's outcome; a folder is named by its
 * name there or by a path inside the allowed folders, and a path outside them (directly or through a symbolic link)
 * is refused, as is a line that does not fit its schema (named with its file and line), and a file too large to send.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas, type ApiResponse } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { MAX_TREE_FILE_BYTES } from '../../engine/api/host/codeTreeMethods';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';

const FIXTURES = path.resolve('tests/fixtures/code-trees');
let home: string;
let outside: string;
let host: Host;

/** A call as a window makes it, its answer checked against the contract's response schema. */
const call = async <M extends 'listCodeTrees' | 'getCodeTrees'>(method: M, params: unknown = {}) =>
  apiSchemas[method].response.parse(await callApi(host.handlers, method, params)) as ApiResponse<M>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-codetrees-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-codetrees-outside-'));
  fs.cpSync(FIXTURES, path.join(home, 'code-trees'), { recursive: true });
  fs.rmSync(path.join(home, 'code-trees', 'record.ts'));
  fs.mkdirSync(path.join(home, 'code-trees', 'empty'));
  fs.cpSync(path.join(FIXTURES, 'mbpp-scripted'), path.join(outside, 'mbpp'), { recursive: true });
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
});

afterAll(async () => {
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

describe('code-tree folders a window sees', () => {
  it('lists the folders under <home>/code-trees/ that hold trees, with their model, tasks and searches', async () => {
    const { folder, outputs } = await call('listCodeTrees');
    expect(folder).toBe(path.join(home, 'code-trees'));
    expect(outputs.map((o) => o.name).sort()).toEqual(['humaneval-scripted', 'mbpp-scripted']);
    const he = outputs.find((o) => o.name === 'humaneval-scripted')!;
    expect(he).toMatchObject({ model: 'scripted', tasks: 'humaneval', problems: 2, searches: ['plain', 'tplus'] });
  });

  it("reads one search's trees by name, each node with its program and its tests' outcomes", async () => {
    const r = await call('getCodeTrees', { path: 'humaneval-scripted', search: 'tplus' });
    expect(r.search).toBe('tplus');
    expect(r.trees.map((t) => t.task_id)).toEqual(['HumanEval/2', 'HumanEval/23']);
    const lines = fs
      .readFileSync(path.join(FIXTURES, 'humaneval-scripted', 'trees-tplus.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(r.trees).toEqual(lines);
    const failing = r.trees[0]!.nodes.find((n) => !n.passed)!;
    expect(failing.tests![0]).toMatchObject({ passed: false, error: 'AssertionError' });
    expect(failing.tests![0]!.at).toMatch(/^assert candidate/);
    expect(r.figures?.bestOfTree).toBeDefined();
    // without a search named, the first the folder holds
    expect((await call('getCodeTrees', { path: 'humaneval-scripted' })).search).toBe('plain');
  });

  it('opens a folder by an allowed path; refuses one outside the allowed folders, also through a link', async () => {
    const inHome = await call('getCodeTrees', { path: path.join(home, 'code-trees', 'mbpp-scripted') });
    expect(inHome.trees[0]!.nodes[0]!.tests).toHaveLength(3);
    await expect(call('getCodeTrees', { path: path.join(outside, 'mbpp') })).rejects.toThrow(
      /outside the folders a window may use/,
    );
    fs.symlinkSync(path.join(outside, 'mbpp'), path.join(home, 'code-trees', 'linked'));
    await expect(call('getCodeTrees', { path: 'linked' })).rejects.toThrow(/through a symbolic link/);
    await expect(call('getCodeTrees', { path: '../runs' })).rejects.toThrow(/absolute folder, or the name/);
    await expect(call('getCodeTrees', { path: 'empty' })).rejects.toThrow(/holds no trees-plain.jsonl/);
    await expect(call('getCodeTrees', { path: 'nothing-here' })).rejects.toThrow(/does not exist/);
  });

  it('names the file and line of a line that does not fit, instead of sending it', async () => {
    const dir = path.join(home, 'code-trees', 'damaged');
    fs.cpSync(path.join(FIXTURES, 'mbpp-scripted'), dir, { recursive: true });
    fs.appendFileSync(path.join(dir, 'trees-plain.jsonl'), '{"task_id":"2","nodes":[{"id":"one"}]}\n');
    await expect(call('getCodeTrees', { path: 'damaged', search: 'plain' })).rejects.toThrow(
      /trees-plain\.jsonl: line 2: nodes\.0\.id/,
    );
    await expect(call('getCodeTrees', { path: 'damaged', search: 'tplus' })).resolves.toMatchObject({
      search: 'tplus',
    });
  });

  it('refuses a tree file larger than one answer may carry, saying how to make it smaller', async () => {
    const dir = path.join(home, 'code-trees', 'huge');
    fs.mkdirSync(dir);
    const file = path.join(dir, 'trees-plain.jsonl');
    fs.writeFileSync(file, '');
    fs.truncateSync(file, MAX_TREE_FILE_BYTES + 1); // sparse: nothing is written
    await expect(call('getCodeTrees', { path: 'huge' })).rejects.toThrow(/more than the 32 MiB .*--problems/);
  });
});
