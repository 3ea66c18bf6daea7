/**
 * The base model's supervised data (the MARS issue, "The base model"): the training worlds' pages, plus a format
 * primer of rollout transcripts whose queries, purposes, summaries and answers are drawn at random.
 *
 * "At random" means copied at random from what the writer can see, the way a pretrained reader copies words: a query
 * is one or two of the question's content words (its words less the search's stop words, as anyone types into a search
 * box), a System 1 summary is one to three consecutive sentences of its window, an answer is a name or year that occurs
 * in the `<info>` blocks above it. The base model thus learns the format, the language and the act
 * of copying, but not which words to copy: that (search for the question's entity, keep the sentence the purpose asks
 * for, answer with the value the question asks for) is the task policy RL has to find. Its held-out exact match is
 * measured and reported (docs/results/mars.md) as the base line.
 *
 * The mix: a quarter pages, half System 2 transcripts, a quarter System 1 windows. Only training worlds are used:
 * nothing here can leak an evaluation world's facts.
 */
import { Rng } from '../random/prng';
import { sys1Capacity } from './binPacking';
import type { MarsSettings, MarsTaskConfig } from './configSchema';
import type { MarsFormat } from './format';
import { SEARCH_STOP_WORDS, type SearchIndex } from './search';
import type { World } from './world';
import { DIGITS } from './worldTemplates';

export interface PretrainEnv {
  world: World;
  index: SearchIndex;
}

export interface PretrainExample {
  tokens: number[];
  lossMask: number[];
}

const DIGIT_SET = new Set(DIGITS);

/** A page's sentences, each ending with its '.' token. */
export function sentencesOf(text: string): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  for (const w of text.split(' ')) {
    if (w === '') continue;
    cur.push(w);
    if (w === '.') {
      out.push(cur);
      cur = [];
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Names of the world's entities and four-digit years occurring in `words`, in order, as answer texts. */
export function valuesIn(words: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    if (names.has(words[i]!)) out.push(words[i]!);
    else if (i + 4 <= words.length && words.slice(i, i + 4).every((w) => DIGIT_SET.has(w))) {
      out.push(words.slice(i, i + 4).join(' '));
      i += 3;
    }
  }
  return out;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)]!;
const pickSome = <T>(rng: Rng, xs: readonly T[], min: number, max: number): T[] =>
  xs.length ? Array.from({ length: min + rng.int(max - min + 1) }, () => pick(rng, xs)) : [];

/** One to three consecutive random sentences of the given pages (what a System 1 summary looks like). */
function someSentences(rng: Rng, pageTexts: readonly string[]): string[] {
  const all = pageTexts.flatMap(sentencesOf);
  if (!all.length) return [];
  const n = Math.min(all.length, 1 + rng.int(3));
  const first = rng.int(all.length - n + 1);
  return all.slice(first, first + n).flat();
}

export function pretrainExamples(
  envs: readonly PretrainEnv[],
  task: Pick<MarsTaskConfig, 'families'>,
  m: Pick<MarsSettings, 'maxTurns' | 'topK' | 'purposeMax' | 'sys1PromptMax' | 'sepCost'>,
  format: MarsFormat,
  rng: Rng,
  size: number,
): PretrainExample[] {
  const ids = format.ids;
  const out: PretrainExample[] = [];
  for (let n = 0; n < size; n++) {
    const { world, index } = pick(rng, envs);
    const questions = world.questions.filter((q) => task.families.includes(q.family));
    const q = questions.length ? pick(rng, questions) : pick(rng, world.questions);
    const qWords = q.text.split(' ').filter((w) => w !== '?' && w !== ',');
    // What a reader puts into a search box: the question's words without its function words (the search's own stop
    // words). Which of them, and how many, stays random.
    const content = qWords.filter((w) => !SEARCH_STOP_WORDS.has(w));
    const queryWords = content.length ? content : qWords;
    const names = new Set(world.entities.map((e) => e.name));
    const kind = rng.int(4);
    if (kind === 0) {
      // the language: a page, every token learned
      const page = pick(rng, world.pages);
      const tokens = [ids.bos, ...format.encode(page.text), ids.eos];
      out.push({ tokens, lossMask: tokens.map((_, i) => (i === 0 ? 0 : 1)) });
    } else if (kind === 1 || kind === 2) {
      // System 2's format: turns of think / purpose / search with inserted info, then an answer
      const tokens = format.sys2Prompt(q.text);
      const mask = tokens.map(() => 0);
      const seen: string[] = [];
      // at least one search: like an instructed model, the base model uses its tool; how often is learned
      const turns = 1 + rng.int(m.maxTurns);
      for (let t = 0; t < turns; t++) {
        const think = format.encode(pickSome(rng, qWords, 0, 3).join(' '));
        const purpose = format.encode(pickSome(rng, qWords, 1, 3).join(' '));
        const query = pickSome(rng, queryWords, 1, 2).join(' ');
        const turn = [
          ids.think,
          ...think,
          ids.thinkEnd,
          ids.purpose,
          ...purpose,
          ids.purposeEnd,
          ids.search,
          ...format.encode(query),
          ids.searchEnd,
        ];
        const pages = index.search(query, m.topK).map((p) => p.text);
        const summary = someSentences(rng, pages);
        seen.push(...summary);
        const info = format.infoBlock(pages.length ? [format.encode(summary.join(' '))] : []);
        tokens.push(...turn, ...info);
        mask.push(...turn.map(() => 1), ...info.map(() => 0));
      }
      const candidates = valuesIn(seen, names);
      const answerText = candidates.length ? pick(rng, candidates) : pick(rng, [...names]);
      const answer = [
        ids.think,
        ...format.encode(pickSome(rng, qWords, 0, 3).join(' ')),
        ids.thinkEnd,
        ids.answer,
        ...format.encode(answerText),
        ids.answerEnd,
      ];
      tokens.push(...answer);
      mask.push(...answer.map(() => 1));
      out.push({ tokens, lossMask: mask });
    } else {
      // System 1's format: a purpose, the pages of a search filling one window, a summary copied from the window
      const purpose = format.encode(pickSome(rng, qWords, 1, 3).join(' ')).slice(0, m.purposeMax);
      const room = sys1Capacity(m.sys1PromptMax, format.sys1TemplateLength, purpose.length);
      const window: number[] = [];
      const texts: string[] = [];
      for (const page of index.search(pickSome(rng, queryWords, 1, 2).join(' '), m.topK)) {
        const words = format.encode(page.text);
        if (window.length + words.length + m.sepCost > room) break;
        window.push(...words, ids.sep);
        texts.push(page.text);
      }
      if (!texts.length) {
        const page = pick(rng, world.pages);
        const words = format.encode(page.text).slice(0, Math.max(0, room - m.sepCost));
        window.push(...words, ids.sep);
        texts.push(format.decode(words));
      }
      const prompt = [...format.sys1Head(purpose), ...window];
      const summary = [...format.encode(someSentences(rng, texts).join(' ')), ids.eos];
      out.push({ tokens: [...prompt, ...summary], lossMask: [...prompt.map(() => 0), ...summary.map(() => 1)] });
    }
  }
  return out;
}
