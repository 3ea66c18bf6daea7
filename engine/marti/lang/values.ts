/**
 * Values of the MARTI language: integers, booleans, text (a JS string) and lists of values. All are plain JSON, so
 * test cases and outputs go into `trajectories.jsonl` as they are.
 */
import { joinTokens, numberTokens } from './text';

export type Value = number | boolean | string | Value[];

export type ValueType = 'number' | 'bool' | 'text' | 'list';

export function typeOf(v: Value): ValueType {
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'text';
  return 'list';
}

/** Structural equality (the test oracle): same type and same contents, lists element by element. */
export function valueEquals(a: Value, b: Value): boolean {
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valueEquals(a[i]!, b[i]!)) return false;
    return true;
  }
  return a === b;
}

/** A stable key for sets of values (distinct outputs, behaviour signatures). */
export function valueKey(v: Value): string {
  return JSON.stringify(v);
}

export interface FormatOptions {
  /** Words allowed inside displayed text; others are shown as `?` so feedback stays in the vocabulary. Default: any
   * run of ASCII letters. */
  knownWord?: (word: string) => boolean;
  /** Lists longer than this show their first `maxItems` elements and then `…`. Default 16. */
  maxItems?: number;
}

const LETTERS = /^[A-Za-z]+$/;

/** A value as pre-tokens: `[3, -1]`, `true`, `"red cat"`, `["ox", "cat"]`. */
export function valueTokens(v: Value, opts: FormatOptions = {}): string[] {
  const known = opts.knownWord ?? ((w: string) => LETTERS.test(w));
  const maxItems = opts.maxItems ?? 16;
  const out: string[] = [];
  const walk = (x: Value): void => {
    if (typeof x === 'number') out.push(...numberTokens(x));
    else if (typeof x === 'boolean') out.push(x ? 'true' : 'false');
    else if (typeof x === 'string') {
      out.push('"');
      for (const w of x.split(/\s+/)) if (w !== '') out.push(LETTERS.test(w) && known(w) ? w : '?');
      out.push('"');
    } else {
      out.push('[');
      x.slice(0, maxItems).forEach((item, i) => {
        if (i > 0) out.push(',');
        walk(item);
      });
      if (x.length > maxItems) out.push(',', '…');
      out.push(']');
    }
  };
  walk(v);
  return out;
}

/** A value as text in the tokenizer's normal form. */
export function formatValue(v: Value, opts: FormatOptions = {}): string {
  return joinTokens(valueTokens(v, opts));
}
