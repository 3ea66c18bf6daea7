/**
 * Canonical text of a MARTI program: minimal brackets inside expressions, every non-atomic stage argument in
 * brackets, and the spacing of the word tokenizer's normal form (text.ts). Parsing the printed text gives the same
 * tree, and every program has one printed form, so programs can be compared and deduplicated by their text.
 */
import type { Expr, Program, Stage } from './ast';
import { joinTokens, numberTokens } from './text';

const PREC = { if: 0, or: 1, and: 2, not: 3, cmp: 4, add: 5, mul: 6, prefix: 7, atom: 8 } as const;

function precOf(e: Expr): number {
  switch (e.k) {
    case 'if':
      return PREC.if;
    case 'not':
      return PREC.not;
    case 'neg':
    case 'call':
      return PREC.prefix;
    case 'bin':
      switch (e.op) {
        case 'or':
          return PREC.or;
        case 'and':
          return PREC.and;
        case '<':
        case '>':
        case '=':
          return PREC.cmp;
        case '+':
        case '-':
          return PREC.add;
        default:
          return PREC.mul;
      }
    default:
      return PREC.atom;
  }
}

function exprTokens(e: Expr, minPrec: number, out: string[]): void {
  const p = precOf(e);
  if (p < minPrec) {
    out.push('(');
    exprTokens(e, PREC.if, out);
    out.push(')');
    return;
  }
  switch (e.k) {
    case 'num':
      out.push(...numberTokens(e.value));
      return;
    case 'bool':
      out.push(e.value ? 'true' : 'false');
      return;
    case 'text':
      out.push('"', ...e.value.split(' ').filter((w) => w !== ''), '"');
      return;
    case 'var':
      out.push('x');
      return;
    case 'list':
      out.push('[');
      e.items.forEach((item, i) => {
        if (i > 0) out.push(',');
        exprTokens(item, PREC.if, out);
      });
      out.push(']');
      return;
    case 'neg':
      out.push('-');
      exprTokens(e.arg, PREC.prefix, out);
      return;
    case 'call':
      out.push(e.fn);
      exprTokens(e.arg, PREC.prefix, out);
      return;
    case 'not':
      out.push('not');
      exprTokens(e.arg, PREC.not, out);
      return;
    case 'if':
      out.push('if');
      exprTokens(e.cond, PREC.if, out);
      out.push('then');
      exprTokens(e.then, PREC.if, out);
      out.push('else');
      exprTokens(e.else, PREC.if, out);
      return;
    case 'bin': {
      // Chains are left-associative; comparisons do not chain, so both their sides sit one level up.
      exprTokens(e.left, p === PREC.cmp ? p + 1 : p, out);
      out.push(e.op);
      exprTokens(e.right, p + 1, out);
      return;
    }
  }
}

function stageTokens(s: Stage, out: string[]): void {
  if (s.k === 'fn') {
    out.push(s.fn);
  } else if (s.k === 'while') {
    out.push('while');
    exprTokens(s.cond, PREC.atom, out);
    exprTokens(s.body, PREC.atom, out);
  } else {
    out.push(s.k);
    exprTokens(s.arg, PREC.atom, out);
  }
}

/** The program as pre-tokens (one digit per token), the unit the tokenizer and edit distances work in. */
export function programTokens(program: Program): string[] {
  const out: string[] = [];
  program.stages.forEach((s, i) => {
    if (i > 0) out.push('|');
    stageTokens(s, out);
  });
  return out;
}

/** The program's canonical text. */
export function printProgram(program: Program): string {
  return joinTokens(programTokens(program));
}

export function printExpr(e: Expr): string {
  const out: string[] = [];
  exprTokens(e, PREC.if, out);
  return joinTokens(out);
}
