/**
 * MARS's held-out evaluation (docs/algorithms.md §2.8): the fixed question set rolled out at the evaluation
 * temperature, its metrics and per-item episodes, and the identity that says which evaluation a result answers for.
 * Apart from the trainer, so that evaluating a checkpoint or endpoint agents (engine/runs/evaluation/) never imports one.
 */
import { UserError } from '../base/userError';
import type { LlamaModel } from '../model/llama';
import type { PolicyModel } from '../policy/endpointPolicy';
import { Rng } from '../random/prng';
import type { EvalResult } from '../training/trainer';
import type { MarsConfig } from './configSchema';
import { episodeStats, mean, rolloutSettings, trajectoryRecord } from './episodes';
import type { MarsFormat } from './format';
import { evalQuestions, marsFormat } from './questionSets';
import { QUESTION_FAMILIES, SINGLE_HOP_FAMILIES } from './questions';
import { rolloutBatch, type RolloutQuestion } from './rollout';
import { carriesSys1, sys1FromCheckpoint } from './sys1Checkpoint';
import { sys1Metrics, sys1Stats } from './sys1Measures';

/**
 * Held-out evaluation; each system's policy may be an endpoint, and a user's corpus may replace the generated worlds
 * with its own questions and format (engine/runs/evaluation/evaluateEndpoints.ts, engine/mars/corpus.ts).
 */
export async function evaluateMars(
  cfg: MarsConfig,
  policy: PolicyModel,
  sys1: PolicyModel | null,
  over: { format?: MarsFormat; questions?: RolloutQuestion[] } = {},
): Promise<EvalResult> {
  const format = over.format ?? marsFormat();
  if (policy.config.vocab_size !== format.tokenizer.vocabSize) {
    throw new UserError(
      `this checkpoint's vocab_size is ${policy.config.vocab_size}, but MARS needs ${format.tokenizer.vocabSize}: evaluate MARS checkpoints`,
    );
  }
  const qs = over.questions ?? evalQuestions(cfg);
  const trajs = await rolloutBatch(
    { sys2: policy, sys1 },
    format,
    qs,
    rolloutSettings(cfg, cfg.eval.temperature),
    evalTokenRng(cfg),
  );
  const e = episodeStats(trajs);
  const metrics: Record<string, number> = {
    exactMatch: e.reward,
    f1: e.f1,
    answered: e.answered,
    searchesPerQuestion: e.searchesPerQuestion,
    sys1CallsPerSearch: e.sys1CallsPerSearch,
    sys2TokensPerQuestion: e.sys2Tokens,
    sys1TokensPerQuestion: e.sys1Tokens,
  };
  const byKind = (pred: (f: string) => boolean) => trajs.filter((t) => pred(t.question.family));
  const single = byKind((f) => (SINGLE_HOP_FAMILIES as readonly string[]).includes(f));
  const multi = byKind((f) => !(SINGLE_HOP_FAMILIES as readonly string[]).includes(f));
  Object.assign(metrics, sys1Metrics(sys1Stats(trajs, (id) => format.decode([id]))));
  if (cfg.mars.evalPurposeStripped && sys1 !== null) {
    // The purpose-stripped ablation: the same questions, System 1 prompted without System 2's purpose.
    const stripped = await rolloutBatch(
      { sys2: policy, sys1 },
      format,
      qs,
      { ...rolloutSettings(cfg, cfg.eval.temperature), stripPurpose: true },
      evalTokenRng(cfg),
    );
    metrics['purposeStripped.exactMatch'] = mean(stripped.map((t) => t.reward));
    Object.assign(
      metrics,
      sys1Metrics(
        sys1Stats(stripped, (id) => format.decode([id])),
        'purposeStripped.',
      ),
    );
  }
  if (single.length) metrics.singleHopExactMatch = mean(single.map((t) => t.reward));
  if (multi.length) metrics.multiHopExactMatch = mean(multi.map((t) => t.reward));
  for (const f of QUESTION_FAMILIES) {
    const ts = byKind((x) => x === f);
    if (!ts.length) continue;
    metrics[`exactMatch.${f}`] = mean(ts.map((t) => t.reward));
    metrics[`f1.${f}`] = mean(ts.map((t) => t.f1));
  }
  return {
    identity: marsEvalIdentity(cfg),
    metrics,
    // evaluation has no groups: advantages are 0 and nothing is balanced
    items: trajs.map((t) => ({
      id: t.question.id,
      correct: t.reward === 1,
      score: t.f1,
      output: t.answer ?? '',
      target: t.question.answers[0],
      record: trajectoryRecord(t, format, 0, [], []),
    })),
  };
}

/** The evaluation's token stream: by the world seed, and by eval.drawSeed when it is not 0 (0 keeps the old stream). */
function evalTokenRng(cfg: MarsConfig): Rng {
  const rng = new Rng(cfg.task.worldSeed).split('eval-tokens');
  return cfg.eval.drawSeed ? rng.split(`draws-${cfg.eval.drawSeed}`) : rng;
}

export function marsEvalIdentity(cfg: MarsConfig): EvalResult['identity'] {
  const m = cfg.mars;
  return {
    algorithm: 'mars',
    split: 'heldout',
    worldSeed: cfg.task.worldSeed,
    evalWorlds: cfg.task.evalWorlds,
    world: JSON.stringify(cfg.task.world),
    families: cfg.task.families.join(','),
    items: cfg.eval.items,
    // the held-out questions balanced over worlds within each family (issue 32, defect 2): other questions than the
    // world-after-world selection's whenever eval.items is less than the held-out worlds hold
    selection: 'worldsBalanced',
    temperature: cfg.eval.temperature,
    rollout: JSON.stringify({
      maxTurns: m.maxTurns,
      topK: m.topK,
      // Every System 1 mode (issue 32, defect 3): a frozen or separate System 1 is other weights than the policy's,
      // so 'on' alone let a checkpoint evaluated under one mode be served another mode's result.
      sys1: m.sys1Params,
      missingPurpose: m.missingPurpose,
      sepCost: m.sepCost,
      topP: cfg.sampler.topP,
      packing: m.packing,
      budgets: [
        m.sys1PromptMax,
        m.sys1ResponseMax,
        m.sys2PromptMax,
        m.sys2ResponseMax,
        m.sys2TurnMax,
        m.purposeMax,
        m.rawInfoBudget,
      ],
    }),
    // the ablation adds figures: a cached evaluation without them must not answer for one with them (left out when
    // off, so the identities of evaluations cached before the switch existed still match)
    ...(m.evalPurposeStripped ? { purposeStripped: true } : {}),
    ...(cfg.eval.drawSeed ? { drawSeed: cfg.eval.drawSeed } : {}),
  };
}

/**
 * The evaluation of a model loaded from a checkpoint (Algorithm.evaluate): System 1 is the policy itself, none
 * ('off'), or the weights a 'separate' or 'frozen' run's checkpoint carries beside it.
 */
export async function evaluateMarsCheckpoint(
  cfg: MarsConfig,
  model: LlamaModel,
  checkpointDir?: string,
): Promise<EvalResult> {
  const mode = cfg.mars.sys1Params;
  if (mode === 'off' || mode === 'oracle') return evaluateMars(cfg, model, null);
  // A checkpoint with no System 1 of its own (a base, a shared run's) evaluated as 'separate' or 'frozen': such a run
  // starts its System 1 from the policy's weights, so that is its System 1 at step 0 (issue 32, defect 3: this threw).
  if ((mode === 'separate' || mode === 'frozen') && checkpointDir && carriesSys1(checkpointDir)) {
    const sys1 = await sys1FromCheckpoint(checkpointDir, model.config);
    try {
      return await evaluateMars(cfg, model, sys1);
    } finally {
      sys1.dispose();
    }
  }
  return evaluateMars(cfg, model, model);
}
