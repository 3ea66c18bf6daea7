/**
 * What training and evaluation both make of MARS rollouts: the rollout settings a config gives, the per-episode
 * statistics both log, and the episode record (trajectories.jsonl, eval.json items) the inspector draws.
 */
import type { MarsEpisodeRecord } from '../records/mars';
import { RECORD_VERSION } from '../records/version';
import type { MarsConfig } from './configSchema';
import type { MarsFormat } from './format';
import type { MarsRolloutSettings, Trajectory } from './rollout';

export function rolloutSettings(cfg: MarsConfig, temperature = cfg.sampler.temperature): MarsRolloutSettings {
  const m = cfg.mars;
  return {
    maxTurns: m.maxTurns,
    topK: m.topK,
    sys1PromptMax: m.sys1PromptMax,
    sys1ResponseMax: m.sys1ResponseMax,
    sys2PromptMax: m.sys2PromptMax,
    sys2ResponseMax: m.sys2ResponseMax,
    sys2TurnMax: m.sys2TurnMax,
    purposeMax: m.purposeMax,
    sepCost: m.sepCost,
    rawInfoBudget: m.rawInfoBudget,
    packing: m.packing,
    sys1: m.sys1Params === 'off' || m.sys1Params === 'oracle' ? m.sys1Params : 'on',
    missingPurpose: m.missingPurpose,
    temperature,
    topP: cfg.sampler.topP,
  };
}

export const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Per-episode statistics shared by training metrics and evaluation. */
export function episodeStats(trajs: Trajectory[]) {
  // Searches that ran: a <search> on the last turn, where only an answer counts, runs none (issue 32, defect 1).
  const searches = trajs.map((t) => t.turns.filter((u) => u.searched).length);
  const calls = trajs.flatMap((t) => t.turns.filter((u) => u.results.length > 0).map((u) => u.sys1.length));
  return {
    reward: mean(trajs.map((t) => t.reward)),
    f1: mean(trajs.map((t) => t.f1)),
    answered: mean(trajs.map((t) => (t.end === 'answer' ? 1 : 0))),
    malformedTurns: mean(trajs.map((t) => t.turns.filter((u) => u.query === null && u.answer === null).length)),
    overflow: mean(trajs.map((t) => (t.end === 'overflow' ? 1 : 0))),
    searchesPerQuestion: mean(searches),
    sys1CallsPerSearch: mean(calls),
    sys2Tokens: mean(trajs.map((t) => t.lossMask.reduce((a, b) => a + b, 0))),
    sys1Tokens: mean(
      trajs.map((t) => t.turns.reduce((s, u) => s + u.sys1.reduce((a, c) => a + c.output.length, 0), 0)),
    ),
  };
}

export function trajectoryRecord(
  t: Trajectory,
  format: MarsFormat,
  a2: number,
  a1: number[],
  kept: number[],
): MarsEpisodeRecord {
  const tokenTexts = (ids: readonly number[]) => ids.map((id) => format.decode([id]));
  let j = 0;
  return {
    kind: 'mars.episode',
    version: RECORD_VERSION,
    questionId: t.question.id,
    family: t.question.family,
    question: t.question.text,
    gold: t.question.answers,
    turns: t.turns.map((u) => ({
      text: format.decode(u.tokens),
      // per generated token: its text and its log-probability under the behaviour policy (the inspector's token view)
      tokens: tokenTexts(u.tokens),
      logProbs: u.logProbs,
      query: u.query,
      purpose: u.purpose,
      results: u.results,
      capacity: u.capacity,
      bins: u.sys1.map((c) => {
        const rec = {
          pages: c.pages,
          used: c.used,
          output: format.decode(c.output),
          outputTokens: tokenTexts(c.output),
          outputLogProbs: c.logProbs,
          advantage: a1[j],
          kept: kept[j],
        };
        j++;
        return rec;
      }),
      info: format.decode(u.info),
    })),
    answer: t.answer,
    end: t.end,
    reward: t.reward,
    f1: t.f1,
    advantage: a2,
  };
}
