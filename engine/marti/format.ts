/**
 * The MARTI tokenizer and the token layout of a node (docs/algorithms.md §3.2): `<bos> prompt` is the prompt x, the
 * program's words then `<eos>` are the completion y. The vocabulary is fixed (the world's words plus ROLE_WORDS), so
 * every MARTI checkpoint has the same tokenizer whatever its config.
 */
import { tokenizerFromJSON, type Tokenizer } from '../model/tokenizers/tokenizer';
import { ROLE_WORDS } from './configSchema';
import { martiVocabulary } from './tasks/vocabulary';

export const MARTI_SPECIALS = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' } as const;

export class MartiFormat {
  readonly bos: number;
  readonly eos: number;
  constructor(readonly tokenizer: Tokenizer) {
    this.bos = tokenizer.idOf(MARTI_SPECIALS.bos);
    this.eos = tokenizer.idOf(MARTI_SPECIALS.eos);
  }

  /** x: `<bos>` and the prompt's words. */
  prompt(text: string): number[] {
    return [this.bos, ...this.tokenizer.encode(text)];
  }

  /** y for supervised data: the program's words and `<eos>`. */
  completion(program: string): number[] {
    return [...this.tokenizer.encode(program), this.eos];
  }

  /** The text of generated tokens, without a final `<eos>` and without specials. */
  decodeCompletion(ids: readonly number[]): string {
    const body = ids.length && ids[ids.length - 1] === this.eos ? ids.slice(0, -1) : ids;
    return this.tokenizer.decode(body, { skipSpecial: true });
  }
}

let cached: MartiFormat | null = null;
export function martiFormat(): MartiFormat {
  if (cached) return cached;
  const specials = Object.values(MARTI_SPECIALS) as string[];
  const words = [...new Set([...martiVocabulary(), ...ROLE_WORDS])].filter((w) => !specials.includes(w));
  return (cached = new MartiFormat(
    tokenizerFromJSON(
      { type: 'word', lowercase: false, specials: { ...MARTI_SPECIALS }, tokens: [...specials, ...words] },
      'MARTI tokenizer',
    ),
  ));
}
