/**
 * Evaluation and comparison of checkpoints on a fixed held-out set. A checkpoint written by a run carries its run's
 * config (trainer_state.json), which fixes the task and the evaluation items. Results are cached under
 * `<home>/evals/` by (hash of the weights, hash of the evaluation identity), so comparing against a baseline twice
 * evaluates it once.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { algorithmFor } from '../registry';
import {
  CONFIG_FILE,
  loadCheckpoint,
  TRAINER_STATE_FILE,
  WEIGHTS_FILE,
  writeFolderAtomic,
} from '../../model/formats/checkpoint';
import { mcnemar, pairedBootstrap } from '../../scoring/pairedStats';
import { Rng } from '../../random/prng';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import { evalFileSchema } from '../../records/evaluation';
import { RECORD_VERSION } from '../../records/version';
import { parseRunConfig, type RunConfig } from '../config/configSchema';
import type { EvalResult } from '../../training/trainer';

export interface CheckpointEval extends EvalResult {
  checkpoint: string;
  /** Where the per-item outcomes are stored. */
  file: string;
  cached: boolean;
}

function sha256(...parts: (Buffer | string)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

/** The run config stored with a checkpoint (needed to know the task). */
export function checkpointConfig(dir: string): RunConfig {
  const file = path.join(dir, TRAINER_STATE_FILE);
  if (!fs.existsSync(path.join(dir, CONFIG_FILE))) {
    throw new UserError(`${dir}: not a checkpoint folder (no config.json)`);
  }
  if (!fs.existsSync(file)) {
    throw new UserError(
      `${file} is missing: evaluation needs the run config a mars-lab training checkpoint carries (a bare model has no task: evaluate it under a preset with eval --preset NAME)`,
    );
  }
  let state: { config?: unknown };
  try {
    state = JSON.parse(fs.readFileSync(file, 'utf8')) as { config?: unknown };
  } catch (err) {
    throw new UserError(`${file}: not valid JSON (${jsonParseProblem(err)})`); // never the parser's message: it quotes the file
  }
  return parseRunConfig(state.config, `${file} (config)`);
}

/** A checkpoint file's bytes, for its hash; a FIFO, device or folder in its place is refused, never read (it could hang). */
function readRegularFile(file: string): Buffer {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new UserError(`${file} is missing: not a complete checkpoint folder`);
  }
  if (!stat.isFile()) throw new UserError(`${file} is not a regular file: a checkpoint's files must be plain files`);
  return fs.readFileSync(file);
}

/**
 * Parameter files beside model.safetensors that change a checkpoint's answers: a MARS System 1 of its own
 * (sys1.safetensors), a heterogeneous MARTI team's other agents (agent-<id>.safetensors and .config.json) and a
 * chatgrpo run's LoRA adapter (adapter_model.safetensors and adapter_config.json: under LoRA the base is the same in
 * every checkpoint). Optimiser state changes no answer and is left out.
 */
const EXTRA_WEIGHTS =
  /^(sys1\.safetensors|agent-[^/]+\.safetensors|agent-[^/]+\.config\.json|adapter_model\.safetensors|adapter_config\.json)$/;

/**
 * The hash of every file of a checkpoint that changes an answer (issue 32, defect 3: sys1.safetensors was left out,
 * so a frozen System 1 replaced or removed was served the old result). config.json and model.safetensors as before
 * (a checkpoint with nothing else keeps its cache key), then each other parameter file by name.
 */
export function checkpointWeightsHash(dir: string): string {
  const parts: (Buffer | string)[] = [
    readRegularFile(path.join(dir, CONFIG_FILE)),
    readRegularFile(path.join(dir, WEIGHTS_FILE)),
  ];
  const extras = fs
    .readdirSync(dir)
    .filter((name) => EXTRA_WEIGHTS.test(name) && !name.includes('_optimizer'))
    .sort();
  for (const name of extras) {
    const bytes = readRegularFile(path.join(dir, name));
    parts.push(`\n${name}\n${bytes.length}\n`, bytes);
  }
  return sha256(...parts);
}

function stableJson(o: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

/**
 * Evaluate the checkpoint in `dir` on the held-out set of `config` (by default the checkpoint's own run config).
 */
export async function evaluateCheckpoint(
  home: string,
  dir: string,
  config: RunConfig = checkpointConfig(dir),
): Promise<CheckpointEval> {
  const algorithm = algorithmFor(config);
  const identity = algorithm.evalIdentity(config);
  const weights = checkpointWeightsHash(dir);
  const key = `${weights.slice(0, 20)}-${sha256(stableJson(identity)).slice(0, 12)}`;
  const cacheDir = path.join(home, 'evals', key);
  const file = path.join(cacheDir, 'eval.json');
  if (fs.existsSync(file)) {
    try {
      const cached = evalFileSchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
      return { ...cached, checkpoint: path.resolve(dir), file, cached: true };
    } catch {
      // A damaged cache entry, or one that is not an evaluation record (engine/records/evaluation.ts), is recomputed.
    }
  }
  const { model } = await loadCheckpoint(dir);
  try {
    const result = await algorithm.evaluate(config, model, dir);
    writeFolderAtomic(cacheDir, {
      'eval.json':
        JSON.stringify(
          { version: RECORD_VERSION, ...result, checkpoint: path.resolve(dir), weightsSha256: weights },
          null,
          1,
        ) + '\n',
    });
    return { ...result, checkpoint: path.resolve(dir), file, cached: false };
  } finally {
    model.dispose();
  }
}

export interface Comparison {
  identity: EvalResult['identity'];
  a: CheckpointEval;
  b: CheckpointEval;
  metrics: { name: string; a: number; b: number; diff: number }[];
  /** Items right in A and wrong in B, and the reverse. */
  flippedToWrong: string[];
  flippedToRight: string[];
  mcnemar: ReturnType<typeof mcnemar>;
  /** Paired bootstrap 95% interval of mean(score_B − score_A). */
  scoreDiff: ReturnType<typeof pairedBootstrap>;
}

/** Evaluate two checkpoints on the same items (those of A's run config) and compare them item by item. */
export async function compareCheckpoints(home: string, dirA: string, dirB: string): Promise<Comparison> {
  const configA = checkpointConfig(dirA);
  const configB = checkpointConfig(dirB);
  if (configA.algorithm !== configB.algorithm) {
    throw new UserError(
      `compare: ${dirA} is a ${configA.algorithm} checkpoint and ${dirB} a ${configB.algorithm} one; compare checkpoints of the same algorithm`,
    );
  }
  const a = await evaluateCheckpoint(home, dirA, configA);
  const b = await evaluateCheckpoint(home, dirB, configA);
  const byId = new Map(b.items.map((it) => [it.id, it]));
  const pairs = a.items.map((it) => {
    const other = byId.get(it.id);
    if (!other) throw new Error(`compare: item ${it.id} is missing from the evaluation of ${dirB}`);
    return [it, other] as const;
  });
  const names = Object.keys(a.metrics);
  return {
    identity: a.identity,
    a,
    b,
    metrics: names.map((name) => ({
      name,
      a: a.metrics[name]!,
      b: b.metrics[name]!,
      diff: b.metrics[name]! - a.metrics[name]!,
    })),
    flippedToWrong: pairs.filter(([x, y]) => x.correct && !y.correct).map(([x]) => x.id),
    flippedToRight: pairs.filter(([x, y]) => !x.correct && y.correct).map(([x]) => x.id),
    mcnemar: mcnemar(
      pairs.map(([x]) => x.correct),
      pairs.map(([, y]) => y.correct),
    ),
    scoreDiff: pairedBootstrap(
      pairs.map(([x]) => x.score),
      pairs.map(([, y]) => y.score),
      {
        rng: (() => {
          const r = new Rng(0);
          return () => r.next();
        })(),
      },
    ),
  };
}
