/**
 * `mars-lab pretrain`: supervised training of a base model on the algorithm's own pretraining data (training data
 * only), written as a checkpoint that RL runs can start from (`model.from`). The checkpoint carries the config, so
 * `eval` measures how rarely the base model already solves held-out items.
 */
import fs from 'node:fs';
import { algorithmFor } from '../registry';
import { saveCheckpoint } from '../../model/formats/checkpoint';
import { padBatch } from '../../model/logProbs';
import { maskedNll } from '../../model/supervised';
import { Rng } from '../../random/prng';
import { Adam } from '../../rl/adam';
import { adamVariables } from '../../rl/policyUpdate';
import { tf } from '../../tensor/backend';
import { UserError } from '../../base/userError';
import type { RunConfig } from '../config/configSchema';
import { yieldToEventLoop, type Progress } from '../runLoop';

export interface PretrainOutcome {
  dir: string;
  steps: number;
  finalLoss: number;
}

export async function pretrain(
  config: RunConfig,
  out: string,
  opts: { onProgress?: (p: Progress) => void; signal?: AbortSignal; force?: boolean } = {},
): Promise<PretrainOutcome> {
  const algorithm = algorithmFor(config);
  if (config.algorithm === 'chatgrpo' || config.algorithm === 'martipy' || !algorithm.pretrainBatch) {
    throw new UserError(`algorithm '${config.algorithm}' has no pretraining stage`);
  }
  if (fs.existsSync(out) && !opts.force) {
    throw new UserError(`--out ${out}: already exists (add --force to replace it)`);
  }
  const root = new Rng(config.seed).split('pretrain');
  // A base model starts from random weights whatever `model.from` says: that field names where RL starts, which is
  // usually the very checkpoint this command writes.
  const model = await algorithm.initialModel(
    { ...config, model: { ...config.model, from: { kind: 'random' } } },
    root.split('init'),
  );
  const data = root.split('data');
  const opt = new Adam(adamVariables(model), { lr: config.pretrain.lr, maxGradNorm: config.rl.gradClip });
  const names = new Map([...model.params].map(([n, v]) => [v.name, n]));
  const t0 = Date.now();
  let tokens = 0;
  let loss = NaN;
  let step: number;
  try {
    for (step = 1; step <= config.pretrain.steps; step++) {
      await yieldToEventLoop();
      const examples = algorithm.pretrainBatch(config, data, config.pretrain.batch);
      const batch = padBatch(examples.map((e) => e.tokens));
      const mask = tf.tensor2d(
        examples.flatMap((e) => [...e.lossMask, ...Array<number>(batch.width - e.tokens.length).fill(0)]),
        [examples.length, batch.width],
      );
      const { value, grads } = tf.variableGrads(() => maskedNll(model, batch, mask), model.variables());
      loss = (await value.data())[0]!;
      const named = Object.fromEntries(Object.entries(grads).map(([k, g]) => [names.get(k) ?? k, g]));
      await opt.step(named);
      tf.dispose([value, mask, ...Object.values(grads)]);
      tokens += examples.reduce((s, e) => s + e.tokens.length, 0);
      const elapsedMs = Date.now() - t0;
      opts.onProgress?.({
        runId: 'pretrain',
        step,
        totalSteps: config.pretrain.steps,
        metrics: { step, loss },
        tokensPerSec: tokens / Math.max(elapsedMs / 1000, 1e-9),
        elapsedMs,
      });
      if (opts.signal?.aborted) break;
    }
    step = Math.min(step, config.pretrain.steps);
    await saveCheckpoint(out, model, {
      trainerState: { kind: 'base', algorithm: config.algorithm, step, config, pretrainLoss: loss },
      files: algorithm.checkpointFiles(config),
    });
    return { dir: out, steps: step, finalLoss: loss };
  } finally {
    model.dispose();
    opt.dispose();
  }
}
