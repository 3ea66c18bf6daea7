/**
 * What a MARS config trains and evaluates on: the generated worlds (built once per seed and spec, with their search
 * indexes), their questions as rollouts take them, the training set and the fixed held-out evaluation set, and the one
 * format every world shares. The trainer, the evaluation and pretraining all draw from here, so they see the same worlds.
 */
import { UserError } from '../base/userError';
import type { MarsConfig } from './configSchema';
import { MarsFormat, marsTokenizer } from './format';
import type { RolloutQuestion } from './rollout';
import { SearchIndex } from './search';
import { supportSentences } from './sys1Measures';
import { marsVocabulary, generateWorld, type World } from './world';
import { evalWorldSeeds, trainWorldSeeds } from './worldSplits';

let cachedFormat: MarsFormat | null = null;
/** One tokenizer for every world: the vocabulary does not depend on the seed. */
export function marsFormat(): MarsFormat {
  return (cachedFormat ??= new MarsFormat(marsTokenizer(marsVocabulary())));
}

export interface WorldEnv {
  world: World;
  index: SearchIndex;
}

const worldCache = new Map<string, WorldEnv>();
function worldEnv(seed: number, spec: MarsConfig['task']['world']): WorldEnv {
  const key = `${seed}:${JSON.stringify(spec)}`;
  let env = worldCache.get(key);
  if (!env) {
    const world = generateWorld(seed, spec);
    env = { world, index: new SearchIndex(world.pages) };
    worldCache.set(key, env);
  }
  return env;
}

/** The training worlds of a config, with their search indexes. */
export function trainWorldEnvs(cfg: MarsConfig): WorldEnv[] {
  return trainWorldSeeds(cfg.task.worldSeed, cfg.task.trainWorlds).map((s) => worldEnv(s, cfg.task.world));
}

function questionsOf(envs: WorldEnv[], families: readonly string[]): RolloutQuestion[] {
  return envs.flatMap(({ world, index }) => {
    const pagesById = new Map(world.pages.map((p) => [p.id, p]));
    const names = new Map(world.entities.map((e) => [e.id, e.name]));
    return world.questions
      .filter((q) => families.includes(q.family))
      .map((q) => ({
        id: `w${world.seed}:${q.id}`,
        family: q.family,
        text: q.text,
        answers: q.answers,
        env: { search: (query: string, k: number) => index.search(query, k).map((p) => ({ id: p.id, text: p.text })) },
        supportSentences: supportSentences(q, pagesById, names).filter((x): x is string => x !== null),
      }));
  });
}

export function trainQuestions(cfg: MarsConfig): RolloutQuestion[] {
  return questionsOf(trainWorldEnvs(cfg), cfg.task.families);
}

/** The lists' first items in list order, then their second items, …: a round robin that skips lists run dry. */
function interleave<T>(lists: readonly (readonly T[])[]): T[] {
  const out: T[] = [];
  for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
  return out;
}

/** Every question of the config's families in each held-out world, world by world. */
export function heldOutQuestionsByWorld(cfg: MarsConfig): RolloutQuestion[][] {
  return evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds).map((s) =>
    questionsOf([worldEnv(s, cfg.task.world)], cfg.task.families),
  );
}

/**
 * The fixed evaluation set: exactly eval.items questions of the held-out worlds, balanced over worlds within each
 * family and round-robin over families, so every family is represented from every world (deterministic). Fewer
 * held-out questions than eval.items is an error naming both fields, never a smaller evaluation under the same identity.
 */
export function evalQuestions(cfg: MarsConfig): RolloutQuestion[] {
  const perWorld = heldOutQuestionsByWorld(cfg);
  const total = perWorld.reduce((n, qs) => n + qs.length, 0);
  const want = cfg.eval.items;
  if (total < want) {
    throw new UserError(
      `eval.items: ${want} held-out questions asked, but the ${cfg.task.evalWorlds} held-out world(s) of task.evalWorlds have ${total} questions of the families ${cfg.task.families.join(', ')}; set eval.items to at most ${total}, or raise task.evalWorlds`,
    );
  }
  // Each family's questions round-robin over the held-out worlds (every world's first, then their seconds, …), then
  // the families round-robin: every family is drawn from every world, each world within one question of the others
  // per family. Taking the worlds' questions one world after another instead (before issue 32, defect 2) drew 384
  // questions 179/144/25/19/10/7 over 6 worlds, and four families from the first two worlds only.
  const byFamily = cfg.task.families.map((f) => interleave(perWorld.map((qs) => qs.filter((q) => q.family === f))));
  return interleave(byFamily).slice(0, want);
}
