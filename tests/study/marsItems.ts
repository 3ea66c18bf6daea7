/**
 * Per-question outcomes of a MARS held-out evaluation, for the studies' clustered and paired statistics (issue 17):
 * each question's exact match and F1, the world it belongs to, and a chance baseline.
 *
 * World (the cluster for standard errors): the generated world the question was asked about (its id starts with
 * `w<world seed>:`). Questions of one world share its entities, pages and search index, so they succeed or fail
 * together more than questions of different worlds.
 *
 * Chance: an answer guessed without searching, but knowing the world's lists of names: a comparison question names its
 * two candidates, so 1/2; any other question's answer is drawn from the world's entities of the gold answer's type
 * (or, for a year, from the world's distinct years), so 1 / (how many there are). This is generous to chance (a policy
 * that has not searched does not know the lists), so "beats chance" is a conservative claim.
 */
import type { EvalItem } from '../../engine/records/evaluation';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { generateWorld } from '../../engine/mars/world';
import { evalWorldSeeds } from '../../engine/mars/worldSplits';

/** The world of a held-out question id (`w<seed>:<family>-<n>` → `w<seed>`). */
export function marsWorld(id: string): string {
  const i = id.indexOf(':');
  if (i <= 0) throw new Error(`marsWorld: ${id} is not a held-out question id (w<seed>:<family>-<n>)`);
  return id.slice(0, i);
}

/** Per held-out question id: the chance of a guess being an exact match (see the file's comment). */
export function marsChance(cfg: MarsConfig): Map<string, number> {
  const out = new Map<string, number>();
  for (const seed of evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds)) {
    const world = generateWorld(seed, cfg.task.world);
    const byName = new Map(world.entities.map((e) => [e.name, e]));
    const years = new Set(world.facts.map((f) => f.object).filter((o) => /^\d{4}$/.test(o)));
    for (const q of world.questions) {
      const gold = byName.get(q.answers[0] ?? '');
      const candidates =
        q.family === 'comparison'
          ? 2
          : gold
            ? world.entities.filter((e) => e.type === gold.type).length
            : Math.max(1, years.size);
      out.set(`w${world.seed}:${q.id}`, 1 / candidates);
    }
  }
  return out;
}

/** An evaluation's per-question figures, in its order: exact match (0/1) and F1. */
export function marsItemScores(items: readonly EvalItem[]): { exactMatch: number[]; f1: number[] } {
  return { exactMatch: items.map((x) => (x.correct ? 1 : 0)), f1: items.map((x) => x.score) };
}
