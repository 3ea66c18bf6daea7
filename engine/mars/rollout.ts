/**
 * The dual-system rollout of MARS (docs/algorithms.md §2.2, eqs. 1–4), batched: every step, all live trajectories' System 2
 * turns go through one generation call, and all System 1 bins of all their searches through another.
 */
import { generateWith, openSession, type PolicyModel } from '../policy/endpointPolicy';
import type { Rng } from '../random/prng';
import { exactMatch, f1 } from '../scoring/answerScoring';
import { packItems, sys1Capacity, type Bin } from './binPacking';
import type { MarsFormat } from './format';

export interface MarsRolloutSettings {
  maxTurns: number;
  topK: number;
  sys1PromptMax: number;
  sys1ResponseMax: number;
  sys2PromptMax: number;
  sys2ResponseMax: number;
  /** New tokens System 2 may write in one turn. */
  sys2TurnMax: number;
  purposeMax: number;
  sepCost: number;
  rawInfoBudget: number;
  packing: 'ffd' | 'perDoc' | 'truncate';
  /**
   * 'off': no System 1; raw pages, concatenated in tool order, are truncated to rawInfoBudget inside <info> (§6.1).
   * 'oracle' (evaluation only, issue 32): each window's output is the question's support sentences its pages hold, in
   * page order (nothing where they hold none): the most a System 1 could give System 2 from that search.
   */
  sys1: 'on' | 'off' | 'oracle';
  missingPurpose: 'query' | 'empty';
  /** The purpose-stripped ablation (evaluation only): System 1's prompt without System 2's purpose, as if it were ''. */
  stripPurpose?: boolean;
  temperature: number;
  topP: number;
}

export interface Document {
  id: string;
  text: string;
}

/** What a trajectory can search: the world its question belongs to. */
export interface SearchEnv {
  search(query: string, k: number): Document[];
}

export interface RolloutQuestion {
  id: string;
  family: string;
  text: string;
  answers: string[];
  env: SearchEnv;
  /** The sentences stating the question's support facts (sys1Measures.ts), where known: generated worlds only. */
  supportSentences?: string[];
}

export interface Sys1Call {
  /** The documents of the bin: page id and tokens kept. */
  pages: { id: string; take: number }[];
  used: number;
  prompt: number[];
  /** Generated tokens, the stop token included (what is trained). */
  output: number[];
  logProbs: number[];
}

export interface Sys2Turn {
  /** Generated tokens of this turn and their behaviour log-probs. */
  tokens: number[];
  logProbs: number[];
  query: string | null;
  purpose: string | null;
  answer: string | null;
  /**
   * Whether a search ran for this turn: a closed <search> with a non-empty query on a tool turn. A <search> on the last
   * turn (only an answer counts there), on a turn that overflowed, or with an empty query runs none.
   */
  searched: boolean;
  /** Pages the search returned (id and token length), in rank order. */
  results: { id: string; length: number }[];
  sys1: Sys1Call[];
  /** Tokens of documents one System 1 window holds for this turn's purpose (§2.3's C); null without System 1 calls. */
  capacity: number | null;
  /** Tokens the environment inserted after the turn (mask 0). */
  info: number[];
}

export type EndReason = 'answer' | 'maxTurns' | 'overflow';

export interface Trajectory {
  question: RolloutQuestion;
  /** System 2's whole sequence x ⊕ y: prompt, every turn, every inserted <info> block. */
  tokens: number[];
  /** 1 exactly on tokens System 2 generated (§2.6). */
  lossMask: number[];
  behaviourLogProbs: number[];
  promptLength: number;
  turns: Sys2Turn[];
  answer: string | null;
  end: EndReason;
  /** Exact match with a gold answer (§2.4): the shared reward. */
  reward: number;
  f1: number;
}

/** Each system's policy: the run's own model, or an endpoint (engine/policy/endpointPolicy.ts) in evaluations. */
export interface RolloutModels {
  sys2: PolicyModel;
  /** The System 1 policy: the same model ('shared'), a copy ('separate', 'frozen'), or null when System 1 is off. */
  sys1: PolicyModel | null;
}

/** Wall-clock milliseconds of a rollout's phases, summed over its turns (the benchmark's MARS step breakdown). */
export interface RolloutTiming {
  /** System 2: reading prompts and inserted <info> into its KV cache, and sampling its turns. */
  sys2GenerationMs: number;
  /** BM25 search and encoding the returned pages. */
  searchMs: number;
  /** First-Fit-Decreasing (or the ablation's) packing of the pages into System 1 windows, and building their prompts. */
  packingMs: number;
  /** System 1 sampling over all windows of the turn. */
  sys1GenerationMs: number;
}

export function emptyRolloutTiming(): RolloutTiming {
  return { sys2GenerationMs: 0, searchMs: 0, packingMs: 0, sys1GenerationMs: 0 };
}

/**
 * Roll out one trajectory per entry of `questions` (repeat a question G times for a group). When `timing` is given,
 * each phase's wall-clock time is added to it.
 */
export async function rolloutBatch(
  models: RolloutModels,
  format: MarsFormat,
  questions: RolloutQuestion[],
  s: MarsRolloutSettings,
  rng: Rng,
  timing: RolloutTiming = emptyRolloutTiming(),
): Promise<Trajectory[]> {
  const trajs: Trajectory[] = questions.map((q) => {
    const prompt = format.sys2Prompt(q.text);
    return {
      question: q,
      tokens: prompt.slice(),
      lossMask: prompt.map(() => 0),
      behaviourLogProbs: prompt.map(() => 0),
      promptLength: prompt.length,
      turns: [],
      answer: null,
      end: 'maxTurns',
      reward: 0,
      f1: 0,
    };
  });
  const tokenRng = rng.split('tokens');
  let live = trajs.filter((t) => t.promptLength <= s.sys2PromptMax || ((t.end = 'overflow'), false));
  // System 2's rows keep one KV cache across turns: each turn only its new tokens and the inserted <info> are computed.
  const session = openSession(models.sys2);
  let t0 = performance.now();
  try {
    if (live.length > 0) await session.extend(live.map((t) => t.tokens));
    // maxTurns tool turns, then one last turn in which only an answer counts [D].
    for (let turn = 0; turn <= s.maxTurns && live.length > 0; turn++) {
      // Each row's turn is capped by its own remaining budget, never by another row's: a trajectory does not depend on
      // what it is batched with (a shared minimum cut other questions' turns short, so they parsed as malformed).
      const room = live.map((t) => Math.max(1, s.sys2ResponseMax - (t.tokens.length - t.promptLength)));
      const gens = await session.sample({
        maxNewTokens: s.sys2TurnMax,
        rowMaxNewTokens: room,
        temperature: s.temperature,
        topP: s.topP,
        stopTokens: format.sys2Stops,
        rng: tokenRng,
        final: turn === s.maxTurns,
      });
      timing.sys2GenerationMs += performance.now() - t0;
      const searching: { t: Trajectory; turn: Sys2Turn; row: number }[] = [];
      live.forEach((t, i) => {
        const g = gens[i]!;
        const parsed = format.parseTurn(g.tokens);
        const rec: Sys2Turn = {
          tokens: g.tokens,
          logProbs: g.logProbs,
          query: parsed.query ? format.decode(parsed.query) : null,
          purpose: parsed.purpose ? format.decode(parsed.purpose) : null,
          answer: parsed.answer ? format.decode(parsed.answer) : null,
          searched: false,
          results: [],
          sys1: [],
          capacity: null,
          info: [],
        };
        t.turns.push(rec);
        t.tokens.push(...g.tokens);
        t.lossMask.push(...g.tokens.map(() => 1));
        t.behaviourLogProbs.push(...g.logProbs);
        if (rec.answer !== null) {
          t.answer = rec.answer;
          t.end = 'answer';
        } else if (t.tokens.length - t.promptLength >= s.sys2ResponseMax) {
          t.end = 'overflow';
        } else if (turn < s.maxTurns) {
          searching.push({ t, turn: rec, row: i });
        }
      });
      await runTools(models, format, searching, s, tokenRng, timing);
      const next = searching.filter(({ t }) => {
        if (t.tokens.length - t.promptLength >= s.sys2ResponseMax) {
          t.end = 'overflow'; // the inserted <info> filled System 2's budget (§2.2 overflow rule)
          return false;
        }
        return true;
      });
      live = next.map((x) => x.t);
      if (live.length === 0) break;
      t0 = performance.now();
      session.keep(next.map((x) => x.row));
      await session.extend(next.map((x) => x.turn.info));
    }
  } finally {
    session.dispose();
  }
  for (const t of trajs) {
    const golds = t.question.answers;
    t.reward = t.end === 'answer' && t.answer !== null && exactMatch(t.answer, golds) ? 1 : 0;
    t.f1 = t.end === 'answer' && t.answer !== null ? f1(t.answer, golds) : 0;
  }
  return trajs;
}

/** Search for every trajectory that asked, pack the pages into System 1 windows, run System 1, insert <info>. */
async function runTools(
  models: RolloutModels,
  format: MarsFormat,
  searching: readonly { t: Trajectory; turn: Sys2Turn }[],
  s: MarsRolloutSettings,
  rng: Rng,
  timing: RolloutTiming,
): Promise<void> {
  const calls: { owner: Sys2Turn; call: Sys1Call; question: RolloutQuestion }[] = [];
  for (const { t, turn } of searching) {
    const s0 = performance.now();
    // A malformed call (no closed <search>) or an empty query finds nothing: no System 1 call (§2.9).
    turn.searched = !!turn.query?.trim();
    const docs = turn.searched ? t.question.env.search(turn.query!, s.topK) : [];
    const docTokens = docs.map((d) => format.encode(d.text));
    const s1 = performance.now();
    timing.searchMs += s1 - s0;
    turn.results = docs.map((d, i) => ({ id: d.id, length: docTokens[i]!.length }));
    if (docs.length === 0) continue;
    if (s.sys1 === 'off') {
      turn.info = [format.ids.info, ...docTokens.flat().slice(0, s.rawInfoBudget), format.ids.infoEnd];
      continue;
    }
    const purposeText = turn.purpose ?? (s.missingPurpose === 'query' ? turn.query! : '');
    const purpose = s.stripPurpose ? [] : format.encode(purposeText).slice(0, s.purposeMax);
    const C = sys1Capacity(s.sys1PromptMax, format.sys1TemplateLength, purpose.length);
    turn.capacity = C;
    const bins: Bin[] = packItems(
      s.packing,
      docTokens.map((d, index) => ({ index, length: d.length })),
      C,
      s.sepCost,
    );
    for (const bin of bins) {
      const prompt = [
        ...format.sys1Head(purpose),
        ...bin.items.flatMap((it) => [...docTokens[it.index]!.slice(0, it.take), format.ids.sep]),
      ];
      calls.push({
        owner: turn,
        question: t.question,
        call: {
          pages: bin.items.map((it) => ({ id: docs[it.index]!.id, take: it.take })),
          used: bin.used,
          prompt,
          output: [],
          logProbs: [],
        },
      });
    }
    timing.packingMs += performance.now() - s1;
  }
  if (calls.length > 0 && s.sys1 === 'oracle') {
    for (const c of calls) {
      c.call.output = [...format.encode(oracleOutput(c.call, c.question, format)), format.ids.eos];
      c.call.logProbs = c.call.output.map(() => 0);
      c.owner.sys1.push(c.call);
    }
  } else if (calls.length > 0) {
    const g0 = performance.now();
    const gens = await generateWith(
      models.sys1!,
      calls.map((c) => c.call.prompt),
      {
        maxNewTokens: s.sys1ResponseMax,
        temperature: s.temperature,
        topP: s.topP,
        stopTokens: [format.ids.eos],
        rng,
      },
    );
    calls.forEach((c, i) => {
      c.call.output = gens[i]!.tokens;
      c.call.logProbs = gens[i]!.logProbs;
      c.owner.sys1.push(c.call);
    });
    timing.sys1GenerationMs += performance.now() - g0;
  }
  for (const { t, turn } of searching) {
    if (turn.info.length === 0) {
      // Bins are combined in creation order with <sep> [D, §2.2]; the stop token is not part of õ.
      turn.info = format.infoBlock(turn.sys1.map((c) => c.output.filter((id) => id !== format.ids.eos)));
    }
    t.tokens.push(...turn.info);
    t.lossMask.push(...turn.info.map(() => 0));
    t.behaviourLogProbs.push(...turn.info.map(() => 0));
  }
}

/** The oracle System 1's output for a window: the question's support sentences its pages hold, as the pages order them. */
function oracleOutput(call: Sys1Call, q: RolloutQuestion, format: MarsFormat): string {
  const facts = q.supportSentences;
  if (!facts) throw new Error(`mars.sys1Params oracle: question ${q.id} has no known support sentences`);
  const pages = call.prompt.slice(call.prompt.indexOf(format.ids.sep) + 1); // after System 1's head and purpose
  const window = ` ${pages.map((id) => format.decode([id])).join(' ')} `; // token form, as sys1Measures reads it
  return facts
    .map((f) => ({ f, at: window.indexOf(` ${f} `) }))
    .filter((x) => x.at >= 0)
    .sort((a, b) => a.at - b.at)
    .filter((x, i, all) => i === 0 || x.f !== all[i - 1]!.f)
    .map((x) => x.f)
    .join(' ');
}
