/**
 * SQuAD-style answer scoring (docs/algorithms.md §2.4: mars-lab judges answers with the task's exact checker).
 *
 * `normalizeAnswer` follows the SQuAD v1.1 evaluation script: lower case, drop punctuation, drop the articles a/an/the,
 * collapse whitespace. One addition for the word tokenizer, which writes one token per digit: runs of single digits
 * separated by spaces are joined ("1 9 5 2" → "1952"), so the world's token form of a year and the decoded "1952"
 * are the same answer, and a year counts as one token in F1.
 */

// SQuAD removes Python's string.punctuation; Unicode punctuation (\p{P}) is removed too, so "…" or "’" cannot split
// an otherwise equal answer.
const PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]|\p{P}/gu;
const ARTICLES = /\b(a|an|the)\b/g;
const SPACED_DIGIT = /(?<=(?:^|\s)\d) (?=\d(?:\s|$))/g;

export function normalizeAnswer(s: string): string {
  const words = s
    .toLowerCase()
    .replace(PUNCTUATION, '')
    .replace(ARTICLES, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .join(' ');
  return words.replace(SPACED_DIGIT, '');
}

function checkGolds(golds: readonly string[]): void {
  if (golds.length === 0) throw new RangeError('answer scoring needs at least one gold answer; got an empty list');
}

/** Whether the normalised prediction equals any normalised gold. */
export function exactMatch(prediction: string, golds: readonly string[]): boolean {
  checkGolds(golds);
  const p = normalizeAnswer(prediction);
  return golds.some((g) => normalizeAnswer(g) === p);
}

function tokenF1(prediction: string, gold: string): number {
  const p = normalizeAnswer(prediction)
    .split(' ')
    .filter((w) => w !== '');
  const g = normalizeAnswer(gold)
    .split(' ')
    .filter((w) => w !== '');
  // As in SQuAD v2: an empty side scores 1 only against another empty side.
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const w of g) counts.set(w, (counts.get(w) ?? 0) + 1);
  let common = 0;
  for (const w of p) {
    const c = counts.get(w) ?? 0;
    if (c > 0) {
      common++;
      counts.set(w, c - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / p.length;
  const recall = common / g.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Token F1 of the prediction against the best-matching gold, in [0, 1]. */
export function f1(prediction: string, golds: readonly string[]): number {
  checkGolds(golds);
  return Math.max(...golds.map((g) => tokenF1(prediction, g)));
}
