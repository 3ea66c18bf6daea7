/**
 * Lexer and parser of the MARTI language (grammar in README form at the end of this comment).
 *
 * The lexer reads characters, not the tokenizer's pieces, so "filter (x > 2)" and "filter ( x > 2 )" are the same
 * program and a multi-digit number decoded as "12" is one literal. Bounds keep parsing itself safe on any input: at most
 * `maxTokens` tokens and `maxDepth` nested brackets or operators, so no input can exhaust the JS stack.
 *
 *   program := stage ( '|' stage )*
 *   stage   := FN                              sort reverse sum len max min first last unique split join upper lower abs range
 *            | ('map'|'filter'|'apply'|'take'|'drop') unary
 *            | 'while' unary unary              repeat body while cond holds (x = current value)
 *   expr    := 'if' expr 'then' expr 'else' expr | or
 *   or      := and ('or' and)*        and := not ('and' not)*        not := 'not' not | cmp
 *   cmp     := add (('<'|'>'|'=') add)?
 *   add     := mul (('+'|'-') mul)*   mul := unary (('*'|'div'|'mod') unary)*
 *   unary   := '-' unary | FN unary | atom
 *   atom    := NUMBER | 'x' | 'true' | 'false' | '"' letters and spaces '"' | '[' (expr (',' expr)*)? ']' | '(' expr ')'
 */
import type { BinaryOp, Expr, Program, Stage } from './ast';
import { LangFailure, fail, type LangError } from './errors';
import { isArgStage, isUnaryFunction, languageKeywords } from './syntax';

export interface ParseLimits {
  maxTokens: number;
  maxDepth: number;
  /** Largest absolute integer literal. */
  maxInt: number;
}

export const DEFAULT_PARSE_LIMITS: Readonly<ParseLimits> = Object.freeze({
  maxTokens: 400,
  maxDepth: 40,
  maxInt: 1_000_000_000,
});

type Token =
  | { t: 'num'; value: number; pos: number }
  | { t: 'word'; text: string; pos: number }
  | { t: 'sym'; text: string; pos: number }
  | { t: 'text'; value: string; pos: number }
  | { t: 'end'; pos: number };

const SYMBOL_CHARS = new Set([...'()[],|+-*<>=']);
const KEYWORDS: ReadonlySet<string> = new Set(languageKeywords());
const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isLetter = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function lex(src: string, limits: ParseLimits): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (out.length >= limits.maxTokens) fail('parse', 'program too long', i);
    const start = i;
    if (isDigit(c)) {
      while (i < src.length && isDigit(src[i]!)) i++;
      const digits = src.slice(start, i);
      const value = Number(digits);
      if (digits.length > 10 || value > limits.maxInt) fail('parse', 'number too large', start);
      out.push({ t: 'num', value, pos: start });
    } else if (isLetter(c)) {
      while (i < src.length && isLetter(src[i]!)) i++;
      out.push({ t: 'word', text: src.slice(start, i), pos: start });
    } else if (c === '"') {
      i++;
      while (i < src.length && src[i] !== '"') {
        if (!isLetter(src[i]!) && !isSpace(src[i]!)) fail('parse', 'text needs only letters', i);
        i++;
      }
      if (i >= src.length) fail('parse', 'expected closing quote', start);
      const value = src
        .slice(start + 1, i)
        .split(/\s+/)
        .filter((w) => w !== '')
        .join(' ');
      i++;
      out.push({ t: 'text', value, pos: start });
    } else if (SYMBOL_CHARS.has(c)) {
      i++;
      out.push({ t: 'sym', text: c, pos: start });
    } else {
      fail('parse', 'unknown character', start);
    }
  }
  out.push({ t: 'end', pos: src.length });
  return out;
}

function describe(tok: Token): string {
  switch (tok.t) {
    case 'num':
      return 'number';
    case 'text':
      return 'text';
    case 'end':
      return 'end of program';
    case 'sym':
      return tok.text;
    case 'word':
      return KEYWORDS.has(tok.text) ? tok.text : 'unknown word';
  }
}

class Parser {
  private i = 0;
  private depth = 0;

  constructor(
    private readonly toks: Token[],
    private readonly limits: ParseLimits,
  ) {}

  private peek(): Token {
    return this.toks[this.i]!;
  }

  private next(): Token {
    const t = this.toks[this.i]!;
    if (t.t !== 'end') this.i++;
    return t;
  }

  private isSym(text: string): boolean {
    const t = this.peek();
    return t.t === 'sym' && t.text === text;
  }

  private isWord(text: string): boolean {
    const t = this.peek();
    return t.t === 'word' && t.text === text;
  }

  private expect(what: string, ok: boolean): void {
    if (!ok) {
      const t = this.peek();
      fail('parse', `expected ${what} found ${describe(t)}`, t.pos);
    }
    this.next();
  }

  private enter(pos: number): void {
    if (++this.depth > this.limits.maxDepth) fail('parse', 'nesting too deep', pos);
  }

  program(): Program {
    const stages: Stage[] = [this.stage()];
    while (this.isSym('|')) {
      this.next();
      stages.push(this.stage());
    }
    const t = this.peek();
    if (t.t !== 'end') fail('parse', `expected | or end of program found ${describe(t)}`, t.pos);
    return { stages };
  }

  private stage(): Stage {
    const t = this.peek();
    if (t.t === 'word' && isUnaryFunction(t.text)) {
      this.next();
      return { k: 'fn', fn: t.text, pos: t.pos };
    }
    if (t.t === 'word' && isArgStage(t.text)) {
      this.next();
      if (t.text === 'while') {
        const cond = this.unary();
        const body = this.unary();
        return { k: 'while', cond, body, pos: t.pos };
      }
      return { k: t.text, arg: this.unary(), pos: t.pos };
    }
    fail('parse', `expected stage found ${describe(t)}`, t.pos);
  }

  private expr(): Expr {
    const t = this.peek();
    this.enter(t.pos);
    let e: Expr;
    if (this.isWord('if')) {
      this.next();
      const cond = this.expr();
      this.expect('then', this.isWord('then'));
      const then = this.expr();
      this.expect('else', this.isWord('else'));
      e = { k: 'if', cond, then, else: this.expr(), pos: t.pos };
    } else {
      e = this.or();
    }
    this.depth--;
    return e;
  }

  private binaryChain(ops: readonly string[], operand: () => Expr): Expr {
    let left = operand();
    for (;;) {
      const t = this.peek();
      const text = t.t === 'sym' || t.t === 'word' ? t.text : '';
      if (!ops.includes(text)) return left;
      this.next();
      // A chain is a left-nested tree as deep as it is long; maxTokens bounds that, so the depth bound counts brackets
      // and prefix operators only.
      left = { k: 'bin', op: text as BinaryOp, left, right: operand(), pos: left.pos };
    }
  }

  private or(): Expr {
    return this.binaryChain(['or'], () => this.and());
  }

  private and(): Expr {
    return this.binaryChain(['and'], () => this.not());
  }

  private not(): Expr {
    const t = this.peek();
    if (this.isWord('not')) {
      this.next();
      this.enter(t.pos);
      const arg = this.not();
      this.depth--;
      return { k: 'not', arg, pos: t.pos };
    }
    return this.cmp();
  }

  private cmp(): Expr {
    const left = this.add();
    const t = this.peek();
    if (t.t === 'sym' && (t.text === '<' || t.text === '>' || t.text === '=')) {
      this.next();
      return { k: 'bin', op: t.text, left, right: this.add(), pos: left.pos };
    }
    return left;
  }

  private add(): Expr {
    return this.binaryChain(['+', '-'], () => this.mul());
  }

  private mul(): Expr {
    return this.binaryChain(['*', 'div', 'mod'], () => this.unary());
  }

  private unary(): Expr {
    const t = this.peek();
    if (t.t === 'sym' && t.text === '-') {
      this.next();
      this.enter(t.pos);
      const arg = this.unary();
      this.depth--;
      return { k: 'neg', arg, pos: t.pos };
    }
    if (t.t === 'word' && isUnaryFunction(t.text)) {
      this.next();
      this.enter(t.pos);
      const arg = this.unary();
      this.depth--;
      return { k: 'call', fn: t.text, arg, pos: t.pos };
    }
    return this.atom();
  }

  private atom(): Expr {
    const t = this.next();
    switch (t.t) {
      case 'num':
        return { k: 'num', value: t.value, pos: t.pos };
      case 'text':
        return { k: 'text', value: t.value, pos: t.pos };
      case 'word':
        if (t.text === 'x') return { k: 'var', pos: t.pos };
        if (t.text === 'true' || t.text === 'false') return { k: 'bool', value: t.text === 'true', pos: t.pos };
        break;
      case 'sym':
        if (t.text === '(') {
          this.enter(t.pos);
          const e = this.expr();
          this.expect(')', this.isSym(')'));
          this.depth--;
          return e;
        }
        if (t.text === '[') {
          this.enter(t.pos);
          const items: Expr[] = [];
          if (!this.isSym(']')) {
            items.push(this.expr());
            while (this.isSym(',')) {
              this.next();
              items.push(this.expr());
            }
          }
          this.expect(']', this.isSym(']'));
          this.depth--;
          return { k: 'list', items, pos: t.pos };
        }
        break;
      case 'end':
        break;
    }
    fail('parse', `expected expression found ${describe(t)}`, t.pos);
  }
}

export type ParseResult = { ok: true; program: Program } | { ok: false; error: LangError };

/** Parses program text. Never throws: bad input gives `{ ok: false, error: { kind: 'parse', message, position } }`. */
export function parse(src: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): ParseResult {
  try {
    const program = new Parser(lex(src, limits), limits).program();
    return { ok: true, program };
  } catch (e) {
    if (e instanceof LangFailure) return { ok: false, error: e.error };
    // A bug, not user input: still a value, so a trainer never dies on a sampled program.
    return { ok: false, error: { kind: 'parse', message: 'internal', position: 0 } };
  }
}
