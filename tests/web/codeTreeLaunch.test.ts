/**
 * Growing code trees from the app (issue 31, item 7; engine/api/host/codeTreeLaunch.ts) through callApi, as the Launch
 * view calls it: a task file is checked as `code tree` reads it (format and problems, or one line naming what is
 * wrong), and must lie in the allowed folders; Start runs `mars-lab code tree` as a worker process into
 * `<home>/code-trees/<name>` against an OpenAI-compatible endpoint (a scripted one on loopback: a wrong program first,
 * the right one once the feedback shows the failing assertion), listed as growing, then done, with its trees and each
 * test's outcome readable by getCodeTrees. Needs bubblewrap (the command refuses without it), like the sandbox tests.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { findExecutable } from '../../engine/code/sandbox/isolation';
import { DOUBLE_TASK, scriptedChatEndpoint } from '../helpers/scriptedChatEndpoint';

const BWRAP = findExecutable('bwrap') !== null;
if (!BWRAP && process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error('MARS_LAB_EXPECT_PEERS=1 but bwrap is absent');

let home: string;
let outside: string;
let host: Host;
let endpoint: Awaited<ReturnType<typeof scriptedChatEndpoint>>;
let baseUrl = '';

const call = <M extends 'checkCodeTasks' | 'startCodeTree' | 'stopCodeTree' | 'listCodeTrees' | 'getCodeTrees'>(
  method: M,
  params: unknown = {},
) => callApi(host.handlers, method, params) as Promise<ApiResponse<M>>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ctlaunch-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ctlaunch-outside-'));
  fs.writeFileSync(path.join(home, 'mbpp.jsonl'), JSON.stringify(DOUBLE_TASK) + '\n');
  fs.writeFileSync(path.join(home, 'broken.jsonl'), '{"task_id": 1, "text": "no tests", "code": 1}\n');
  fs.writeFileSync(path.join(outside, 'mbpp.jsonl'), JSON.stringify(DOUBLE_TASK) + '\n');
  endpoint = await scriptedChatEndpoint();
  baseUrl = endpoint.baseUrl;
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
});

afterAll(async () => {
  await host?.close();
  endpoint?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

describe('a task file from a window', () => {
  it('is read as code tree reads it: its format and problems', async () => {
    const r = await call('checkCodeTasks', { tasks: path.join(home, 'mbpp.jsonl') });
    expect(r).toMatchObject({ format: 'mbpp', problems: 1, first: ['7'] });
  });

  it('is refused outside the allowed folders, relative, or when it is not a task file, with one line', async () => {
    await expect(call('checkCodeTasks', { tasks: path.join(outside, 'mbpp.jsonl') })).rejects.toThrow(
      /outside the folders a window may use/,
    );
    await expect(call('checkCodeTasks', { tasks: 'mbpp.jsonl' })).rejects.toThrow(/absolute path, or humaneval/);
    await expect(call('checkCodeTasks', { tasks: path.join(home, 'broken.jsonl') })).rejects.toThrow(
      new RegExp(
        `^${path.join(home, 'broken.jsonl').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: line 1 \\(MBPP format\\)`,
      ),
    );
    await expect(
      call('startCodeTree', { tasks: path.join(outside, 'mbpp.jsonl'), endpoint: { baseUrl, model: 'scripted' } }),
    ).rejects.toThrow(/outside the folders a window may use/);
    await expect(call('startCodeTree', { tasks: path.join(home, 'mbpp.jsonl') })).rejects.toThrow(
      /a model from the Models list or an endpoint/,
    );
  });
});

describe.skipIf(!BWRAP)('growing code trees from the app', () => {
  it('runs code tree into <home>/code-trees/<name>: listed as growing, then done, its trees readable', async () => {
    const started = await call('startCodeTree', {
      tasks: path.join(home, 'mbpp.jsonl'),
      endpoint: { baseUrl, model: 'scripted' },
      nodes: 3,
      search: 'tplus',
      greedy: false,
      name: 'scripted-double',
    });
    expect(started.path).toBe(path.join(home, 'code-trees', 'scripted-double'));
    const state = async () =>
      (await call('listCodeTrees')).outputs.find((o) => o.name === 'scripted-double')?.state ?? null;
    expect(['running', 'done']).toContain(await state());
    await expect.poll(state, { timeout: 90_000, interval: 250 }).toSatisfy((s) => s === 'done' || s === 'failed');
    const listed = (await call('listCodeTrees')).outputs.find((o) => o.name === 'scripted-double')!;
    expect(listed.state, listed.note ?? '').toBe('done');
    const r = await call('getCodeTrees', { path: 'scripted-double' });
    expect(r.search).toBe('tplus');
    const nodes = r.trees[0]!.nodes;
    expect(nodes).toHaveLength(3);
    expect(nodes[0]!.tests!.map((t) => t.passed)).toEqual([true, false, false]);
    expect(nodes[0]!.tests![1]).toMatchObject({ error: 'AssertionError', at: 'assert double(0) == 0' });
    // a refinement of the wrong program read the assertion and passes every test
    const refined = nodes.find((n) => n.parent === nodes[0]!.id);
    if (refined) expect(refined.tests!.every((t) => t.passed)).toBe(true);
    // the name is taken now
    await expect(
      call('startCodeTree', {
        tasks: path.join(home, 'mbpp.jsonl'),
        endpoint: { baseUrl, model: 'scripted' },
        name: 'scripted-double',
      }),
    ).rejects.toThrow(/exists/);
  }, 120_000);

  it('stops a tree it is growing: listed as stopped, and a name it does not grow is not stopped', async () => {
    const slow = await scriptedChatEndpoint({ hang: true });
    try {
      await call('startCodeTree', {
        tasks: path.join(home, 'mbpp.jsonl'),
        endpoint: { baseUrl: slow.baseUrl, model: 'scripted' },
        nodes: 3,
        search: 'plain',
        greedy: false,
        name: 'slow',
      });
      const entry = async () => (await call('listCodeTrees')).outputs.find((o) => o.name === 'slow');
      expect((await entry())?.state).toBe('running');
      expect(await call('stopCodeTree', { name: 'slow' })).toEqual({ stopped: true });
      await expect.poll(async () => (await entry())?.state, { timeout: 30_000, interval: 250 }).toBe('stopped');
      expect((await entry())?.note).toMatch(/stopped from the app/);
      expect(await call('stopCodeTree', { name: 'slow' })).toEqual({ stopped: false });
      expect(await call('stopCodeTree', { name: 'never-started' })).toEqual({ stopped: false });
    } finally {
      slow.close();
    }
  }, 60_000);
});
