/**
 * `npx tsx tests/study/marsReal.ts`: MARS's System 1 as a real instruct model, at step 0 (issue 32, "MARS with a System 1
 * that can write"). SmolLM2-135M-Instruct (or --model) behind `mars-lab serve-model` plays System 1 through its own chat
 * template (engine/runs/evaluation/chat/: the worlds shown as prose, answers read back into their token form) on
 * held-out questions of the mars-overflow worlds, balanced over worlds and families, greedy.
 *
 * System 2 is an oracle searcher with the model as its reader, so that every arm sees the same searches: for hop k of a
 * question it searches the name of the hop's support page (what a competent System 2 would search) with the question as
 * its purpose, and once every hop is searched it asks the model to answer from the <info> it got (a loopback chat server
 * here, in MARS's tag format). SmolLM2-135M does not write MARS's System 2 turns itself (the `model` arm measures that:
 * the model as System 2, tags and all). Arms:
 *
 *   sys1     System 1 is the model: it reads each window of pages for the purpose and writes what serves it;
 *   off      no System 1: the reader gets the first mars.rawInfoBudget tokens of the results (the raw cut);
 *   oracle   each window answers with the question's support sentences its pages hold (the bound on System 1);
 *   model    the model as System 2 too (its own searches and answers): how often its turns are well-formed.
 *
 * What is measured: per family, how often System 1's output (and the <info> the reader gets) holds a support sentence
 * and the gold answer, against the raw cut's, paired search by search (the searches are the same in sys1, off and
 * oracle); exact match per arm beside a type-aware chance baseline (tests/study/marsItems.ts), with clustered SEs over
 * worlds and paired sign-flip tests over worlds.
 *
 *   npx tsx tests/study/marsReal.ts [--items 70] [--max-turns 3] [--model smollm2-135m-instruct]
 *       [--endpoint URL] [--arms sys1,off,oracle,model] [--out docs/results/mars-real.json] [--home DIR] [--report]
 *
 * `--endpoint`: the model behind a server already running (llama.cpp's `llama-server` on the model's GGUF, built by
 * scripts/llamaServer.mjs) instead of a `serve-model` child.
 *
 * Only the rollout's budgets are raised from the preset (a real model's words outside the worlds' vocabulary are spelt
 * as bytes in MARS's tokens) and maxTurns is set to the most hops a question needs; the JSON keeps every item.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { evalQuestions } from '../../engine/mars/questionSets';
import { containsTokens } from '../../engine/mars/sys1Measures';
import { generateWorld } from '../../engine/mars/world';
import { evalWorldSeeds } from '../../engine/mars/worldSplits';
import { endpointSourceSchema, type EndpointSource } from '../../engine/policy/policySource';
import { Rng } from '../../engine/random/prng';
import type { MarsEpisodeRecord } from '../../engine/records/mars';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { marsExample } from '../../engine/runs/evaluation/chat/marsChat';
import { toNatural } from '../../engine/runs/evaluation/chat/naturalText';
import { evaluateWithEndpoints } from '../../engine/runs/evaluation/evaluateEndpoints';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { marsChance, marsWorld } from './marsItems';
import { clusteredMean, pairedClusterVerdict, type ItemOutcome } from './stats/clustered';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const ITEMS = Number(arg('items', '70'));
const MAX_TURNS = Number(arg('max-turns', '3'));
const MODEL = arg('model', 'smollm2-135m-instruct');
const ARMS = arg('arms', 'sys1,off,oracle,model').split(',') as Arm[];
const OUT = arg('out', 'docs/results/mars-real.json');
const HOME = arg('home', fs.mkdtempSync(path.join(os.tmpdir(), 'mars-real-')));
type Arm = 'sys1' | 'off' | 'oracle' | 'model';
const MODE = { sys1: 'shared', off: 'off', oracle: 'oracle', model: 'shared' } as const;
/** The reader's worked example: the dialect's own, from a training world. */
const EXAMPLE = marsExample('');
const READER_SYSTEM =
  'Answer the question using only the notes. Reply with the answer alone: a name, a place or a year. If the notes do not say, give your best guess.';

interface Served {
  baseUrl: string;
  model: string;
  token: string;
  stop: () => void;
}

function serve(model: string): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.resolve('engine/bin/mars-lab.mjs'), 'serve-model', '--checkpoint', model, '--port', '0', '--json'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child.stdout
      .setEncoding('utf8')
      .once('data', (line: string) => resolve({ ...JSON.parse(line), stop: () => child.kill('SIGTERM') }));
    child.once('exit', (code) => reject(new Error(`serve-model exited with ${code}`)));
  });
}

/** The mars-overflow preset at this study's settings: one arm's System 1 mode and its two policies. */
function armConfig(arm: Arm, sys2: EndpointSource, sys1: EndpointSource): MarsConfig {
  const cfg = structuredClone(resolvePresetConfig('mars-overflow')) as MarsConfig;
  cfg.eval.items = ITEMS;
  cfg.eval.temperature = 0;
  cfg.mars = {
    ...cfg.mars,
    maxTurns: MAX_TURNS,
    sys1Params: MODE[arm],
    sys2TurnMax: 128,
    sys2ResponseMax: 1024,
    sys1ResponseMax: 64,
    purposeMax: 32,
    sys1PromptMax: 176 + 32 - 8, // the preset's window for documents, with the longer purpose beside it
    policies: { sys2, sys1 },
  };
  return parseRunConfig(cfg) as MarsConfig;
}

/** Per held-out question, by its text as the model reads it: the names of its support pages, hop by hop. */
function supportTitles(cfg: MarsConfig): Map<string, string[][]> {
  const out = new Map<string, string[][]>();
  for (const seed of evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds)) {
    const w = generateWorld(seed, cfg.task.world);
    const title = new Map(w.pages.map((p) => [p.id, p.title]));
    for (const q of w.questions) {
      const key = toNatural(q.text);
      out.set(key, [...(out.get(key) ?? []), q.support.map((id) => title.get(id)!)]);
    }
  }
  return out;
}

/**
 * System 2 as an oracle searcher with the model as its reader, as a chat server MARS's dialect talks to: turn k < hops
 * searches hop k's page name with the question as its purpose; then the model answers from the <info> blocks.
 */
async function oracleSearcher(
  titles: Map<string, string[][]>,
  reader: Served,
): Promise<{ baseUrl: string; close: () => void }> {
  const answer = async (messages: { role: string; content: string }[]): Promise<string> => {
    // the question is the last user turn that is a held-out question (the worked example's come before it, and a
    // training world's question may read like a held-out world's: the pools share names)
    const at = messages.findLastIndex((m) => m.role === 'user' && titles.has(m.content));
    if (at < 0) throw new Error('oracle searcher: no held-out question in the chat');
    const question = messages[at]!.content;
    const infos = messages.filter((m, i) => i > at && m.role === 'user').map((m) => m.content);
    const hops = titles.get(question)![0]!; // an ambiguous question's first reading (left out of the report)
    const k = infos.length;
    if (k < hops.length && !infos.at(-1)?.includes('This is your last turn')) {
      return `<think> hop ${k + 1} </think> <purpose> ${question} </purpose> <search> ${hops[k]} </search>`;
    }
    const notes = infos
      .map((t) => t.replace(/\n\(This is your last turn[^)]*\)/, ''))
      .map((t) =>
        t
          .replace(/<\/?info>|<noresults>/g, ' ')
          .replace(/<sep>/g, '\n')
          .trim(),
      )
      .join('\n');
    const res = await fetch(`${reader.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${reader.token}` },
      body: JSON.stringify({
        model: reader.model,
        messages: [
          { role: 'system', content: READER_SYSTEM },
          {
            role: 'user',
            content: `Notes:\n${toNatural(EXAMPLE.summary)}\n\nQuestion: ${toNatural(EXAMPLE.question)}`,
          },
          { role: 'assistant', content: toNatural(/<answer> (.*) <\/answer>/.exec(EXAMPLE.turn2)![1]!) },
          { role: 'user', content: `Notes:\n${notes}\n\nQuestion: ${question}` },
        ],
        temperature: 0,
        max_tokens: 24,
      }),
    });
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    // the reader's first line, without a leading "The answer is:" (the reader's convention, not System 2's format)
    const said = body.choices[0]!.message.content.split('\n')[0]!
      .replace(/[<>]/g, ' ')
      .replace(/^\s*(the )?answer( to (this|the) question)? is\s*:?\s*/i, '');
    return `<think> from the notes </think> <answer> ${said} </answer>`;
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { messages?: { role: string; content: string }[] };
      void answer(body.messages ?? []).then(
        (content) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 'o',
              object: 'chat.completion',
              choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
            }),
          );
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: err.message } }));
        },
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, close: () => server.close() };
}

/** Question texts two held-out worlds share with different support pages: the searcher cannot tell which is asked. */
function ambiguousQuestions(titles: Map<string, string[][]>): Set<string> {
  return new Set([...titles].filter(([, all]) => new Set(all.map((t) => t.join('|'))).size > 1).map(([q]) => q));
}

interface SearchFacts {
  support: boolean;
  gold: boolean;
}
interface ItemFacts {
  id: string;
  family: string;
  world: string;
  /** Left out of the report: its text is another world's question too, with other support pages. */
  ambiguous: boolean;
  correct: boolean;
  f1: number;
  chance: number;
  answer: string | null;
  end: string;
  /** System 2 turns that were neither a search nor an answer. */
  malformed: number;
  /** Each search that returned pages: what its <info> held, and what each System 1 window wrote. */
  searches: { query: string | null; info: SearchFacts; outputs: SearchFacts[]; outputText: string[] }[];
}

/** A decoded record text ("renown. most", "1872") in the worlds' token form ("renown . most", "1 8 7 2"). */
const tokenForm = (t: string) =>
  t
    .replace(/(<\/?[a-z0-9]+>)/g, ' $1 ')
    .replace(/(?<=[^\s])([.,?!;:])(?=\s|$)/g, ' $1')
    .replace(/(\d)(?=\d)/g, '$1 ');

function itemFacts(
  rec: MarsEpisodeRecord,
  supports: readonly string[],
  chance: number,
  correct: boolean,
  ambiguous: ReadonlySet<string>,
): ItemFacts {
  const gold = rec.gold[0] ?? '';
  const holds = (text: string): SearchFacts => {
    const t = tokenForm(text);
    return { support: supports.some((s) => containsTokens(t, s)), gold: containsTokens(t, gold) };
  };
  return {
    id: rec.questionId,
    family: rec.family,
    world: marsWorld(rec.questionId),
    ambiguous: ambiguous.has(toNatural(rec.question)),
    correct,
    f1: rec.f1,
    chance,
    answer: rec.answer,
    end: rec.end,
    malformed: rec.turns.filter((u) => u.query === null && !/<answer>/.test(u.text)).length,
    searches: rec.turns
      .filter((u) => u.results.length > 0)
      .map((u) => ({
        query: u.query,
        info: holds(u.info),
        outputs: u.bins.map((b) => holds(b.output)),
        outputText: u.bins.map((b) => b.output),
      })),
  };
}

interface ArmResult {
  items: ItemFacts[];
  sec: number;
  requests: number;
}

async function runArm(
  arm: Arm,
  cfg: MarsConfig,
  env: NodeJS.ProcessEnv,
  ambiguous: ReadonlySet<string>,
): Promise<ArmResult> {
  const qs = new Map(evalQuestions(cfg).map((q) => [q.id, q]));
  const chance = marsChance(cfg);
  const t0 = performance.now();
  let answered = 0;
  const result = await evaluateWithEndpoints(HOME, cfg, {
    env,
    onProgress: () => {
      if (++answered % 50 === 0) process.stderr.write(`  ${arm}: ${answered} requests answered\n`);
    },
  });
  const sec = (performance.now() - t0) / 1000;
  const items = result.items.map((x) =>
    itemFacts(
      x.record as MarsEpisodeRecord,
      qs.get(x.id)?.supportSentences ?? [],
      chance.get(x.id) ?? NaN,
      x.correct,
      ambiguous,
    ),
  );
  return { items, sec, requests: result.journal.fresh + result.journal.replayed };
}

const share = (xs: boolean[]) => (xs.length ? xs.filter(Boolean).length / xs.length : NaN);
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');
const uniform = (seed: number) => {
  const r = new Rng(seed);
  return () => r.next();
};

function outcomes(items: readonly ItemFacts[], score: (x: ItemFacts) => number | null): ItemOutcome[] {
  return items.flatMap((x) => {
    const s = score(x);
    return s === null ? [] : [{ item: x.id, world: x.world, score: s }];
  });
}

/** Every search of an arm as an outcome (`<question>#<k>`), scored by `score`. */
function perSearch(r: ArmResult | undefined, score: (s: ItemFacts['searches'][number]) => boolean): ItemOutcome[] {
  return (r?.items ?? []).flatMap((x) =>
    x.searches.map((s, k) => ({ item: `${x.id}#${k}`, world: x.world, score: score(s) ? 1 : 0 })),
  );
}

function exactMatchTable(arms: Partial<Record<Arm, ArmResult>>, families: string[]): string[] {
  const lines = [
    `| arm | ${families.join(' | ')} | all (cluster SE) | F1 | chance | well-formed System 2 turns | time |`,
    `|---|${families.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|`,
  ];
  for (const [arm, r] of Object.entries(arms)) {
    const em = (f: string) => share(r.items.filter((x) => x.family === f).map((x) => x.correct));
    const all = clusteredMean(outcomes(r.items, (x) => (x.correct ? 1 : 0)));
    const f1 = clusteredMean(outcomes(r.items, (x) => x.f1)).mean;
    const chance = clusteredMean(outcomes(r.items, (x) => x.chance)).mean;
    const turns = r.items.reduce((n, x) => n + x.searches.length + (x.end === 'answer' ? 1 : 0) + x.malformed, 0);
    const bad = r.items.reduce((n, x) => n + x.malformed, 0);
    lines.push(
      `| ${arm} | ${families.map((f) => f3(em(f))).join(' | ')} | ${f3(all.mean)} (${f3(all.clusterSe)}) | ${f3(f1)} | ${f3(chance)} | ${turns - bad} of ${turns} | ${Math.round(r.sec)} s |`,
    );
  }
  return lines;
}

function searchTable(arms: Partial<Record<Arm, ArmResult>>, families: (string | null)[]): string[] {
  const lines = [
    '| family | searches | System 1 output: support / gold | <info> with System 1: support / gold | raw cut: support / gold | oracle <info>: support / gold |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  const of = (arm: Arm, f: string | null) =>
    (arms[arm]?.items ?? []).filter((x) => f === null || x.family === f).flatMap((x) => x.searches);
  for (const f of families) {
    const s1 = of('sys1', f);
    const pair = (xs: typeof s1, k: keyof SearchFacts, out = false) =>
      f3(share(xs.map((s) => (out ? s.outputs.some((o) => o[k]) : s.info[k]))));
    const both = (xs: typeof s1, out = false) => `${pair(xs, 'support', out)} / ${pair(xs, 'gold', out)}`;
    lines.push(
      `| ${f ?? 'all'} | ${s1.length} | ${both(s1, true)} | ${both(s1)} | ${both(of('off', f))} | ${both(of('oracle', f))} |`,
    );
  }
  return lines;
}

function report(all: Partial<Record<Arm, ArmResult>>): string[] {
  const arms = Object.fromEntries(
    Object.entries(all).map(([a, r]) => [a, { ...r, items: r.items.filter((x) => !x.ambiguous) }]),
  ) as Partial<Record<Arm, ArmResult>>;
  const ambiguous = Object.values(all)[0]!.items.filter((x) => x.ambiguous).length;
  const families = [...new Set(Object.values(arms)[0]!.items.map((x) => x.family))];
  const lines = ['### Exact match, beside chance', '', ...exactMatchTable(arms, families)];
  lines.push('', '### Each search: what System 1 writes and what the reader gets, against the raw cut', '');
  lines.push(...searchTable(arms, [...families, null]));
  const queries = (a: Arm) => (arms[a]?.items ?? []).flatMap((x) => x.searches.map((s) => `${x.id}|${s.query}`)).join();
  lines.push(
    '',
    `The searches are the same in sys1, off and oracle: ${queries('sys1') === queries('off') && queries('off') === queries('oracle')}; questions left out because another held-out world asks the same text with other support pages: ${ambiguous}.`,
  );
  for (const k of ['support', 'gold'] as const) {
    if (!arms.sys1 || !arms.off) break;
    const v = pairedClusterVerdict(
      perSearch(arms.sys1, (s) => s.info[k]),
      perSearch(arms.off, (s) => s.info[k]),
      {
        rng: uniform(7),
      },
    );
    lines.push(
      '',
      `<info> holds the ${k === 'support' ? 'support sentence' : 'gold answer'}, System 1 > raw cut: **${v.verdict}**; ${v.test}.`,
    );
  }
  const em = (a: Arm) => outcomes(arms[a]?.items ?? [], (x) => (x.correct ? 1 : 0));
  for (const [a, b] of [
    ['sys1', 'off'],
    ['oracle', 'sys1'],
    ['oracle', 'off'],
  ] as const) {
    if (!arms[a] || !arms[b]) continue;
    const v = pairedClusterVerdict(em(a), em(b), { rng: uniform(11) });
    lines.push('', `Exact match, ${a} > ${b}: **${v.verdict}**; ${v.test}.`);
  }
  for (const a of Object.keys(arms) as Arm[]) {
    const v = pairedClusterVerdict(
      em(a),
      outcomes(arms[a]!.items, (x) => x.chance),
      { rng: uniform(13) },
    );
    lines.push('', `Exact match, ${a} > chance: **${v.verdict}**; ${v.test}.`);
  }
  return lines;
}

interface Kept {
  model: string;
  items: number;
  maxTurns: number;
  arms: Partial<Record<Arm, ArmResult>>;
}

async function main(): Promise<void> {
  // --endpoint: a server already running the model (llama.cpp's llama-server on the same GGUF), else serve-model
  const given = arg('endpoint', '');
  const srv: Served = given ? { baseUrl: given, model: MODEL, token: '', stop: () => {} } : await serve(MODEL);
  const endpoint = (baseUrl: string, model: string, key: boolean) =>
    endpointSourceSchema.parse({
      kind: 'endpoint',
      baseUrl,
      model,
      instructions: 'chat',
      ...(key ? { apiKeyEnv: 'MARS_REAL_KEY' } : {}),
      concurrency: 16,
      // 16 System 1 windows of ~700 tokens queue behind each other on 2 cores: minutes, not the default 2
      timeoutMs: 900_000,
    });
  const served = endpoint(srv.baseUrl, srv.model, !given);
  const probe = armConfig('sys1', served, served);
  const searcher = await oracleSearcher(supportTitles(probe), srv);
  const scripted = endpoint(searcher.baseUrl, 'oracle-searcher', false);
  const env = { ...process.env, MARS_REAL_KEY: srv.token };
  const kept: Kept = { model: MODEL, items: ITEMS, maxTurns: MAX_TURNS, arms: {} };
  const ambiguous = ambiguousQuestions(supportTitles(probe));
  try {
    for (const arm of ARMS) {
      process.stderr.write(`arm ${arm}: ${ITEMS} questions\n`);
      const cfg = armConfig(arm, arm === 'model' ? served : scripted, served);
      kept.arms[arm] = await runArm(arm, cfg, env, ambiguous);
      fs.writeFileSync(OUT, JSON.stringify(kept, null, 1) + '\n');
    }
  } finally {
    srv.stop();
    searcher.close();
  }
  console.log(report(kept.arms).join('\n'));
}

if (process.argv.includes('--report')) {
  const kept = JSON.parse(fs.readFileSync(OUT, 'utf8')) as Kept;
  console.log(report(kept.arms).join('\n'));
} else {
  void main();
}
