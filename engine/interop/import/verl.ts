/**
 * `mars-lab import verl DIR`: verl's rollout dumps become a mars-lab run folder (issue 18 part 4).
 *
 * What verl writes, from its own writer code (verl-project/verl, verl/trainer/ppo/ray_trainer.py):
 * - `_log_rollout_data` → `_dump_generations` (→ `_write_generations`, in a background thread since 2026): with
 *   `trainer.rollout_data_dir` set, one file `<global_step>.jsonl` per
 *   training step, one JSON object per sample with `input` (the prompt decoded with skip_special_tokens=True), `output`
 *   (the response decoded likewise), `gts` (the sample's `reward_model.ground_truth`, any JSON), `score` (the sum of
 *   token_level_scores), `step`, and every `reward_extra_info` key whose list has one value per sample (e.g. `acc`,
 *   `pred`, `request_id`). `validation_data_dir` gets the same layout for validation.
 * - `verl/utils/tracking.py` FileLogger (`trainer.logger=[…,"file"]`): JSONL `{"step": N, "data": {metric: value}}`
 *   (orjson in verl main, NaN written as null; a variant adds `"elapsed_seconds"`) at `$VERL_FILE_LOGGER_PATH`, else
 *   `$VERL_FILE_LOGGER_ROOT/<project>/
 *   <experiment>.jsonl`. Metric names are verl's (`critic/score/mean`, `actor/pg_loss`, `response_length/mean`, …).
 *
 * The dump has no group id (uid) and no advantage, and `trainer.balance_batch` reorders samples, so groups are rebuilt
 * as the samples of one step with an identical prompt, and GRPO advantages are recomputed (groups.ts VERL_GRPO).
 *
 * Each sample becomes a `mars.episode` record (the records the app's group grid and token view read,
 * renderer/src/lib/trajectories.ts): the prompt as the question, the response as one turn whose "tokens" are its
 * whitespace-separated pieces (the dump holds decoded text, not token ids or log-probabilities), `gts` as the gold
 * answers, `score` as the reward. Each file is streamed line by line, twice: memory holds one step's rewards, not its
 * texts.
 *
 * The import's steps: the file logger's metrics by step, then per dump file a pass that groups the rewards and one
 * that writes the episodes and the step's metrics.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { RECORD_VERSION } from '../../records/version';
import { UserError } from '../../base/userError';
import { recomputeAdvantages, VERL_GRPO } from './groups';
import { ImportedRunWriter } from './importedRun';
import { jsonLines } from './jsonLines';
import { findFiles, type ImportOptions, type ImportResult, ProblemLog, ProgressMeter } from './common';

/** One line of a rollout dump. Loose: the reward extras are any further keys. */
const dumpLineSchema = z.looseObject({
  input: z.string(),
  output: z.string(),
  gts: z.unknown().optional(),
  // Python writes a NaN score as NaN, read as null (jsonLines.ts): kept, with no reward.
  score: z.number().nullable(),
  step: z.number().optional(),
});

/** One line of the file logger. */
const fileLoggerLineSchema = z.looseObject({ step: z.number(), data: z.record(z.string(), z.unknown()) });

const STEP_FILE = /^(\d+)\.jsonl$/;

interface Sample {
  line: number;
  input: string;
  output: string;
  gts: unknown;
  score: number;
  extra: Record<string, unknown>;
}

/** The response as pieces: each run of non-space characters with the spaces after it (so the pieces join to it). */
export function textPieces(text: string): string[] {
  return text.match(/\s+|\S+\s*/g) ?? [];
}

function promptId(input: string): string {
  return `verl:${createHash('sha1').update(input).digest('hex').slice(0, 16)}`;
}

function goldOf(gts: unknown): string[] {
  if (gts === undefined || gts === null) return [];
  if (typeof gts === 'string') return [gts];
  if (Array.isArray(gts) && gts.every((g) => typeof g === 'string' || typeof g === 'number')) return gts.map(String);
  return [JSON.stringify(gts)];
}

/** Which files of `dir` are the dump (one folder of <step>.jsonl) and which are file-logger metrics. */
function locate(
  dir: string,
  metricsFile: string | undefined,
): { dumpDir: string; steps: { step: number; file: string }[]; metrics: string[] } {
  const files = findFiles(dir, (name) => name.endsWith('.jsonl'), 3);
  const dumps = files.filter((f) => STEP_FILE.test(path.basename(f)));
  const folders = [...new Set(dumps.map((f) => path.dirname(f)))];
  if (folders.length === 0) {
    throw new UserError(
      `import verl: no <step>.jsonl files under ${dir}: give the folder verl wrote its rollouts to (trainer.rollout_data_dir=DIR when training)`,
    );
  }
  if (folders.length > 1) {
    throw new UserError(
      `import verl: ${dir} holds several dump folders (${folders.map((f) => path.relative(dir, f) || '.').join(', ')}): give one of them (the rollouts, not the validation dumps)`,
    );
  }
  const dumpDir = folders[0]!;
  const steps = dumps
    .map((file) => ({ step: Number(STEP_FILE.exec(path.basename(file))![1]), file }))
    .sort((a, b) => a.step - b.step);
  let metrics: string[];
  if (metricsFile !== undefined) {
    if (!fs.existsSync(metricsFile)) {
      throw new UserError(
        `import verl: --metrics ${metricsFile} does not exist: give verl's file-logger JSONL ($VERL_FILE_LOGGER_PATH)`,
      );
    }
    metrics = [metricsFile];
  } else metrics = files.filter((f) => !STEP_FILE.test(path.basename(f)) && looksLikeFileLogger(f));
  return { dumpDir, steps, metrics };
}

/** Whether the first line of `file` is a file-logger record ({step, data}). Reads at most 64 KiB. */
function looksLikeFileLogger(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(1 << 16);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
    return fileLoggerLineSchema.safeParse(JSON.parse(first)).success;
  } catch {
    return false;
  } finally {
    fs.closeSync(fd);
  }
}

/** The usable samples of one dump file, in order; each line that is not one is told to `onProblem` (if given). */
async function* samplesOf(
  file: string,
  onBytes: (bytes: number) => void,
  onProblem?: (line: number, why: string) => void,
): AsyncGenerator<Sample> {
  for await (const l of jsonLines(file, onBytes)) {
    const parsed = l.problem === undefined ? dumpLineSchema.safeParse(l.value) : undefined;
    if (!parsed?.success) {
      onProblem?.(
        l.lineNo,
        `${l.problem ?? parsed!.error.issues.map((i) => `"${i.path.join('.') || '(line)'}" ${i.message}`).join('; ')}; line skipped`,
      );
      continue;
    }
    const { input, output, gts, score, step: _step, ...extra } = parsed.data;
    if (score === null || !Number.isFinite(score)) {
      // a NaN score (Python writes NaN) has no place in a group's statistics, nor in the record's reward
      onProblem?.(l.lineNo, '"score" is NaN or infinite; sample skipped');
      continue;
    }
    yield { line: l.lineNo, input, output, gts, score, extra };
  }
}

/**
 * The file logger's lines, by step (one line per step: small next to the dumps), with an estimated time for steps the
 * dump lacks: the file's last write is its last line; `elapsed_seconds` (newer verl) places the others before it.
 */
async function readFileLogger(
  metrics: readonly string[],
  meter: ProgressMeter,
  problems: ProblemLog,
  rel: (f: string) => string,
): Promise<{ byStep: Map<number, Record<string, number | null>>; loggerTime: Map<number, number> }> {
  const byStep = new Map<number, Record<string, number | null>>();
  const loggerTime = new Map<number, number>();
  for (const file of metrics) {
    const mtime = fs.statSync(file).mtimeMs / 1000;
    const elapsed = new Map<number, number>();
    for await (const l of jsonLines(file, (b) => meter.read(file, b))) {
      const parsed = l.problem === undefined ? fileLoggerLineSchema.safeParse(l.value) : undefined;
      if (!parsed?.success) {
        problems.add(
          `${rel(file)}:${l.lineNo}: ${l.problem ?? 'not a file-logger line ({"step": N, "data": {…}})'}; line skipped`,
        );
        continue;
      }
      if (typeof parsed.data['elapsed_seconds'] === 'number') {
        elapsed.set(parsed.data.step, parsed.data['elapsed_seconds']);
      }
      loggerTime.set(parsed.data.step, mtime);
      const point = byStep.get(parsed.data.step) ?? {};
      for (const [k, v] of Object.entries(parsed.data.data)) {
        if (typeof v === 'number' || v === null) {
          Object.defineProperty(point, k, { value: v, enumerable: true, writable: true, configurable: true });
        }
      }
      byStep.set(parsed.data.step, point);
    }
    const last = Math.max(...elapsed.values());
    for (const [step, e] of elapsed) loggerTime.set(step, mtime - (last - e));
  }
  return { byStep, loggerTime };
}

/** The rewards of one step's samples, grouped by prompt, their GRPO advantages and the step's reward figures. */
interface StepRewards {
  groups: Map<string, number[]>;
  advantages: Map<string, (number | null)[]>;
  /** Groups of more than one sample whose advantages are all 0. */
  allEqual: number;
  n: number;
  sum: number;
  max: number;
  min: number;
}

/** The first pass over a dump file: its rewards grouped by prompt; each bad line is told to `problems`. */
async function stepRewards(
  file: string,
  meter: ProgressMeter,
  problems: ProblemLog,
  rel: (f: string) => string,
): Promise<StepRewards> {
  const groups = new Map<string, number[]>();
  for await (const s of samplesOf(
    file,
    (b) => meter.read(file, b),
    (line, why) => problems.add(`${rel(file)}:${line}: ${why}`),
  )) {
    const key = promptId(s.input);
    const g = groups.get(key);
    if (g) g.push(s.score);
    else groups.set(key, [s.score]);
  }
  const advantages = new Map<string, (number | null)[]>();
  let allEqual = 0;
  let n = 0;
  let sum = 0;
  let max = -Infinity;
  let min = Infinity;
  for (const [key, scores] of groups) {
    const adv = recomputeAdvantages(scores, VERL_GRPO);
    advantages.set(key, adv);
    if (scores.length > 1 && adv.every((a) => a === 0)) allEqual++;
    for (const r of scores) {
      n++;
      sum += r;
      max = Math.max(max, r);
      min = Math.min(min, r);
    }
  }
  return { groups, advantages, allEqual, n, sum, max, min };
}

/** A sample as a `mars.episode` record: its k-th place in its prompt's group gives its advantage. */
function episodeRecord(
  step: number,
  s: Sample,
  key: string,
  k: number,
  rewards: StepRewards,
  fileName: string,
): Record<string, unknown> {
  const acc = s.extra['acc'];
  return {
    step,
    kind: 'mars.episode',
    version: RECORD_VERSION,
    questionId: key,
    family: typeof s.extra['data_source'] === 'string' ? s.extra['data_source'] : 'verl',
    question: s.input,
    gold: goldOf(s.gts),
    turns: [
      {
        text: s.output,
        tokens: textPieces(s.output),
        logProbs: [],
        query: null,
        purpose: null,
        results: [],
        bins: [],
        info: '',
      },
    ],
    // the reward function's extracted answer (verl's math scorers report it as `pred`), else the whole response
    answer: typeof s.extra['pred'] === 'string' ? s.extra['pred'] : s.output,
    // the response is the sample's answer (the record's end reasons are MARS's: answer, maxTurns, overflow)
    end: 'answer',
    reward: s.score,
    f1: typeof acc === 'number' ? acc : typeof acc === 'boolean' ? Number(acc) : s.score,
    advantage: rewards.advantages.get(key)?.[k] ?? 0,
    advantageRecomputed: true,
    groupSize: rewards.groups.get(key)?.length ?? 1,
    imported: { from: 'verl', file: fileName, line: s.line },
    ...(Object.keys(s.extra).length ? { extra: s.extra } : {}),
  };
}

/** The second pass over a dump file: its episodes, then the step's metrics (with the file logger's); returns the count. */
async function writeStep(
  run: ImportedRunWriter,
  step: number,
  file: string,
  rewards: StepRewards,
  byStep: Map<number, Record<string, number | null>>,
  meter: ProgressMeter,
  rel: (f: string) => string,
): Promise<number> {
  let records = 0;
  const seen = new Map<string, number>();
  for await (const s of samplesOf(file, (b) => meter.read(`${file}#2`, b))) {
    const key = promptId(s.input);
    const k = seen.get(key) ?? 0;
    seen.set(key, k + 1);
    run.trajectories.append(episodeRecord(step, s, key, k, rewards, rel(file)));
    records++;
  }
  const { groups, allEqual, n, sum, max, min } = rewards;
  const point = byStep.get(step) ?? {};
  byStep.delete(step);
  run.metrics.append({
    step,
    // verl writes <step>.jsonl when the step ends: its modification time is when the step finished.
    time: fs.statSync(file).mtimeMs / 1000,
    ...point,
    reward: n ? sum / n : null,
    'reward/max': n ? max : null,
    'reward/min': n ? min : null,
    samples: n,
    groups: groups.size,
    'groups/allEqualShare': groups.size ? allEqual / groups.size : null,
  });
  return records;
}

export async function importVerl(opts: ImportOptions): Promise<ImportResult> {
  const dir = path.resolve(opts.dir);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(
      `import verl: ${opts.dir} is not a folder: give the folder of verl's rollout dumps (trainer.rollout_data_dir)`,
    );
  }
  const { dumpDir, steps, metrics } = locate(dir, opts.metricsFile);
  const problems = new ProblemLog(opts.onWarning);
  // each dump is read twice (see below)
  const meter = new ProgressMeter(
    [...steps.map((s) => s.file), ...steps.map((s) => s.file), ...metrics],
    opts.onProgress,
  );
  const rel = (f: string) => path.relative(dir, f) || path.basename(f);
  const { byStep, loggerTime } = await readFileLogger(metrics, meter, problems, rel);

  const run = new ImportedRunWriter(opts.home, `verl-${path.basename(dumpDir)}`, { id: opts.id });
  let records = 0;
  // Steps the file logger has but the dump does not (the dump may start later, or skip steps), written in step order.
  const loggerOnly = (before: number) => {
    for (const step of [...byStep.keys()].filter((s) => s < before).sort((a, b) => a - b)) {
      run.metrics.append({ step, time: loggerTime.get(step)!, ...byStep.get(step)! });
      byStep.delete(step);
    }
  };
  try {
    for (const { step, file } of steps) {
      loggerOnly(step);
      // Two passes over the file, so that memory holds the step's rewards, not its texts (a step of verl at scale is
      // hundreds of megabytes): the first groups the rewards by prompt and reports bad lines, the second writes.
      const rewards = await stepRewards(file, meter, problems, rel);
      records += await writeStep(run, step, file, rewards, byStep, meter, rel);
    }
    loggerOnly(Infinity);
    for (const w of problems.summary()) run.warn(w);
    const imported = {
      from: 'verl' as const,
      source: dir,
      importedAt: new Date().toISOString(),
      files: [...steps.map((s) => rel(s.file)), ...metrics.map(rel)],
      records,
      skipped: problems.count,
      advantages: { recomputed: true as const, ...VERL_GRPO },
      tokens: 'text pieces: the dump holds decoded text, not token ids or log-probabilities',
    };
    const done = run.finish(
      'verl',
      imported,
      `Imported from verl's rollout dumps in ${dir}; advantages recomputed (GRPO per identical prompt within a step).`,
    );
    return { ...done, records, skipped: problems.count, steps: steps.length, warnings: problems.summary() };
  } catch (err) {
    run.abort();
    throw err;
  }
}
