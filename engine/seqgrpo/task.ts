/**
 * The sequence task of the `seqgrpo` algorithm: map a short sequence of symbols to another (copy, reverse, sort,
 * increment). The input space is split by a seeded hash into training inputs and held-out inputs, so evaluation items
 * are never trained on: `heldout(x)` depends only on x and evalSeed, and training draws reject held-out inputs.
 */
import { tokenizerFromJSON, type Tokenizer } from '../model/tokenizers/tokenizer';
import { Rng } from '../random/prng';
import { UserError } from '../base/userError';

export type SeqTaskKind = 'copy' | 'reverse' | 'sort' | 'increment';

export interface SeqTaskConfig {
  kind: SeqTaskKind;
  symbols: number;
  length: number;
  trainSeed: number;
  evalSeed: number;
  heldoutFraction: number;
}

export interface SeqItem {
  /** Symbol indices 0…symbols−1. */
  input: number[];
  target: number[];
}

const SYMBOL_NAMES = Array.from({ length: 64 }, (_, i) => `s${i}`);

/** The task's vocabulary: specials first, then one token per symbol. */
export function seqTokenizer(symbols: number): Tokenizer {
  return tokenizerFromJSON(
    {
      type: 'word',
      specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>', sep: '<sep>' },
      tokens: ['<pad>', '<bos>', '<eos>', '<unk>', '<sep>', ...SYMBOL_NAMES.slice(0, symbols)],
    },
    'seqgrpo tokenizer',
  );
}

export function applyKind(kind: SeqTaskKind, x: readonly number[], symbols: number): number[] {
  switch (kind) {
    case 'copy':
      return x.slice();
    case 'reverse':
      return x.slice().reverse();
    case 'sort':
      return x.slice().sort((a, b) => a - b);
    case 'increment':
      return x.map((v) => (v + 1) % symbols);
  }
}

/** FNV-1a over the seed and the symbols, mapped to [0, 1). */
function unitHash(x: readonly number[], seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (const v of [seed >>> 16, ...x]) {
    h ^= v & 0xff;
    h = Math.imul(h, 0x01000193);
    h ^= v >>> 8;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return (h >>> 0) / 2 ** 32;
}

export class SeqTask {
  readonly tokenizer: Tokenizer;
  private readonly firstSymbol: number;
  readonly spaceSize: number;

  constructor(readonly config: SeqTaskConfig) {
    this.tokenizer = seqTokenizer(config.symbols);
    this.firstSymbol = this.tokenizer.idOf('s0');
    this.spaceSize = Math.pow(config.symbols, config.length);
  }

  heldout(x: readonly number[]): boolean {
    return unitHash(x, this.config.evalSeed) < this.config.heldoutFraction;
  }

  private randomInput(rng: Rng): number[] {
    return Array.from({ length: this.config.length }, () => rng.int(this.config.symbols));
  }

  /** A training item (never a held-out input). */
  sampleTrain(rng: Rng): SeqItem {
    for (let tries = 0; tries < 10_000; tries++) {
      const input = this.randomInput(rng);
      if (!this.heldout(input)) return { input, target: applyKind(this.config.kind, input, this.config.symbols) };
    }
    throw new UserError('task: no training input found outside the held-out set; lower task.heldoutFraction');
  }

  /** The fixed held-out evaluation set: `n` distinct held-out inputs drawn from evalSeed (fewer if the space is small). */
  evalItems(n: number): SeqItem[] {
    const rng = new Rng(this.config.evalSeed).split('eval-items');
    const seen = new Set<string>();
    const items: SeqItem[] = [];
    for (let tries = 0; items.length < n && tries < n * 200; tries++) {
      const input = this.randomInput(rng);
      const key = input.join(',');
      if (seen.has(key) || !this.heldout(input)) continue;
      seen.add(key);
      items.push({ input, target: applyKind(this.config.kind, input, this.config.symbols) });
    }
    if (items.length === 0) {
      throw new UserError('task: the held-out set is empty; raise task.heldoutFraction or task.length');
    }
    return items;
  }

  prompt(item: SeqItem): number[] {
    const t = this.tokenizer.specials;
    // seqTokenizer declares sep; the tokenizer holds every declared role.
    return [t.bos, ...item.input.map((v) => v + this.firstSymbol), t.sep!];
  }

  /** Response tokens back to symbols (−1 for anything that is not a symbol). */
  symbolsOf(tokens: readonly number[]): number[] {
    return tokens.map((id) => {
      const v = id - this.firstSymbol;
      return v >= 0 && v < this.config.symbols ? v : -1;
    });
  }

  /** Share of positions right: the training reward (dense, so a random policy already sees a signal). */
  positionScore(item: SeqItem, response: readonly number[]): number {
    const got = this.symbolsOf(response);
    return item.target.filter((v, i) => got[i] === v).length / item.target.length;
  }

  exact(item: SeqItem, response: readonly number[]): boolean {
    return this.positionScore(item, response) === 1;
  }

  describe(tokens: readonly number[]): string {
    return this.tokenizer.decode(tokens);
  }
}
