/**
 * MARS over a corpus of the user's own (task.corpus) with endpoint systems: BM25 over the folder's .md/.txt/.jsonl
 * pages, the user's questions and gold answers, and words the worlds never had (spelt as bytes in MARS's tokens)
 * reaching System 1 and coming back through <info> to System 2 exactly. The endpoint is a scripted fake on loopback:
 * System 2 searches, then answers with what System 1 found; System 1 reads the answer off its page.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateWithEndpoints } from '../../../engine/runs/evaluation/evaluateEndpoints';
import { loadMarsCorpus } from '../../../engine/mars/corpus';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { startRun } from '../../../engine/runs/runLoop';

let dir: string;
let server: http.Server;
let url: string;
const prompts: string[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-corpus-'));
  const docs = path.join(dir, 'docs');
  fs.mkdirSync(path.join(docs, 'more'), { recursive: true });
  fs.writeFileSync(
    path.join(docs, 'veloria.md'),
    '# Veloria\n\nThe capital of Veloria is Zørnhavn. Veloria exports quince.\n',
  );
  fs.writeFileSync(path.join(docs, 'more', 'tarsk.txt'), 'The capital of Tarsk is Ulmebrook. Tarsk is cold.\n');
  fs.writeFileSync(
    path.join(docs, 'pages.jsonl'),
    [
      { title: 'Quince', text: 'Quince is a fruit grown in Veloria.' },
      { id: 'kelp', text: 'Kelp grows in Tarsk waters.' },
    ]
      .map((x) => JSON.stringify(x))
      .join('\n') + '\n',
  );
  fs.writeFileSync(path.join(docs, 'notes.bin'), 'ignored: not a document type');
  fs.writeFileSync(
    path.join(dir, 'questions.jsonl'),
    [
      { id: 'v', question: 'What is the capital of Veloria?', answers: ['Zørnhavn'] },
      { question: 'What is the capital of Tarsk?', answers: ['Ulmebrook'] },
    ]
      .map((x) => JSON.stringify(x))
      .join('\n') + '\n',
  );

  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      // a raw completions server with no model list: "instructions": "auto" asks GET /models, finds none and sends
      // raw prompts (engine/policy/policySource.ts)
      if (req.method !== 'POST') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      const { prompt } = JSON.parse(body) as { prompt: string };
      prompts.push(prompt);
      let text: string;
      if (prompt.includes('<sys1>')) {
        const m = /capital of \S+ is (\S+?)\./i.exec(prompt);
        text = `${m ? m[1] : 'nothing'} <eos>`;
      } else if (!prompt.includes('<info>')) {
        const topic = /capital of (\S+?)\?/i.exec(prompt)![1];
        text = `<think> i must look </think> <purpose> the capital </purpose> <search> capital ${topic} </search>`;
      } else {
        const info = /<info>(.*?)<\/info>/.exec(prompt)![1];
        text = `<answer> ${info} </answer>`;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ index: 0, text, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

const config = (over: Record<string, unknown> = {}) =>
  parseRunConfig({
    algorithm: 'mars',
    eval: { items: 2, temperature: 0 },
    task: { corpus: { folder: path.join(dir, 'docs'), questions: path.join(dir, 'questions.jsonl') } },
    mars: {
      maxTurns: 2,
      topK: 2,
      sys1PromptMax: 1024,
      sys1ResponseMax: 64,
      sys2PromptMax: 512,
      sys2ResponseMax: 2048,
      sys2TurnMax: 256,
      policies: { sys2: { kind: 'endpoint', baseUrl: url, model: 'scripted' } },
    },
    ...over,
  });

describe('MARS over a corpus of your own', () => {
  it('loads .md, .txt and .jsonl pages and the questions', () => {
    const c = loadMarsCorpus(path.join(dir, 'docs'), path.join(dir, 'questions.jsonl'));
    expect(c.pages.map((p) => [p.id, p.title]).sort()).toEqual([
      ['kelp', ''],
      ['more/tarsk.txt', 'tarsk'],
      ['pages.jsonl#1', 'Quince'],
      ['veloria.md', 'Veloria'],
    ]);
    expect(c.questions.map((q) => [q.id, q.answers])).toEqual([
      ['v', ['Zørnhavn']],
      ['q2', ['Ulmebrook']],
    ]);
    expect(c.questions[0]!.env.search('capital veloria', 1).map((p) => p.id)).toEqual(['veloria.md']);
  });

  it('searches it, reads its words exactly, and scores the answers', async () => {
    const home = path.join(dir, 'home');
    const r = await evaluateWithEndpoints(home, config());
    expect(r.items.map((i) => [i.id, i.correct, i.output])).toEqual([
      ['v', true, expect.stringMatching(/^zørnhavn$/i)],
      ['q2', true, expect.stringMatching(/^ulmebrook$/i)],
    ]);
    expect(r.metrics.exactMatch).toBe(1);
    expect(r.identity.corpus).toMatch(/^[0-9a-f]{64}$/);
    const rec = r.items[0]!.record as { turns: { results: { id: string }[] }[] };
    expect(rec.turns[0]!.results[0]!.id).toBe('veloria.md');
    // the page reached System 1 with its own words, not <unk>
    expect(prompts.some((p) => p.includes('<sys1>') && /zørnhavn/i.test(p) && !p.includes('<unk>'))).toBe(true);
  });

  it('is refused with the run’s own model, without endpoints, and for training; a bad file names its line', async () => {
    await expect(
      evaluateWithEndpoints(
        dir,
        config({
          mars: { policies: { sys2: { kind: 'endpoint', baseUrl: url, model: 'x' }, sys1: { kind: 'model' } } },
        }),
      ),
    ).rejects.toThrow(/task\.corpus: a corpus of your own needs endpoint policies for every system/);
    await expect(startRun(path.join(dir, 'train'), config())).rejects.toThrow(
      /^task\.corpus: a corpus of your own is for evaluation with endpoint policies/,
    );
    fs.writeFileSync(path.join(dir, 'bad.jsonl'), '{"question": "x", "answers": []}\n');
    expect(() => loadMarsCorpus(path.join(dir, 'docs'), path.join(dir, 'bad.jsonl'))).toThrow(
      /bad\.jsonl:1: answers: .*; a questions file holds one/,
    );
    expect(() => loadMarsCorpus(path.join(dir, 'nowhere'), path.join(dir, 'questions.jsonl'))).toThrow(
      /task\.corpus\.folder .*nowhere: cannot read it \(ENOENT\)/,
    );
  });
});
