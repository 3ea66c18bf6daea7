/**
 * Bounded work on values a request or a file brought: how big a config is (measured with an early stop, never by
 * serialising all of it), a short prefix of any value for an error message, and JSON parse errors that never quote
 * the bytes they failed on (Node's own messages quote the start of the text, which may be any file's content).
 */

/** The largest config (as JSON) a launch, a validation or a config file may be: presets are ~2 KB. */
export const MAX_CONFIG_BYTES = 256 * 1024;
/** The deepest nesting a config may have (presets: 4). */
export const MAX_CONFIG_DEPTH = 32;

/**
 * Why `value` is too big or too deep to be a config, or undefined when it is not. Walks at most MAX_CONFIG_BYTES worth
 * of the value (iteratively: no recursion to overflow), so the answer costs little whatever was sent.
 */
export function configSizeProblem(value: unknown, limit = MAX_CONFIG_BYTES): string | undefined {
  let bytes = 0;
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (depth > MAX_CONFIG_DEPTH) {
      return `is nested more than ${MAX_CONFIG_DEPTH} levels deep; a config is at most ${MAX_CONFIG_DEPTH}`;
    }
    if (typeof v === 'string') bytes += v.length + 2;
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) bytes += 6;
    else if (Array.isArray(v)) {
      bytes += 2 + v.length;
      if (bytes > limit) break;
      for (let i = 0; i < v.length; i++) stack.push({ v: v[i], depth: depth + 1 });
    } else if (typeof v === 'object') {
      bytes += 2;
      for (const key in v) {
        if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
        bytes += key.length + 4;
        if (bytes > limit) break;
        stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1 });
      }
    } else bytes += 8;
    if (bytes > limit) break;
  }
  if (bytes > limit) {
    return `is larger than ${limit / 1024} KiB as JSON; a config is at most ${limit / 1024} KiB (the presets are about 2 KiB)`;
  }
  return undefined;
}

/** A short text: the first `max` characters, with … when cut. */
export function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * JSON of `value`, at most `max` characters, costing O(max) whatever the value's size: strings are cut before they
 * are quoted and containers are written item by item until the budget is spent.
 */
export function boundedJson(value: unknown, max = 80): string {
  let out = '';
  const write = (v: unknown, depth: number): boolean => {
    if (out.length >= max) return false;
    if (typeof v === 'string') out += JSON.stringify(v.length > max ? v.slice(0, max) : v);
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out += JSON.stringify(v);
    else if (typeof v === 'bigint') out += String(v);
    else if (v === undefined || typeof v === 'function' || typeof v === 'symbol') out += 'undefined';
    else if (depth > 8) out += '…';
    else if (Array.isArray(v)) {
      out += '[';
      for (let i = 0; i < v.length; i++) {
        if (i > 0) out += ',';
        if (!write(v[i], depth + 1)) return false;
      }
      out += ']';
    } else {
      out += '{';
      let first = true;
      for (const key in v) {
        if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
        out += `${first ? '' : ','}${JSON.stringify(key.length > max ? key.slice(0, max) : key)}:`;
        first = false;
        if (!write((v as Record<string, unknown>)[key], depth + 1)) return false;
      }
      out += '}';
    }
    return out.length < max;
  };
  write(value, 0);
  return clip(out, max);
}

/**
 * What was wrong with text JSON.parse refused, for `not valid JSON (…)`, by position only. Node's messages quote the
 * text (`Unexpected token 'r', "root:x:0:0:"... is not valid JSON`), which would echo a file's first bytes into an
 * error shown in a window.
 */
export function jsonParseProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/unexpected end/i.test(message)) return 'it ends before the value is complete';
  const line = /line (\d+) column (\d+)/.exec(message);
  if (line) return `at line ${line[1]}, column ${line[2]}`;
  const at = /position (\d+)/.exec(message);
  if (at) return `at character ${at[1]}`;
  if (/too deep|call stack/i.test(message)) return 'nested too deeply';
  return 'an unexpected character';
}

/** JSON.parse's own error: a SyntaxError whose message is one of V8's JSON messages. */
export function isJsonParseError(err: unknown): err is SyntaxError {
  return err instanceof SyntaxError && /valid JSON|in JSON at position|JSON input|Unexpected token/.test(err.message);
}

// V8's JSON messages that quote the text (10 characters either side of the fault, `...` where cut): `Unexpected token
// 'S', "SECRET-dec"... is not valid JSON`, `..."b": SECRET-dec"...`, and `"undefined" is not valid JSON`.
const QUOTING_TOKEN_MESSAGE =
  /Unexpected token '[\s\S]{1,2}', (?:\.\.\.)?"[\s\S]{0,64}?"(?:\.\.\.)? is not valid JSON/g;
const QUOTING_SHORT_MESSAGE = /"[^"\n]{0,40}" is not valid JSON/g;

/**
 * `text` (a message, a stack, a worker's stderr) with each quotation of V8's JSON messages replaced by what it says
 * without the bytes: for text that may carry such a message wrapped in another (`… (${err.message})`) on its way to a
 * terminal or a window, where jsonParseProblem was not used.
 */
export function withoutJsonQuotes(text: string): string {
  if (!text.includes('is not valid JSON')) return text;
  return text
    .replace(QUOTING_TOKEN_MESSAGE, 'not valid JSON (an unexpected character)')
    .replace(QUOTING_SHORT_MESSAGE, 'not valid JSON (an unexpected character)');
}
