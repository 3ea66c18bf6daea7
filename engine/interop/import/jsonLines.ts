/**
 * Reading other trainers' logs line by line (issue 18 part 4): a file is streamed (never read whole, so a dump of
 * gigabytes costs one line of memory), each line parsed as the JSON Python's `json.dumps` writes, and a line that is
 * not JSON becomes a problem naming its file and line, not the end of the import.
 *
 * Python's json module writes the non-standard tokens NaN, Infinity and -Infinity for float values (allow_nan=True is
 * its default, and verl's `_dump_generations` calls `json.dumps(entry, ensure_ascii=False)`), so a line that fails
 * JSON.parse is read again with those tokens (outside strings) taken as null.
 */
import fs from 'node:fs';
import readline from 'node:readline';
import { jsonParseProblem } from '../../base/boundedText';

export interface JsonLine {
  /** 1-based line number in the file. */
  lineNo: number;
  /** The parsed value, when the line is JSON. */
  value?: unknown;
  /** Why the line could not be read, when it is not JSON. */
  problem?: string;
}

/** JSON.parse, with Python's NaN/Infinity/-Infinity outside strings read as null. Throws as JSON.parse does. */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
    return JSON.parse(nonFiniteToNull(text));
  }
}

/** Replaces the bare tokens NaN, Infinity and -Infinity (never the same letters inside a string) with null. */
function nonFiniteToNull(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
      continue;
    }
    const token = text.startsWith('-Infinity', i)
      ? '-Infinity'
      : text.startsWith('Infinity', i)
        ? 'Infinity'
        : text.startsWith('NaN', i)
          ? 'NaN'
          : null;
    if (token) {
      out += 'null';
      i += token.length - 1;
      continue;
    }
    out += c;
  }
  return out;
}

/**
 * The lines of `file`, parsed, in order; empty lines are skipped. `onBytes` is told how many bytes have been read so
 * far (for progress on large dumps).
 */
export async function* jsonLines(file: string, onBytes?: (bytes: number) => void): AsyncGenerator<JsonLine> {
  const stream = fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 });
  let bytes = 0;
  if (onBytes) stream.on('data', (chunk) => onBytes((bytes += Buffer.byteLength(chunk as string))));
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  let lineNo = 0;
  try {
    for await (const text of lines) {
      lineNo++;
      if (text.trim() === '') continue;
      try {
        yield { lineNo, value: parsePythonJson(text) };
      } catch (err) {
        yield { lineNo, problem: `not JSON (${jsonParseProblem(err)})` };
      }
    }
  } finally {
    lines.close();
    stream.destroy();
  }
}
