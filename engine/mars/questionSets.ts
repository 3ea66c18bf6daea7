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

/**
 * The fixed evaluation set: exactly eval.items questions of the held-out worlds, round-robin over families so every
 * family is represented (deterministic). Fewer held-out questions than eval.items is an error naming both fields,
 * never a smaller evaluation under the same identity.
 */
export function evalQuestions(cfg: MarsConfig): RolloutQuestion[] {
  const all = questionsOf(
    evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds).map((s) => worldEnv(s, cfg.task.world)),
    cfg.task.families,
  );
  const want = cfg.eval.items;
  if (all.length < want) {
    throw new UserError(
      `eval.items: ${want} held-out questions asked, but the ${cfg.task.evalWorlds} held-out world(s) of task.evalWorlds have ${all.length} questions of the families ${cfg.task.families.join(', ')}; set eval.items to at most ${all.length}, or raise task.evalWorlds`,
    );
  }
  const byFamily = cfg.task.families.map((f) => all.filter((q) => q.family === f));
  const out: RolloutQuestion[] = [];
  for (let i = 0; out.length < want && byFamily.some((qs) => i < qs.length); i++) {
    for (const qs of byFamily) if (i < qs.length && out.length < want) out.push(qs[i]!);
  }
  return out;
}
