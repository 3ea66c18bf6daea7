/**
 * The rollout format of MARS (docs/algorithms.md §2.1): Search-R1-style tags [D]. System 2 writes
 * `<think>…</think>`, optionally `<purpose>p</purpose>`, then `<search>q</search>` or `<answer>a</answer>`; the
 * environment inserts `<info>õ</info>`. System 1 sees its template, the purpose and one bin of raw pages.
 * Every tag is a special token declared in the tokenizer file; this module looks them up, never hard-codes ids.
 */
import { tokenizerFromJSON, type Tokenizer } from '../model/tokenizers/tokenizer';

/** Special-token roles and their texts, declared once for the MARS tokenizer. */
export const MARS_SPECIALS = {
  pad: '<pad>',
  bos: '<bos>',
  eos: '<eos>',
  unk: '<unk>',
  sys1: '<sys1>',
  sys2: '<sys2>',
  think: '<think>',
  thinkEnd: '</think>',
  purpose: '<purpose>',
  purposeEnd: '</purpose>',
  search: '<search>',
  searchEnd: '</search>',
  answer: '<answer>',
  answerEnd: '</answer>',
  info: '<info>',
  infoEnd: '</info>',
  sep: '<sep>',
  noResults: '<noresults>',
} as const;

export type MarsTag = keyof typeof MARS_SPECIALS;

/** The MARS tokenizer: the specials above, then every word a world can produce. */
export function marsTokenizer(vocabulary: readonly string[]): Tokenizer {
  const specials = Object.values(MARS_SPECIALS);
  const words = [...new Set(vocabulary)].filter((w) => !specials.includes(w as (typeof specials)[number]));
  return tokenizerFromJSON(
    { type: 'word', specials: { ...MARS_SPECIALS }, tokens: [...specials, ...words] },
    'MARS tokenizer',
  );
}

export class MarsFormat {
  readonly ids: { [K in MarsTag]: number };

  constructor(readonly tokenizer: Tokenizer) {
    this.ids = Object.fromEntries(
      Object.entries(MARS_SPECIALS).map(([role, text]) => [role, tokenizer.idOf(text)]),
    ) as {
      [K in MarsTag]: number;
    };
  }

  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  decode(ids: readonly number[]): string {
    return this.tokenizer.decode(ids);
  }

  /** System 2's prompt x: `<bos> <sys2> question <sep>`. */
  sys2Prompt(question: string): number[] {
    return [this.ids.bos, this.ids.sys2, ...this.encode(question), this.ids.sep];
  }

  /** System 1's template around the purpose: `<bos> <sys1> purpose <sep>`; the bin's documents follow, each + `<sep>`. */
  sys1Head(purpose: readonly number[]): number[] {
    return [this.ids.bos, this.ids.sys1, ...purpose, this.ids.sep];
  }

  /** Tokens of the System 1 template that are not the purpose (the `len(sys1Template)` of §2.3). */
  get sys1TemplateLength(): number {
    return 3;
  }

  /** Stop tokens of a System 2 turn (§2.1). */
  get sys2Stops(): number[] {
    return [this.ids.searchEnd, this.ids.answerEnd, this.ids.eos];
  }

  /** `<info> õ_1 <sep> õ_2 … </info>`, or `<info> <noresults> </info>` when nothing was found (§2.2, §2.3). */
  infoBlock(outputs: readonly (readonly number[])[]): number[] {
    if (outputs.length === 0) return [this.ids.info, this.ids.noResults, this.ids.infoEnd];
    const body = outputs.flatMap((o, i) => (i === 0 ? [...o] : [this.ids.sep, ...o]));
    return [this.ids.info, ...body, this.ids.infoEnd];
  }

  /** The spans a System 2 turn wrote: the last `<tag>…</tag>` of each kind (an unclosed final span counts to the end). */
  parseTurn(turn: readonly number[]): { query: number[] | null; purpose: number[] | null; answer: number[] | null } {
    const span = (open: number, close: number): number[] | null => {
      const start = turn.lastIndexOf(open);
      if (start < 0) return null;
      const end = turn.indexOf(close, start + 1);
      return turn.slice(start + 1, end < 0 ? turn.length : end).filter((t) => !this.isTag(t));
    };
    const ended = turn.at(-1);
    return {
      query: ended === this.ids.searchEnd ? span(this.ids.search, this.ids.searchEnd) : null,
      purpose: span(this.ids.purpose, this.ids.purposeEnd),
      answer: ended === this.ids.answerEnd ? span(this.ids.answer, this.ids.answerEnd) : null,
    };
  }

  isTag(id: number): boolean {
    return this.tokenizer.isSpecial(id);
  }
}
