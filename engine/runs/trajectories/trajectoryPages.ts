/**
 * What the inspector shows of MARS episodes beyond their records, computed here so the window only draws it:
 *
 * The text of the pages a MARS episode's searches found (issue 19: "show the pages' text next to each System 1
 * window"). Episodes record only page ids and lengths; the pages are those of the question's world,
 * which is generated again from its seed (the `w<seed>:` of the question id) and the run's `task.world` settings,
 * exactly as the trainer generated it (engine/mars/trainer.ts worldEnv). The window receives the text; it computes
 * nothing of the world.
 *
 * Worlds are kept in a small cache (about 45 ms and a few hundred kB each).
 *
 * System 1's window capacity of each search, for records written before the trainer recorded it (`capacity`):
 * C = sys1PromptMax − 3 (template) − the purpose's tokens (the purpose System 2 wrote, or its query when it wrote none
 * and mars.missingPurpose is 'query'), capped at purposeMax (docs/algorithms.md §2.3). The purpose is counted in word
 * pre-tokens: System 2 can only write vocabulary words, each one token of the MARS tokenizer.
 */
import { normaliseWordText, pretokenise } from '../../model/tokenizers/wordNormalForm';
import { generateWorld, type World, type WorldSpec } from '../../mars/world';

export interface PageText {
  title: string;
  text: string;
}

const CACHE_MAX = 32;
const worlds = new Map<string, World>();

function worldOf(seed: number, spec: Partial<WorldSpec>): World {
  const key = `${seed}:${JSON.stringify(spec)}`;
  let w = worlds.get(key);
  if (w) {
    worlds.delete(key);
    worlds.set(key, w);
    return w;
  }
  w = generateWorld(seed, spec);
  worlds.set(key, w);
  if (worlds.size > CACHE_MAX) worlds.delete(worlds.keys().next().value!);
  return w;
}

/** The key of a page in a response's `pages`: `w<seed>:<page id>` (page ids are unique within one world only). */
export function pageKey(questionId: string, pageId: string): string | null {
  const m = /^w(\d+):/.exec(questionId);
  return m ? `w${m[1]}:${pageId}` : null;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The pages every MARS episode among `records` found, by pageKey; {} when there are none or the run is not a MARS run.
 * A world that cannot be generated (a config from another engine version) leaves its pages out.
 */
export function marsPagesOf(records: readonly unknown[], config: unknown): Record<string, PageText> {
  const out: Record<string, PageText> = {};
  const task = isRec(config) && isRec(config['task']) ? config['task'] : {};
  const spec = (isRec(task['world']) ? task['world'] : {}) as Partial<WorldSpec>;
  const wanted = new Map<number, Set<string>>();
  for (const r of records) {
    if (!isRec(r) || r['kind'] !== 'mars.episode' || typeof r['questionId'] !== 'string') continue;
    const m = /^w(\d+):/.exec(r['questionId']);
    if (!m) continue;
    const seed = Number(m[1]);
    const ids = wanted.get(seed) ?? new Set<string>();
    for (const t of Array.isArray(r['turns']) ? r['turns'] : []) {
      if (!isRec(t) || !Array.isArray(t['results'])) continue;
      for (const p of t['results']) if (isRec(p) && typeof p['id'] === 'string') ids.add(p['id']);
    }
    wanted.set(seed, ids);
  }
  for (const [seed, ids] of wanted) {
    if (ids.size === 0) continue;
    let world: World;
    try {
      world = worldOf(seed, spec);
    } catch {
      continue;
    }
    const byId = new Map(world.pages.map((p) => [p.id, p]));
    for (const id of ids) {
      const p = byId.get(id);
      if (p) out[`w${seed}:${id}`] = { title: p.title, text: p.text };
    }
  }
  return out;
}

/** MARS episodes with every search's `capacity` filled in where the record lacks the field; other records unchanged. */
export function withCapacities(records: readonly unknown[], config: unknown): unknown[] {
  const mars = isRec(config) && isRec(config['mars']) ? config['mars'] : {};
  const n = (v: unknown, d: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);
  const promptMax = n(mars['sys1PromptMax'], 256);
  const purposeMax = n(mars['purposeMax'], 24);
  const missing = mars['missingPurpose'] === 'empty' ? 'empty' : 'query';
  return records.map((r) => {
    if (!isRec(r) || r['kind'] !== 'mars.episode' || !Array.isArray(r['turns'])) return r;
    // a recorded capacity, null included (no pages found, or System 1 off: no window), is the trainer's and kept
    const keep = (t: unknown): boolean => !isRec(t) || 'capacity' in t || t['query'] === null;
    if (r['turns'].every(keep)) return r;
    return {
      ...r,
      turns: r['turns'].map((t: unknown) => {
        if (!isRec(t) || keep(t)) return t;
        const purpose =
          typeof t['purpose'] === 'string'
            ? t['purpose']
            : missing === 'query' && typeof t['query'] === 'string'
              ? t['query']
              : '';
        return {
          ...t,
          capacity: promptMax - 3 - Math.min(pretokenise(normaliseWordText(purpose, false)).length, purposeMax),
        };
      }),
    };
  });
}
