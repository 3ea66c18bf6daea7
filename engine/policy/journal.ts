/**
 * The request journal of an endpoint evaluation: every answered completion is appended (one JSON line) as soon as it
 * arrives, keyed by what was asked — the endpoint's identity (never its key), the request body, and how many times
 * the same request was asked before in this evaluation. An evaluation that is run again replays answered requests
 * from the journal and asks the endpoint only for the rest, so an interrupted evaluation resumes where it stopped and
 * its finished episodes are exactly the ones already paid for (at any temperature).
 *
 * A torn last line (the process was killed while writing) is ignored.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { CompletionAnswer } from './endpointClient';

const entrySchema = z.strictObject({
  key: z.string(),
  answer: z.strictObject({
    text: z.string(),
    finish: z.enum(['stop', 'length']),
    stopReason: z.union([z.string(), z.number()]).nullable(),
    tokens: z.array(z.string()).nullable(),
    logProbs: z.array(z.number()).nullable(),
  }),
});

export class RequestJournal {
  private readonly answers = new Map<string, CompletionAnswer>();
  private readonly asked = new Map<string, number>();
  /** Answers replayed from the journal and asked of the endpoint in this evaluation. */
  readonly stats = { replayed: 0, fresh: 0 };
  /** Called after every answer, replayed or fresh, with the counts so far (a run's live progress). */
  onAnswer?: (stats: { replayed: number; fresh: number }) => void;

  constructor(readonly file: string) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (!fs.existsSync(file)) return;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch {
        continue; // a torn last line
      }
      const e = entrySchema.safeParse(obj);
      if (e.success) this.answers.set(e.data.key, e.data.answer);
    }
  }

  get size(): number {
    return this.answers.size;
  }

  /** The key of the next ask of `request` (its occurrence counted in asking order, which the rollouts fix). */
  keyOf(request: unknown): string {
    const base = createHash('sha256').update(JSON.stringify(request)).digest('hex').slice(0, 32);
    const n = this.asked.get(base) ?? 0;
    this.asked.set(base, n + 1);
    return `${base}-${n}`;
  }

  lookup(key: string): CompletionAnswer | undefined {
    const a = this.answers.get(key);
    if (a) {
      this.stats.replayed++;
      this.onAnswer?.({ ...this.stats });
    }
    return a;
  }

  record(key: string, answer: CompletionAnswer): void {
    this.stats.fresh++;
    this.answers.set(key, answer);
    fs.appendFileSync(this.file, JSON.stringify({ key, answer }) + '\n');
    this.onAnswer?.({ ...this.stats });
  }
}
