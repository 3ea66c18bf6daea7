/**
 * The load-time check that a tokenizer's regular expressions cannot backtrack catastrophically (issue 30, "Bad
 * input"): a tokenizer.json may carry any pattern in a Split pre-tokenizer or a Replace normalizer/decoder, and
 * tokenizers.js runs it with JavaScript's backtracking engine on every input. `(a+)+$` on 'aaaa…b' takes 2^n steps, and a
 * JavaScript regex cannot be interrupted on its own thread, so a bad pattern must be refused before it ever runs.
 *
 * Why a check on load rather than encode under a time bound: the Tokenizer interface's encode() is synchronous and
 * runs once per prompt and rollout; bounding it would mean every encode crossing to a worker thread (and the worker
 * holding a second copy of a 150k-token vocabulary) only to guard against files that a structural rule can recognise.
 *
 * The rule is conservative (it refuses some harmless patterns) and is applied to the JavaScript source tokenizers.js
 * actually compiles. It refuses:
 *   - nested repetition: a repeated group (max > 1) containing a repetition of varying count, `(a+)+`, `(a*b){9}`;
 *   - repeated alternation: a repeated group containing `|`, `(a|a)*` (overlapping branches make it exponential);
 *   - backreferences, `(a*)\1` (not regular; their cost is not bounded by the pattern's shape);
 *   - more than two unbounded repetitions in one branch, `a*a*a*b` (polynomial of that degree per match attempt).
 * Without these, a match attempt backtracks at most O(n²) steps. The real models' patterns (GPT-2's, Llama 3's, Qwen2's,
 * SmolLM's digits) pass: they repeat only single characters or classes, with at most two in a branch.
 */

/** A parsed pattern: branches of sequences of terms. */
type Alternation = Term[][];
type Term =
  | { kind: 'atom' }
  | { kind: 'backref' }
  | { kind: 'group'; body: Alternation; lookaround: boolean }
  | { kind: 'repeat'; of: Term; min: number; max: number };

/** Why a pattern is refused, in a few words a user can act on; null when it passes. */
export function catastrophicBacktrackingReason(source: string): string | null {
  let tree: Alternation;
  try {
    tree = new PatternParser(source).parse();
  } catch (err) {
    return `it could not be analysed (${(err as Error).message})`;
  }
  return checkAlternation(tree);
}

function checkAlternation(alt: Alternation): string | null {
  for (const branch of alt) {
    const unbounded = countUnbounded(branch);
    if (unbounded > 2) return `${unbounded} unbounded repetitions in one branch, like a*a*a*b`;
    for (const term of branch) {
      const reason = checkTerm(term);
      if (reason !== null) return reason;
    }
  }
  return null;
}

function checkTerm(term: Term): string | null {
  switch (term.kind) {
    case 'atom':
      return null;
    case 'backref':
      return 'a backreference, like (a*)\\1';
    case 'group':
      return checkAlternation(term.body);
    case 'repeat':
      if (term.max > 1 && containsVariableRepeat(term.of)) return 'a repeated group that itself repeats, like (a+)+';
      if (term.max > 1 && containsAlternation(term.of)) return 'a repeated alternation, like (a|a)*';
      return checkTerm(term.of);
  }
}

/** A repetition whose count can vary (min < max): a fixed count such as Oniguruma's stacked `X{2}+` cannot trade
 * characters between iterations. */
function containsVariableRepeat(term: Term): boolean {
  if (term.kind === 'repeat') return (term.min < term.max && term.max > 1) || containsVariableRepeat(term.of);
  if (term.kind === 'group') return term.body.some((branch) => branch.some(containsVariableRepeat));
  return false;
}

function containsAlternation(term: Term): boolean {
  if (term.kind === 'repeat') return containsAlternation(term.of);
  if (term.kind === 'group') return term.body.length > 1 || term.body.some((b) => b.some(containsAlternation));
  return false;
}

/** Unbounded repetitions met along a branch, looking through groups that are neither repeated nor alternatives. */
function countUnbounded(branch: Term[]): number {
  let n = 0;
  for (const term of branch) {
    if (term.kind === 'repeat' && term.max === Infinity) n++;
    else if (term.kind === 'group' && !term.lookaround && term.body.length === 1) n += countUnbounded(term.body[0]!);
  }
  return n;
}

/**
 * A parser of the JavaScript `u`-mode syntax, enough to see groups, alternation, repetition and backreferences. The
 * source has already compiled as a `u`-mode RegExp, so braces are always quantifiers and escapes are well formed.
 */
class PatternParser {
  private i = 0;

  constructor(private readonly src: string) {}

  parse(): Alternation {
    const alt = this.alternation();
    if (this.i < this.src.length) throw new Error(`unbalanced ')' at ${this.i}`);
    return alt;
  }

  private alternation(): Alternation {
    const branches: Term[][] = [[]];
    while (this.i < this.src.length) {
      const c = this.src[this.i]!;
      if (c === ')') break;
      if (c === '|') {
        this.i++;
        branches.push([]);
        continue;
      }
      const term = this.quantified(this.term());
      branches[branches.length - 1]!.push(term);
    }
    return branches;
  }

  private term(): Term {
    const c = this.src[this.i]!;
    if (c === '(') return this.group();
    if (c === '[') {
      this.skipClass();
      return { kind: 'atom' };
    }
    if (c === '\\') return this.escape();
    this.i++;
    return { kind: 'atom' };
  }

  private group(): Term {
    const rest = this.src.slice(this.i, this.i + 4);
    let lookaround = false;
    if (rest.startsWith('(?<=') || rest.startsWith('(?<!')) {
      lookaround = true;
      this.i += 4;
    } else if (rest.startsWith('(?=') || rest.startsWith('(?!')) {
      lookaround = true;
      this.i += 3;
    } else if (rest.startsWith('(?:')) {
      this.i += 3;
    } else if (rest.startsWith('(?<')) {
      const close = this.src.indexOf('>', this.i);
      if (close < 0) throw new Error('unterminated group name');
      this.i = close + 1;
    } else if (rest.startsWith('(?')) {
      throw new Error(`unknown group syntax at ${this.i}`);
    } else {
      this.i++;
    }
    const body = this.alternation();
    if (this.src[this.i] !== ')') throw new Error('unterminated group');
    this.i++;
    return { kind: 'group', body, lookaround };
  }

  private skipClass(): void {
    this.i++;
    while (this.i < this.src.length && this.src[this.i] !== ']') {
      this.i += this.src[this.i] === '\\' ? 2 : 1;
    }
    if (this.i >= this.src.length) throw new Error('unterminated character class');
    this.i++;
  }

  private escape(): Term {
    const next = this.src[this.i + 1] ?? '';
    if (/[1-9]/.test(next)) {
      this.i += 2;
      while (/[0-9]/.test(this.src[this.i] ?? '')) this.i++;
      return { kind: 'backref' };
    }
    if (next === 'k' && this.src[this.i + 2] === '<') {
      this.i = this.src.indexOf('>', this.i) + 1;
      if (this.i === 0) throw new Error('unterminated \\k<name>');
      return { kind: 'backref' };
    }
    if (/[pPu]/.test(next) && this.src[this.i + 2] === '{') {
      const close = this.src.indexOf('}', this.i);
      if (close < 0) throw new Error('unterminated \\p{…}');
      this.i = close + 1;
    } else if (next === 'u') {
      this.i += 6;
    } else if (next === 'x') {
      this.i += 4;
    } else if (next === 'c') {
      this.i += 3;
    } else {
      this.i += 2;
    }
    return { kind: 'atom' };
  }

  /** The term with the quantifier that follows it, if any (a lazy `?` after it changes nothing here). */
  private quantified(term: Term): Term {
    const c = this.src[this.i];
    let min: number;
    let max: number;
    if (c === '*' || c === '+') {
      [min, max] = [c === '*' ? 0 : 1, Infinity];
      this.i++;
    } else if (c === '?') {
      [min, max] = [0, 1];
      this.i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i, this.i + 32));
      if (m === null) throw new Error(`bad quantifier at ${this.i}`);
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.i += m[0].length;
    } else {
      return term;
    }
    if (this.src[this.i] === '?') this.i++;
    return this.quantified({ kind: 'repeat', of: term, min, max });
  }
}
