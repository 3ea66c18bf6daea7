/**
 * MARTI on a user's task file: held-out problems from a JSONL file instead of generated ones (`task.file`), in the
 * generated tasks' form — one task a line:
 *
 *   {"id": "double", "statement": "double each number", "publicTests": [{"input": [1, 2], "expected": [2, 4]}],
 *    "privateTests": [{"input": [5], "expected": [10]}], "target": "map (x * 2)"}
 *
 * Values are numbers (integers), booleans, texts or lists of them. Statements and text values are read in MARTI's
 * tokenizer, so their words must be its words (every agent, local or endpoint, sees the prompt through it); a
 * `target`, when given, must pass every test (a task that contradicts itself is refused). Every problem names its
 * line and field and the fix, in one line.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { z } from 'zod';
import { martiFormat } from '../format';
import { textTokens } from '../lang/text';
import { valueTokens, type Value } from '../lang/values';
import type { MartiTask } from './generator';
import { evaluateProgram, knownTextWord } from './scoring';
import { UserError } from '../../base/userError';

const valueSchema: z.ZodType<Value> = z.lazy(() =>
  z.union([z.int().min(-1_000_000).max(1_000_000), z.boolean(), z.string().max(200), z.array(valueSchema).max(64)]),
);
const testSchema = z.strictObject({ input: valueSchema, expected: valueSchema });
const taskSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, {
    error: 'a letter or digit, then letters, digits, _ . or - (at most 100)',
  }),
  statement: z.string().min(1).max(2000),
  publicTests: z.array(testSchema).min(1).max(8),
  privateTests: z.array(testSchema).min(1).max(50),
  target: z.string().min(1).max(2000).optional(),
});

const MAX_BYTES = 64 * 1024 * 1024;
const cache = new Map<string, { sha: string; tasks: MartiTask[] }>();

/** The tasks of `file`, validated (cached by content); throws a UserError naming the line. */
export function loadMartiTaskFile(file: string): { sha: string; tasks: MartiTask[] } {
  let bytes: Buffer;
  try {
    if (fs.statSync(file).size > MAX_BYTES) {
      throw new UserError(`${file}: over ${MAX_BYTES >> 20} MiB; a task file is one JSON task a line`);
    }
    bytes = fs.readFileSync(file);
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(
      `task.file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const sha = createHash('sha256').update(bytes).digest('hex');
  const hit = cache.get(file);
  if (hit?.sha === sha) return hit;
  const tok = martiFormat().tokenizer;
  const known = (w: string): boolean => {
    try {
      tok.idOf(w);
      return true;
    } catch {
      return false;
    }
  };
  const tasks: MartiTask[] = [];
  const seen = new Set<string>();
  bytes
    .toString('utf8')
    .split('\n')
    .forEach((raw, i) => {
      const at = `${file}:${i + 1}`;
      if (!raw.trim()) return;
      let obj: unknown;
      try {
        obj = JSON.parse(raw);
      } catch {
        throw new UserError(`${at}: not a JSON object; a task file holds one task a line`);
      }
      const parsed = taskSchema.safeParse(obj);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new UserError(`${at}: ${issue.path.length ? issue.path.join('.') : '(task)'}: ${issue.message}`);
      }
      const t = parsed.data;
      if (seen.has(t.id)) throw new UserError(`${at}: id "${t.id}" repeats an earlier task's; ids must be unique`);
      seen.add(t.id);
      const unknown = textTokens(t.statement).find((w) => !known(w));
      if (unknown !== undefined) {
        throw new UserError(
          `${at}: statement: the word "${unknown}" is not in MARTI's vocabulary; write the statement in its words (those of the generated tasks)`,
        );
      }
      const tests = [...t.publicTests, ...t.privateTests];
      for (const [k, tc] of tests.entries()) {
        for (const [side, v] of [
          ['input', tc.input],
          ['expected', tc.expected],
        ] as const) {
          const word = valueTokens(v, { knownWord: knownTextWord, maxItems: 64 }).find((w) => !known(w));
          if (word !== undefined) {
            throw new UserError(
              `${at}: test ${k + 1} ${side}: "${word}" is not in MARTI's vocabulary; text values use its words`,
            );
          }
        }
      }
      const task: MartiTask = {
        id: t.id,
        split: 'heldout',
        seed: 0,
        inputKind: typeof t.publicTests[0]!.input === 'string' ? 'text' : 'numbers',
        statement: t.statement,
        target: t.target ?? '',
        ops: [],
        vague: [],
        publicTests: t.publicTests,
        privateTests: t.privateTests,
      };
      if (t.target !== undefined) {
        const ev = evaluateProgram(t.target, task);
        if (ev.parseError) throw new UserError(`${at}: target: not a program (${ev.parseError.message})`);
        const failed = [...ev.publicTests, ...ev.privateTests].findIndex((x) => !x.passed);
        if (failed >= 0) {
          throw new UserError(`${at}: target fails test ${failed + 1}: fix the test's expected value or the target`);
        }
      }
      tasks.push(task);
    });
  if (tasks.length === 0) throw new UserError(`${file}: no tasks; a task file holds one JSON task a line`);
  const out = { sha, tasks };
  cache.set(file, out);
  return out;
}
