/**
 * What System 1 does, measured (issue 17, "Measure what System 1 does"): whether its outputs hold the gold answer or
 * a sentence stating one of the question's support facts, how long they are, and whether System 2's <info> holds them
 * at all (with System 1 off: what survives truncation of the raw pages to mars.rawInfoBudget).
 *
 * A question's support sentences are the sentences of its support pages (questions.ts `support`, one per hop) that state
 * the hop's fact, read back with questions.ts `readFact`, so they are exactly what a reader must keep. World text is in
 * token form (world.ts), so "contains" is containment of a whole space-separated token sequence.
 */
import { readFact, type Question } from './questions';
import type { Trajectory } from './rollout';
import type { Page } from './world';
import { yearText } from './worldTemplates';

/** The sentences of `text`, each ending with its '.' or '?' token. */
function sentences(text: string): string[] {
  return text.split(/(?<= [.?]) /);
}

/** Whether the token sequence `phrase` occurs in `text` as whole tokens. */
export function containsTokens(text: string, phrase: string): boolean {
  return phrase !== '' && ` ${text} `.includes(` ${phrase} `);
}

/** The value a hop reaches, in page form: a name, or a year as four digit tokens. */
function valueText(value: string, names: ReadonlyMap<string, string>): string {
  return names.get(value) ?? yearText(value);
}

/**
 * For each hop of `question`, the sentence of its support page that states the hop's fact (the first such sentence), or
 * null where the page states it nowhere (never, in a generated world: questions.test.ts solves every question from its
 * support pages).
 */
export function supportSentences(
  question: Question,
  pagesById: ReadonlyMap<string, Page>,
  names: ReadonlyMap<string, string>,
): (string | null)[] {
  return question.chain.map((fact, i) => {
    const page = pagesById.get(question.support[i] ?? '');
    if (!page) return null;
    const forward = question.compare !== undefined || fact.subject === page.entityId;
    const want = valueText(forward ? fact.object : fact.subject, names);
    for (const s of sentences(page.text)) {
      const got = readFact(s, fact.relation, forward ? 'forward' : 'inverse', page.title);
      if (got.length === 1 && got[0] === want) return s;
    }
    return null;
  });
}

/**
 * System 2's raw view of one search with System 1 off (rollout.ts): the returned pages in rank order, concatenated and
 * cut to `budget` tokens.
 */
export function rawInfoText(pages: readonly { text: string }[], budget: number): string {
  return pages
    .flatMap((p) => p.text.split(' '))
    .slice(0, budget)
    .join(' ');
}

export interface Sys1Stats {
  /** System 1 outputs of questions with known support (all of a generated world's), and their mean tokens (the stop
   * token included, as in the trainers' sys1Tokens). */
  outputs: number;
  outputTokens: number;
  /** Shares of those outputs that contain the gold answer / a support sentence of their question. */
  goldAnswerShare: number;
  supportShare: number;
  /** Searches that returned pages, and the shares whose inserted <info> holds the gold answer / a support sentence. */
  searches: number;
  infoGoldAnswerShare: number;
  infoSupportShare: number;
}

const share = (xs: boolean[]) => (xs.length ? xs.filter(Boolean).length / xs.length : 0);

/**
 * System 1's measures over a rollout's trajectories; `tokenText` gives one token id's text (the tokenizer's decode of
 * that id alone), so that token sequences read back in the worlds' token form, words and tags separated by spaces.
 * Questions without support sentences (a user's own corpus) are left out.
 */
export function sys1Stats(trajs: readonly Trajectory[], tokenText: (id: number) => string): Sys1Stats {
  const decode = (ids: readonly number[]) => ids.map(tokenText).join(' ');
  const gold: boolean[] = [];
  const support: boolean[] = [];
  const lengths: number[] = [];
  const infoGold: boolean[] = [];
  const infoSupport: boolean[] = [];
  for (const t of trajs) {
    const facts = t.question.supportSentences;
    if (!facts || facts.length === 0) continue;
    const answer = t.question.answers[0] ?? '';
    const holds = (text: string) => [containsTokens(text, answer), facts.some((f) => containsTokens(text, f))];
    for (const turn of t.turns) {
      if (turn.results.length === 0) continue;
      const [g, s] = holds(decode(turn.info));
      infoGold.push(g!);
      infoSupport.push(s!);
      for (const call of turn.sys1) {
        const [cg, cs] = holds(decode(call.output));
        gold.push(cg!);
        support.push(cs!);
        lengths.push(call.output.length);
      }
    }
  }
  return {
    outputs: gold.length,
    outputTokens: lengths.length ? lengths.reduce((a, b) => a + b, 0) / lengths.length : 0,
    goldAnswerShare: share(gold),
    supportShare: share(support),
    searches: infoGold.length,
    infoGoldAnswerShare: share(infoGold),
    infoSupportShare: share(infoSupport),
  };
}

/** The stats as metrics (names in engine/pure/metricCatalog.ts), each only where it has something to count. */
export function sys1Metrics(st: Sys1Stats, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  if (st.outputs > 0) {
    out[`${prefix}sys1GoldAnswerShare`] = st.goldAnswerShare;
    out[`${prefix}sys1SupportShare`] = st.supportShare;
    out[`${prefix}sys1OutputTokens`] = st.outputTokens;
  }
  if (st.searches > 0) {
    out[`${prefix}infoGoldAnswerShare`] = st.infoGoldAnswerShare;
    out[`${prefix}infoSupportShare`] = st.infoSupportShare;
  }
  return out;
}
