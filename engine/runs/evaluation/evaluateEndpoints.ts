/**
 * Evaluation-only runs with endpoint agents (`mars-lab eval` with a MARS or MARTI config whose `mars.policies` or
 * `marti.agents[].policy` name endpoints). The rollouts are the in-process ones — MARS's dual system with search,
 * MARTI's AB-MCTS-A and T+ — and only where each system's or agent's text comes from changes. Results are written in
 * evaluateCheckpoint's format (eval.json: identity, metrics, per-item outcomes with their episode or tree record)
 * under `<home>/evals/endpoints-<key>/`, next to `requests.jsonl`, the journal that makes an interrupted or failed
 * evaluation resume where it stopped (journal.ts). The key is the evaluation identity, the policy sources (never a key)
 * and, when the run's own model plays a part, its weights.
 */
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { CONFIG_FILE, loadCheckpoint, WEIGHTS_FILE, writeFolderAtomic } from '../../model/formats/checkpoint';
import type { LlamaModel } from '../../model/llama';
import type { Tokenizer } from '../../model/tokenizers/tokenizer';
import { evaluateMars, marsEvalIdentity } from '../../mars/evaluate';
import { marsFormat } from '../../mars/questionSets';
import { martiFormat } from '../../marti/format';
import { evaluateMarti, martiEvalIdentity } from '../../marti/evaluate';
import { paramIdsOf, teamOf } from '../../marti/team';
import type { RunConfig } from '../config/configSchema';
import type { CheckpointEval } from './evaluation';
import type { EvalResult } from '../../training/trainer';
import { UserError } from '../../base/userError';
import { EndpointError, EndpointStopped } from '../../policy/endpointClient';
import { chatDialectFor } from './chat';
import { EndpointPolicy, type PolicyModel } from '../../policy/endpointPolicy';
import { RequestJournal } from '../../policy/journal';
import { corpusFormat, loadMarsCorpus } from '../../mars/corpus';
import { configuredSources } from '../config/configuredSources';
import { sourceIdentity, type PolicySource } from '../../policy/policySource';

export { configuredSources, usesEndpoints } from '../config/configuredSources';

export interface EndpointEvalOptions {
  /** The checkpoint whose model plays the `{ "kind": "model" }` parts, if any. */
  checkpoint?: string;
  signal?: AbortSignal;
  /** Forget earlier answers (the journal) and ask every request again. */
  fresh?: boolean;
  onWarning?: (line: string) => void;
  /** How a stopped or failed evaluation is continued, said after "N answers kept in FILE" (default: the CLI's way). */
  resumeHint?: string;
  /** After every answer (replayed from the journal or fresh from an endpoint): the counts so far. */
  onProgress?: (answers: { replayed: number; fresh: number }) => void;
  env?: NodeJS.ProcessEnv;
}

export interface EndpointEval extends CheckpointEval {
  /** The request journal: how many answers were replayed from it and how many were asked of the endpoints. */
  journal: { file: string; replayed: number; fresh: number };
  policies: Record<string, string>;
}

function sha256(...parts: (Buffer | string)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

function stableJson(o: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

type EndpointConfig = Extract<RunConfig, { algorithm: 'mars' | 'marti' }>;
type Sources = ReturnType<typeof configuredSources>;
type PolicyOf = (label: string, s: PolicySource) => PolicyModel;

/** Whether the config's policy sources can be evaluated: a corpus needs endpoints throughout, the run's model a checkpoint. */
function checkSources(config: EndpointConfig, sources: Sources, checkpoint: string | undefined) {
  const corpus = config.algorithm === 'mars' && config.task.corpus ? config.task.corpus : null;
  if (corpus && (sources.length === 0 || sources.some((s) => s.source.kind === 'model'))) {
    throw new UserError(
      "task.corpus: a corpus of your own needs endpoint policies for every system (mars.policies.sys2, and sys1 unless it shares sys2's): a mars-lab model knows only the generated worlds' words",
    );
  }
  const needsModel = sources.some((s) => s.source.kind === 'model');
  if (needsModel && !checkpoint) {
    const who = sources
      .filter((s) => s.source.kind === 'model')
      .map((s) => s.label)
      .join(', ');
    throw new UserError(
      `eval: ${who} use${who.includes(',') ? '' : 's'} the run's own model ({"kind": "model"}): add --checkpoint DIR, or give ${who.includes(',') ? 'them' : 'it'} an endpoint`,
    );
  }
  return { corpus, needsModel };
}

/** The results folder's key: the evaluation identity, the policy sources and, when the run's model plays, its weights. */
function evaluationKey(identity: Record<string, unknown>, policies: Record<string, string>, weights: string): string {
  return sha256(stableJson(identity), stableJson(policies), weights).slice(0, 24);
}

/** The evaluation's own signal: aborted by the caller's, and by the evaluation itself when one request fails. */
function innerAbort(signal: AbortSignal | undefined): AbortController {
  const inner = new AbortController();
  setMaxListeners(0, inner.signal); // every request in flight listens to it
  if (signal?.aborted) inner.abort();
  signal?.addEventListener('abort', () => inner.abort(), { once: true });
  return inner;
}

/** MARS with endpoint systems: System 2's policy, and System 1's (the same client when both name one endpoint). */
function evaluateMarsSources(
  config: Extract<RunConfig, { algorithm: 'mars' }>,
  sources: Sources,
  policyOf: PolicyOf,
  over: Parameters<typeof evaluateMars>[3],
): Promise<EvalResult> {
  const mode = config.mars.sys1Params;
  const [s2, s1] = sources;
  if ((mode === 'separate' || mode === 'frozen') && s1?.source.kind === 'model') {
    throw new UserError(
      `mars.sys1Params is ${mode}: evaluating its own System 1 weights beside an endpoint is not supported; give System 1 an endpoint (mars.policies.sys1) or evaluate with sys1Params "shared"`,
    );
  }
  const sys2 = policyOf(s2!.label, s2!.source);
  // one endpoint playing both systems is one client (one concurrency limit), as one model plays both in-process
  const sys1 = !s1
    ? null
    : sourceIdentity(s1.source) === sourceIdentity(s2!.source) && s1.source.kind === s2!.source.kind
      ? sys2
      : policyOf(s1.label, s1.source);
  return evaluateMars(config, sys2, sys1, over);
}

/** MARTI with endpoint agents: one policy per parameter set, which every agent sharing the set must name alike. */
function evaluateMartiSources(
  config: Extract<RunConfig, { algorithm: 'marti' }>,
  policyOf: PolicyOf,
): Promise<EvalResult> {
  const team = teamOf(config);
  const agents = config.marti.configuration === 'single' ? config.marti.agents.slice(0, 1) : config.marti.agents;
  const models = new Map<string, PolicyModel>();
  for (const pid of paramIdsOf(config)) {
    const members = team.filter((a) => a.paramId === pid).map((a) => agents.find((x) => x.id === a.id)!);
    const ids = new Set(
      members.map((m) => (m.policy ? `${m.policy.kind}:${sourceIdentity(m.policy)}` : 'model:model')),
    );
    if (ids.size > 1) {
      throw new UserError(
        `marti.agents: ${members.map((m) => m.id).join(', ')} share one parameter set (configuration ${config.marti.configuration}) but name different policies; give them the same one, or use configuration "heterogeneous"`,
      );
    }
    const m = members[0]!;
    models.set(
      pid,
      policyOf(
        `MARTI agent ${members.length > 1 ? members.map((x) => x.id).join('+') : m.id}`,
        m.policy ?? { kind: 'model' },
      ),
    );
  }
  return evaluateMarti(config, models);
}

/** eval.json beside the journal (a rerun replays it); the folder is rewritten whole, the journal included. */
function writeResults(
  dir: string,
  journalFile: string,
  result: EvalResult,
  extra: { checkpoint: string; policies: Record<string, string>; weightsSha256: string | null },
): void {
  writeFolderAtomic(dir, {
    'eval.json': JSON.stringify({ ...result, ...extra }, null, 1) + '\n',
    'requests.jsonl': fs.existsSync(journalFile) ? fs.readFileSync(journalFile) : '',
  });
}

export async function evaluateWithEndpoints(
  home: string,
  config: RunConfig,
  o: EndpointEvalOptions = {},
): Promise<EndpointEval> {
  if (config.algorithm !== 'mars' && config.algorithm !== 'marti') {
    throw new UserError(
      `eval with endpoint policies: ${config.algorithm} configs have none; endpoint agents are for MARS and MARTI`,
    );
  }
  const sources = configuredSources(config);
  const { corpus, needsModel } = checkSources(config, sources, o.checkpoint);
  const loaded = corpus ? loadMarsCorpus(corpus.folder, corpus.questions) : null;
  const natural = config.algorithm === 'mars' && !loaded; // a chat model reads generated worlds as prose (chat/)
  const identity = {
    ...(config.algorithm === 'mars' ? marsEvalIdentity(config) : martiEvalIdentity(config)),
    ...(loaded ? { corpus: loaded.sha } : {}),
  };
  const policies = Object.fromEntries(sources.map((s) => [s.label, sourceIdentity(s.source)]));
  const weights = needsModel
    ? sha256(
        fs.readFileSync(path.join(o.checkpoint!, CONFIG_FILE)),
        fs.readFileSync(path.join(o.checkpoint!, WEIGHTS_FILE)),
      )
    : '';
  // results asked of a chat model in token form (before naturalText.ts) do not answer for prose
  const key = evaluationKey(natural ? { ...identity, chatText: 'natural' } : identity, policies, weights);
  const dir = path.join(home, 'evals', `endpoints-${key}`);
  const journalFile = path.join(dir, 'requests.jsonl');
  if (o.fresh) fs.rmSync(journalFile, { force: true });
  const journal = new RequestJournal(journalFile);
  journal.onAnswer = o.onProgress;

  // One failed request ends the evaluation: the requests still queued or in flight are cancelled with it.
  const inner = innerAbort(o.signal);
  const local: LlamaModel | null = needsModel ? (await loadCheckpoint(o.checkpoint!)).model : null;
  // With every MARS system an endpoint, words the worlds lack (a real model's) are spelt as bytes instead of <unk>;
  // the worlds' own words keep their ids, so a mars-lab model behind serve-model gives the in-process records.
  const format = config.algorithm === 'mars' && (loaded || !needsModel) ? corpusFormat() : undefined;
  const tokenizer: Tokenizer =
    config.algorithm === 'mars' ? (format ?? marsFormat()).tokenizer : martiFormat().tokenizer;
  const policyOf: PolicyOf = (label, s) =>
    s.kind === 'model'
      ? local!
      : new EndpointPolicy({
          source: s,
          tokenizer,
          label,
          signal: inner.signal,
          journal,
          onWarning: o.onWarning,
          env: o.env,
          // "instructions": "chat" (chat/); generated worlds are shown to the model as prose, a corpus as written
          dialect: chatDialectFor(config.algorithm, tokenizer, { natural }),
        });
  const kept = (): string =>
    `${journal.size} answer${journal.size === 1 ? '' : 's'} kept in ${journalFile}: ${o.resumeHint ?? 'run the same command again to resume'}`;
  let result: EvalResult;
  try {
    result =
      config.algorithm === 'mars'
        ? await evaluateMarsSources(config, sources, policyOf, {
            format,
            questions: loaded?.questions.slice(0, config.eval.items),
          })
        : await evaluateMartiSources(config, policyOf);
  } catch (err) {
    inner.abort();
    if (err instanceof EndpointStopped && o.signal?.aborted) throw new EndpointStopped(`eval stopped; ${kept()}`);
    if (err instanceof EndpointError) {
      throw new EndpointError(journal.size > 0 ? `${err.message}; ${kept()}` : err.message);
    }
    throw err;
  } finally {
    local?.dispose();
  }
  result = { ...result, identity }; // with the corpus's hash when there is one
  const label = sources
    .map(
      (s) =>
        `${s.label}: ${s.source.kind === 'endpoint' ? `${s.source.model} at ${s.source.baseUrl}` : path.resolve(o.checkpoint!)}`,
    )
    .join('; ');
  writeResults(dir, journalFile, result, { checkpoint: label, policies, weightsSha256: weights || null });
  return {
    ...result,
    checkpoint: label,
    file: path.join(dir, 'eval.json'),
    cached: false,
    policies,
    journal: { file: journalFile, replayed: journal.stats.replayed, fresh: journal.stats.fresh },
  };
}
