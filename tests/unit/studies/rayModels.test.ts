/**
 * How a real model reaches a study's Ray jobs (issue 33, item 6; engine/cluster/studies/jobModels.ts), against a fake
 * Jobs API on loopback that records every request: `study --ray` of chatgrpo-addition (which names the catalogue model
 * smollm2-135m-instruct) submits jobs whose entrypoint fetches the model on the node before train, with the GPU request
 * kept and the model in the job's metadata and the study record; a model given by path is refused in one line naming
 * model.path and both ways out, before any request reaches the cluster, unless --ray-shared-models asserts the path is
 * shared (then it must be absolute, and no fetch step is added).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planStudy, rayEntrypoint } from '../../../engine/cluster/studies/studyPlan';
import { UserError } from '../../../engine/base/userError';
import { cli } from '../../helpers/cli';
import { planRayStudy, type RayWhere } from '../../ray/rayStudyPlan';

interface Seen {
  method: string;
  url: string;
  body: unknown;
}

/** A Jobs API that knows its version, takes submissions, and answers every job as SUCCEEDED with an empty log. */
function fakeJobsApi(seen: Seen[]): http.Server {
  return http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body: unknown = text ? JSON.parse(text) : undefined;
      seen.push({ method: req.method ?? '', url: req.url ?? '', body });
      const json = (v: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      const url = req.url ?? '';
      if (url === '/api/version') return json({ version: '4', ray_version: '2.52.1' });
      if (req.method === 'POST' && url === '/api/jobs/') {
        const id = (body as { submission_id: string }).submission_id;
        return json({ submission_id: id, job_id: null });
      }
      if (url.endsWith('/logs')) return json({ logs: '' });
      const m = /^\/api\/jobs\/([^/]+)$/.exec(url);
      if (m) return json({ status: 'SUCCEEDED', submission_id: decodeURIComponent(m[1]!), type: 'SUBMISSION' });
      res.writeHead(404).end();
    });
  });
}

const seen: Seen[] = [];
const server = fakeJobsApi(seen);
let url = '';
let home = '';

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-ray-models-'));
});
afterAll(() => {
  server.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const submissions = () => seen.filter((s) => s.method === 'POST' && s.url === '/api/jobs/');

const rayStudy = (sets: string[], where: Partial<RayWhere> = {}) => planRayStudy('chatgrpo-addition', sets, where);

describe('a real model on Ray jobs', () => {
  it('study --ray of chatgrpo-addition submits a job that fetches its model on the node, GPUs still asked', async () => {
    seen.length = 0;
    const r = await cli([
      'study',
      '--preset',
      'chatgrpo-addition',
      '--seeds',
      '1',
      '--ray',
      url,
      '--ray-home',
      home,
      '--ray-gpus',
      '1',
      '--home',
      home,
      '--json',
    ]);
    expect(r.stderr).not.toMatch(/model\.path/);
    expect(r.code).toBe(0);
    const [job] = submissions().map((s) => s.body as Record<string, unknown>);
    expect(submissions()).toHaveLength(1);
    const cliPath = path.resolve('engine/bin/mars-lab.mjs');
    expect(String(job!.entrypoint)).toMatch(
      new RegExp(
        `^node ${cliPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} model fetch smollm2-135m-instruct && node \\S+ train --preset chatgrpo-addition .* --set backend=webgpu$`,
      ),
    );
    expect(job!.entrypoint_num_gpus).toBe(1);
    expect(job!.metadata).toMatchObject({ mars_lab_model: 'smollm2-135m-instruct', mars_lab_gpus: '1' });
    const record = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { type: string; runs: { model?: string }[] };
    expect(record.type).toBe('study');
    expect(record.runs[0]?.model).toBe('smollm2-135m-instruct');
  });

  it('a model by path is refused in one line, before any request reaches the cluster', async () => {
    seen.length = 0;
    const r = await cli([
      'study',
      '--preset',
      'chatgrpo-addition',
      '--seeds',
      '2',
      '--set',
      'model.path=/data/models/SmolLM2.gguf',
      '--ray',
      url,
      '--ray-home',
      home,
      '--home',
      home,
    ]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^mars-lab: model\.path: \/data\/models\/SmolLM2\.gguf is a path on this machine/);
    expect(lines[0]).toContain('smollm2-135m-instruct'); // way out 1: a catalogue name
    expect(lines[0]).toContain('--ray-shared-models'); // way out 2: a shared path, asserted
    expect(seen).toHaveLength(0);
    const here = await cli(['study', '--preset', 'chatgrpo-addition', '--seeds', '1', '--ray-shared-models']);
    expect(here.code).toBe(2);
    expect(here.stderr.trim()).toBe(
      "mars-lab: --ray-shared-models says where a Ray job's node reads the model: it needs --ray URL",
    );
  });

  it('--ray-shared-models lets an absolute path go as it is, with no fetch step; a relative one is refused', () => {
    const shared = rayStudy(['model.path=/shared/models/SmolLM2.gguf'], { sharedModels: true });
    const entry = rayEntrypoint(shared, shared.runs[0]!);
    expect(entry).not.toContain('model fetch');
    expect(entry).toContain('--set model.path=/shared/models/SmolLM2.gguf');
    expect(shared.runs[0]!.model).toBe('/shared/models/SmolLM2.gguf');
    expect(() => rayStudy(['model.path=models/SmolLM2.gguf'], { sharedModels: true })).toThrow(
      /^model\.path: models\/SmolLM2\.gguf is relative/,
    );
    expect(() => rayStudy(['model.path=models/SmolLM2.gguf'])).toThrow(UserError);
  });

  it('a shipped project fetches through its own copy; a study here and a model-less preset are as before', () => {
    const shipped = rayStudy([], { project: '.' });
    expect(rayEntrypoint(shipped, shipped.runs[0]!)).toMatch(
      /^node engine\/bin\/mars-lab\.mjs model fetch smollm2-135m-instruct && node engine\/bin\/mars-lab\.mjs train /,
    );
    const here = planStudy({
      preset: 'chatgrpo-addition',
      variants: [null],
      seeds: [0],
      sets: ['model.path=models/SmolLM2.gguf'],
      where: { kind: 'local', parallel: 1 },
    });
    expect(here.runs[0]!.model).toBe('models/SmolLM2.gguf');
    const plain = planRayStudy('seqgrpo-copy', [], { url: 'http://x:8265', project: '.' });
    expect(plain.runs[0]).not.toHaveProperty('model');
    expect(rayEntrypoint(plain, plain.runs[0]!)).toMatch(/^node engine\/bin\/mars-lab\.mjs train /);
  });
});
