/**
 * The verifiable text task of `chatgrpo` (issue 30, item 7): short additions asked in words, "What is 17 + 25?
 * Answer with the number only.", scored from the reply's text. A pair (a, b) is held out for evaluation when a
 * hash of it and the evaluation seed falls in the held-out share, so training never draws an evaluated problem.
 *
 * The reward has two halves, so a group of a real model's replies is rarely all alike: 0.5 when the reply states the
 * right sum as a whole number anywhere (the model can add), and 0.5 more when the reply is that number and nothing
 * else (it follows the format). `exact` is the second: the reply, trimmed, is the sum.
 */
import type { Rng } from '../random/prng';

export interface ArithmeticItem {
  a: number;
  b: number;
}

export interface ArithmeticTaskOptions {
  /** Operands are drawn from 0..maxOperand. */
  maxOperand: number;
  /** The sentence after the question. */
  instruction: string;
  evalSeed: number;
  heldoutFraction: number;
}

/** A 32-bit mix of (a, b, seed): which pairs are held out. */
function pairHash(a: number, b: number, seed: number): number {
  let h = (Math.imul(a + 1, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca77) ^ Math.imul(seed + 1, 0xc2b2ae3d)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export interface ReplyScore {
  reward: number;
  /** The reply states the sum as a whole number somewhere. */
  correct: boolean;
  /** The reply, trimmed (a final full stop allowed), is the sum and nothing else. */
  exact: boolean;
}

export class ArithmeticTask {
  constructor(private readonly o: ArithmeticTaskOptions) {
    const pairs = (o.maxOperand + 1) ** 2;
    const held = this.heldOut().length;
    if (held === 0 || held === pairs) {
      throw new Error(
        `task: ${held} of ${pairs} problems held out; raise task.maxOperand or change task.heldoutFraction`,
      );
    }
  }

  isHeldOut(item: ArithmeticItem): boolean {
    return pairHash(item.a, item.b, this.o.evalSeed) / 2 ** 32 < this.o.heldoutFraction;
  }

  /** Every held-out problem, in a fixed order. */
  heldOut(): ArithmeticItem[] {
    const out: ArithmeticItem[] = [];
    for (let a = 0; a <= this.o.maxOperand; a++) {
      for (let b = 0; b <= this.o.maxOperand; b++) if (this.isHeldOut({ a, b })) out.push({ a, b });
    }
    return out;
  }

  /** A training problem: uniform over the pairs not held out. */
  sampleTrain(rng: Rng): ArithmeticItem {
    for (;;) {
      const item = { a: rng.int(this.o.maxOperand + 1), b: rng.int(this.o.maxOperand + 1) };
      if (!this.isHeldOut(item)) return item;
    }
  }

  /** The first `n` held-out problems, spread over the whole held-out set. */
  evalItems(n: number): ArithmeticItem[] {
    const all = this.heldOut();
    if (n >= all.length) return all;
    return Array.from({ length: n }, (_, i) => all[Math.floor((i * all.length) / n)]!);
  }

  question(item: ArithmeticItem): string {
    return `What is ${item.a} + ${item.b}? ${this.o.instruction}`.trim();
  }

  answer(item: ArithmeticItem): string {
    return String(item.a + item.b);
  }

  score(item: ArithmeticItem, reply: string): ReplyScore {
    const want = this.answer(item);
    const numbers: string[] = reply.match(/-?\d+/g) ?? [];
    const correct = numbers.includes(want);
    const exact = reply.trim().replace(/\.$/, '') === want;
    return { reward: (correct ? 0.5 : 0) + (exact ? 0.5 : 0), correct, exact };
  }
}
