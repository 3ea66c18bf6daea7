/**
 * MARS over a corpus of the user's own (`task.corpus`): a folder of text, Markdown and JSONL documents indexed with
 * the worlds' BM25 search (search.ts, minisearch), and a JSONL file of questions with gold answers, instead of the
 * generated worlds — for evaluations whose systems are endpoints (a mars-lab model knows only the worlds' words).
 *
 *   folder/*.txt, *.md      one page each: id = its path in the folder, title = its first Markdown heading or name
 *   folder/*.jsonl          one page a line: {"text": …, "title"?: …, "id"?: …}
 *   questions.jsonl         one question a line: {"question": …, "answers": ["…", …], "id"?: …}
 *
 * The rollout is MARS's own, in its tokens: the worlds' word tokenizer with byte fallback, so words it lacks are
 * spelt as UTF-8 bytes and every page and answer reaches the endpoints exactly (budgets count those bytes as tokens:
 * raise mars.sys1PromptMax and friends for long pages). A file that cannot be read or parsed is one line naming it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { MarsFormat } from './format';
import type { RolloutQuestion } from './rollout';
import { SearchIndex } from './search';
import { marsFormat } from './questionSets';
import type { Page } from './world';
import { tokenizerFromJSON } from '../model/tokenizers/tokenizer';
import { byteTokenName } from '../model/tokenizers/specialTokens';
import { UserError } from '../base/userError';

const DOC_EXTS = new Set(['.txt', '.md', '.markdown', '.jsonl']);
const MAX_FILE = 64 * 1024 * 1024;
const pageLine = z.strictObject({
  text: z.string().min(1).max(1_000_000),
  title: z.string().max(1000).optional(),
  id: z.string().min(1).max(500).optional(),
});
const questionLine = z.strictObject({
  question: z.string().min(1).max(10_000),
  answers: z.array(z.string().min(1).max(1000)).min(1).max(100),
  id: z.string().min(1).max(500).optional(),
});

export interface MarsCorpus {
  pages: Page[];
  questions: RolloutQuestion[];
  /** Hash of every document and the questions: part of the evaluation's identity. */
  sha: string;
}

function readText(file: string, what: string): string {
  try {
    if (fs.statSync(file).size > MAX_FILE) throw new UserError(`${file}: over ${MAX_FILE >> 20} MiB; split it`);
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(
      `${what} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

function jsonLines<T>(file: string, text: string, schema: z.ZodType<T>, what: string): { line: number; value: T }[] {
  const out: { line: number; value: T }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    let obj: unknown;
    try {
      obj = JSON.parse(raw);
    } catch {
      throw new UserError(`${file}:${i + 1}: not a JSON object; ${what}`);
    }
    const p = schema.safeParse(obj);
    if (!p.success) {
      const issue = p.error.issues[0]!;
      throw new UserError(
        `${file}:${i + 1}: ${issue.path.length ? issue.path.join('.') : '(line)'}: ${issue.message}; ${what}`,
      );
    }
    out.push({ line: i + 1, value: p.data });
  });
  return out;
}

/** The pages of `folder` and the questions of `questionsFile`, searchable with the worlds' BM25. */
export function loadMarsCorpus(folder: string, questionsFile: string): MarsCorpus {
  let entries: string[];
  try {
    entries = (fs.readdirSync(folder, { recursive: true }) as string[])
      .filter((f) => DOC_EXTS.has(path.extname(f).toLowerCase()))
      .sort();
  } catch (err) {
    throw new UserError(
      `task.corpus.folder ${folder}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const hash = createHash('sha256');
  const pages: Page[] = [];
  const ids = new Set<string>();
  const add = (p: Page, where: string): void => {
    if (ids.has(p.id)) throw new UserError(`${where}: page id "${p.id}" repeats an earlier page's; ids must be unique`);
    ids.add(p.id);
    pages.push(p);
  };
  for (const rel of entries) {
    const file = path.join(folder, rel);
    if (!fs.statSync(file).isFile()) continue;
    const text = readText(file, 'corpus file');
    hash.update(rel).update('\0').update(text).update('\0');
    if (path.extname(rel).toLowerCase() === '.jsonl') {
      for (const { line, value } of jsonLines(
        file,
        text,
        pageLine,
        'a corpus .jsonl file holds one {"text", "title"?, "id"?} a line',
      )) {
        add(
          {
            id: value.id ?? `${rel}#${line}`,
            title: value.title ?? '',
            entityId: null,
            kind: 'entity',
            text: value.text,
          },
          `${file}:${line}`,
        );
      }
    } else if (text.trim()) {
      const heading = /^\s*#+\s+(.+)$/m.exec(text);
      add(
        {
          id: rel,
          title: heading ? heading[1]!.trim() : path.basename(rel, path.extname(rel)),
          entityId: null,
          kind: 'entity',
          text: text.trim(),
        },
        file,
      );
    }
  }
  if (pages.length === 0) {
    throw new UserError(`task.corpus.folder ${folder}: no documents (.txt, .md or .jsonl files with text)`);
  }
  const index = new SearchIndex(pages);
  const qText = readText(questionsFile, 'task.corpus.questions');
  hash.update(qText);
  const questions = jsonLines(
    questionsFile,
    qText,
    questionLine,
    'a questions file holds one {"question", "answers": […], "id"?} a line',
  ).map(({ line, value }) => ({
    id: value.id ?? `q${line}`,
    family: 'corpus',
    text: value.question,
    answers: value.answers,
    env: index,
  }));
  if (questions.length === 0) throw new UserError(`task.corpus.questions ${questionsFile}: no questions`);
  return { pages, questions, sha: hash.digest('hex') };
}

let cached: MarsFormat | null = null;
/**
 * MARS's format over the worlds' tokenizer with byte fallback (the byte tokens come after the worlds' words, whose ids
 * do not change): any text round-trips, tags stay single tokens. Used whenever every MARS system is an endpoint.
 */
export function corpusFormat(): MarsFormat {
  if (cached) return cached;
  const file = marsFormat().tokenizer.toJSON() as unknown as { tokens: string[] } & Record<string, unknown>;
  const bytes = Array.from({ length: 256 }, (_, b) => byteTokenName(b)).filter((t) => !file.tokens.includes(t));
  return (cached = new MarsFormat(
    tokenizerFromJSON({ ...file, byteFallback: true, tokens: [...file.tokens, ...bytes] }, 'MARS corpus tokenizer'),
  ));
}
