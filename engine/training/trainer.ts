/**
 * What an algorithm gives the run layer. The run loop (engine/runs/runLoop.ts) owns the folder, the cadences, checkpoints,
 * progress and signals; a trainer owns its models, optimisers and random streams, and knows its task.
 */
import type { CheckpointContents, OptimizerState } from '../model/formats/checkpoint';
import type { LlamaModel } from '../model/llama';
import type { Rng } from '../random/prng';
import type { EvalItem, EvalResultRecord } from '../records/evaluation';
import type { TrajectoryRecord } from '../records/trajectories';

export interface StepOutput {
  /** Numbers logged on this step's line of metrics.jsonl. */
  metrics: Record<string, number>;
  /** Records appended to trajectories.jsonl (each gets the step added): engine/records/trajectories.ts. */
  trajectories: TrajectoryRecord[];
  /** Tokens generated and trained on this step (for throughput). */
  tokens: number;
}

/** One held-out item's outcome (engine/records/evaluation.ts): its whole episode or tree rides along as `record`. */
export type EvalItemOutcome = EvalItem;

/**
 * An evaluation's results as a trainer gives them: eval.json's record without its version (engine/runs/evaluation/evaluation.ts
 * writes that, with the checkpoint and its weights' hash).
 */
export type EvalResult = Omit<EvalResultRecord, 'version'>;

/** What a checkpoint of a trainer holds beyond the model weights. */
export interface TrainerSnapshot {
  model: LlamaModel;
  optimizer: OptimizerState;
  /** JSON: the step, random stream states, anything else needed to continue exactly. */
  state: Record<string, unknown>;
  /** Extra files for the checkpoint folder (e.g. tokenizer.json, a second model's weights). */
  files: Record<string, string | Uint8Array>;
}

/** What the run loop lets a trainer tell it while a step is in flight. */
export interface StepHooks {
  /**
   * The step's trajectories as they stand (e.g. MARTI's partial trees after each search round), in the form of the
   * step's final records; each call replaces the previous one. Only for watching: the step's output still carries the
   * final records, and a trainer must not let a report change what the step computes (exact resume).
   */
  live?(records: TrajectoryRecord[]): void;
}

export interface Trainer {
  /** Steps completed. */
  readonly step: number;
  trainStep(hooks?: StepHooks): Promise<StepOutput>;
  evaluate(): Promise<EvalResult>;
  snapshot(): Promise<TrainerSnapshot>;
  dispose(): void;
}

export interface Algorithm<C> {
  name: string;
  /** A fresh trainer, or one continuing from a checkpoint written by `snapshot`. */
  createTrainer(config: C, from?: CheckpointContents): Promise<Trainer>;
  /** What fixes the evaluation items and procedure for this config (the identity of `evaluate`'s results). */
  evalIdentity(config: C): EvalResult['identity'];
  /**
   * Supervised examples for `mars-lab pretrain` (the base model), drawn from training data only: token sequences with
   * a loss mask on what the model should learn to write. Absent when the algorithm has no pretraining stage.
   */
  pretrainBatch?(config: C, rng: Rng, size: number): { tokens: number[]; lossMask: number[] }[];
  /** The model a pretraining starts from (random, per the config's model section). */
  initialModel(config: C, rng: Rng): Promise<LlamaModel>;
  /** Extra files a checkpoint of this algorithm carries (e.g. tokenizer.json). */
  checkpointFiles(config: C): Record<string, string>;
  /**
   * Evaluate a model on the config's held-out items. `checkpointDir`, when the model was loaded from a checkpoint,
   * lets an algorithm read what else that checkpoint carries (e.g. a separate System 1's weights).
   */
  evaluate(config: C, model: LlamaModel, checkpointDir?: string): Promise<EvalResult>;
}
